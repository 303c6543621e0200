package pool

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// model is the plain reference a Core is checked against: lists and counts, no cleverness.
type model struct {
	lim     Limits
	idle    []modelRes // the top last
	lent    []modelRes
	making  int
	closed  bool
	nextID  int
	rested  map[int]int64
	outside map[int]bool // handed back to the caller to close
}

type modelRes struct {
	id   int
	born int64
}

func (m *model) live() int { return len(m.idle) + len(m.lent) + m.making }

func (m *model) stale(now int64, r modelRes) bool {
	age := func(since int64, limit time.Duration) bool {
		return limit > 0 && now > since && now-since > int64(limit)
	}
	return age(m.rested[r.id], m.lim.Keep) || age(r.born, m.lim.Life)
}

func (m *model) take(now int64) Taken[int] {
	switch {
	case m.closed:
		return Taken[int]{Kind: Shed}
	case len(m.idle) > 0:
		r := m.idle[len(m.idle)-1]
		m.idle = m.idle[:len(m.idle)-1]
		if m.stale(now, r) {
			return Taken[int]{Kind: Stale, Item: r.id}
		}
		m.lent = append(m.lent, r)
		return Taken[int]{Kind: Ready, Item: r.id}
	case m.live() >= m.lim.Size:
		return Taken[int]{Kind: Wait}
	}
	m.making++
	return Taken[int]{Kind: Make}
}

func (m *model) lentIndex(id int) int {
	return slices.IndexFunc(m.lent, func(r modelRes) bool { return r.id == id })
}

func (m *model) give(id int, now int64) bool {
	if slices.ContainsFunc(m.idle, func(r modelRes) bool { return r.id == id }) {
		return true
	}
	i := m.lentIndex(id)
	if i < 0 {
		return false
	}
	r := m.lent[i]
	m.lent = slices.Delete(m.lent, i, i+1)
	if m.closed || len(m.idle) >= m.lim.Idle || (m.lim.Life > 0 && now > r.born && now-r.born > int64(m.lim.Life)) {
		return false
	}
	m.rested[id] = now
	m.idle = append(m.idle, r)
	return true
}

// giveNew is a give of a resource made after a Make without Made.
func (m *model) giveNew(id int, now int64) bool {
	if m.making == 0 {
		return false
	}
	m.making--
	if m.closed {
		return false
	}
	m.lent = append(m.lent, modelRes{id: id, born: now})
	return m.give(id, now)
}

// checker drives a Core, a Core with a ward whose parts never refuse, and the model through the
// same operations, and checks after every step that they agree and that nothing is lost or
// closed twice.
type checker struct {
	t      testing.TB
	c, w   *Core[int]
	m      *model
	now    int64
	closed map[int]int // how many times the caller closed each id
	made   []int
}

// permissive is a ward whose parts never refuse.
type permissive struct{}

func (permissive) Allow(int64, float64) bool                       { return true }
func (permissive) Record(int64, bool)                              {}
func (permissive) Ratio(int64) float64                             { return 0 }
func (permissive) Wait(int64) time.Duration                        { return 0 }
func (permissive) Take(int64)                                      {}
func (permissive) Delay(int, float64, time.Duration) time.Duration { return 0 }
func (permissive) Lend(int64) (int, bool)                          { return 0, true }
func (permissive) Return(int, int64, bool)                         {}

func newChecker(t testing.TB, l Limits) *checker {
	c, err := NewCore[int](l, Ward{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	p := permissive{}
	w, _ := NewCore[int](l, Ward{Breaker: p, Bucket: p, Backoff: p, Shedder: p}, 0)
	return &checker{t: t, c: c, w: w, m: &model{lim: l, rested: map[int]int64{}, outside: map[int]bool{}}, closed: map[int]int{}}
}

func (k *checker) close(ids ...int) {
	for _, id := range ids {
		k.closed[id]++
		if k.closed[id] > 1 {
			k.t.Fatalf("at %d: resource %d handed back to close twice", k.now, id)
		}
	}
}

// step performs operation op (a byte: the low bits choose it, the rest its argument).
func (k *checker) step(op byte) {
	m := k.m
	switch op % 8 {
	case 0, 1: // take
		want := m.take(k.now)
		got, gotW := k.c.Take(k.now, 0.5), k.w.Take(k.now, 0.5)
		if got != want || gotW != want {
			k.t.Fatalf("at %d: Take = %+v, with an empty ward %+v, model %+v", k.now, got, gotW, want)
		}
		if got.Kind == Stale {
			k.close(got.Item)
		}
	case 2: // made
		m.nextID++
		id := m.nextID
		want := m.making > 0 && !m.closed
		if m.making > 0 {
			m.making--
			if want {
				m.lent = append(m.lent, modelRes{id: id, born: k.now})
			}
		}
		got, gotW := k.c.Made(id, k.now), k.w.Made(id, k.now)
		if got != want || gotW != want {
			k.t.Fatalf("at %d: Made(%d) = %v, %v, model %v", k.now, id, got, gotW, want)
		}
		k.made = append(k.made, id)
		if !got {
			k.close(id)
		}
	case 3: // unmade
		if m.making > 0 {
			m.making--
		}
		k.c.Unmade(k.now, 0.5)
		k.w.Unmade(k.now, 0.5)
	case 4: // give one lent, one idle again, or one the caller made without Made
		var id int
		fresh := false
		switch {
		case len(m.lent) > 0 && op>>3%4 != 0:
			id = m.lent[int(op>>5)%len(m.lent)].id
		case len(m.idle) > 0 && op>>3%4 == 0:
			id = m.idle[int(op>>5)%len(m.idle)].id
		default:
			m.nextID++
			id, fresh = m.nextID, true
			k.made = append(k.made, id)
		}
		wasLent := m.lentIndex(id) >= 0
		var want bool
		if fresh {
			want = m.giveNew(id, k.now)
		} else {
			want = m.give(id, k.now)
		}
		got, gotW := k.c.Give(id, k.now), k.w.Give(id, k.now)
		if got != want || gotW != want {
			k.t.Fatalf("at %d: Give(%d) = %v, %v, model %v", k.now, id, got, gotW, want)
		}
		if !got && (wasLent || fresh) {
			k.close(id)
		}
	case 5: // drop one lent
		if len(m.lent) == 0 {
			return
		}
		i := int(op>>3) % len(m.lent)
		id := m.lent[i].id
		m.lent = slices.Delete(m.lent, i, i+1)
		k.c.Drop(id, k.now)
		k.w.Drop(id, k.now)
		k.close(id)
	case 6: // evict, or close one time in eight
		if op>>3%8 == 0 {
			m.closed = true
			var want []int
			for _, r := range m.idle {
				want = append(want, r.id)
			}
			m.idle = nil
			got, gotW := k.c.Close(), k.w.Close()
			if !slices.Equal(got, want) || !slices.Equal(gotW, want) {
				k.t.Fatalf("at %d: Close = %v, %v, model %v", k.now, got, gotW, want)
			}
			k.close(got...)
			return
		}
		var want []int
		kept := m.idle[:0]
		for _, r := range m.idle {
			if m.stale(k.now, r) {
				want = append(want, r.id)
			} else {
				kept = append(kept, r)
			}
		}
		m.idle = kept
		got, gotW := k.c.Evict(k.now), k.w.Evict(k.now)
		if !slices.Equal(got, want) || !slices.Equal(gotW, want) {
			k.t.Fatalf("at %d: Evict = %v, %v, model %v", k.now, got, gotW, want)
		}
		k.close(got...)
	case 7: // time passes: up to 31 quarter-seconds
		k.now += int64(op>>3) * int64(time.Second) / 4
	}
	k.invariants()
}

func (k *checker) invariants() {
	m := k.m
	for _, c := range []*Core[int]{k.c, k.w} {
		if c.Live() > m.lim.Size || c.Idle() > m.lim.Idle {
			k.t.Fatalf("at %d: Live %d Idle %d over limits %+v", k.now, c.Live(), c.Idle(), m.lim)
		}
		if c.Live() != m.live() || c.Idle() != len(m.idle) || c.Busy() != len(m.lent)+m.making {
			k.t.Fatalf("at %d: Live/Idle/Busy %d/%d/%d, model %d/%d/%d", k.now, c.Live(), c.Idle(), c.Busy(), m.live(), len(m.idle), len(m.lent)+m.making)
		}
	}
	// Every resource made is exactly one of idle, lent, or handed back once for closing.
	for _, id := range k.made {
		where := k.closed[id]
		if slices.ContainsFunc(m.idle, func(r modelRes) bool { return r.id == id }) {
			where++
		}
		if m.lentIndex(id) >= 0 {
			where++
		}
		if where != 1 {
			k.t.Fatalf("at %d: resource %d is in %d places (idle, lent, closed)", k.now, id, where)
		}
	}
}

// finish gives every lent resource back after closing and checks each was closed exactly once.
func (k *checker) finish() {
	k.step(6) // op>>3 == 0: close
	for len(k.m.lent) > 0 {
		k.step(4 | 1<<3)
	}
	for _, id := range k.made {
		if k.closed[id] != 1 {
			k.t.Fatalf("resource %d closed %d times after Close and every give", id, k.closed[id])
		}
	}
}

func checkOps(t testing.TB, l Limits, ops []byte) {
	k := newChecker(t, l)
	for _, op := range ops {
		k.step(op)
	}
	k.finish()
}

func TestModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		size := 1 + r.IntN(6)
		l := limits(size, r.IntN(size+1), time.Duration(r.IntN(4))*time.Second, time.Duration(r.IntN(6))*time.Second)
		ops := make([]byte, r.IntN(200))
		for j := range ops {
			ops[j] = byte(r.Uint32())
		}
		t.Run("", func(t *testing.T) {
			if i%500 == 0 {
				t.Logf("limits %+v, %d ops", l, len(ops))
			}
			checkOps(t, l, ops)
		})
	}
}

func FuzzCore(f *testing.F) {
	f.Add(uint8(3), uint8(2), uint8(1), uint8(3), []byte{0, 2, 0, 2, 4, 4, 7 | 8<<3, 0, 1, 6})
	f.Add(uint8(1), uint8(0), uint8(0), uint8(0), []byte{0, 3, 0, 2, 5, 0, 2, 4})
	f.Fuzz(func(t *testing.T, size, idle, keep, life uint8, ops []byte) {
		s := 1 + int(size%8)
		checkOps(t, limits(s, int(idle)%(s+1), time.Duration(keep%8)*time.Second, time.Duration(life%8)*time.Second), ops)
	})
}
