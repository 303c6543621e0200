package pool

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/wardgo/ward"
)

const sec = int64(time.Second)

// step is one call on a Core and what it should answer, with the counts after it: "answer |
// live idle busy".
type step struct {
	now  int64
	op   string // take, made X, unmade, give X, drop X, evict, close
	roll float64
	want string
}

func run(t *testing.T, c *Core[string], steps []step) {
	t.Helper()
	for i, s := range steps {
		got := apply(c, s) + fmt.Sprintf(" | %d %d %d", c.Live(), c.Idle(), c.Busy())
		if got != s.want {
			t.Fatalf("step %d: %s at %v = %q, want %q", i, s.op, time.Duration(s.now), got, s.want)
		}
	}
}

func apply(c *Core[string], s step) string {
	op, item, _ := strings.Cut(s.op, " ")
	switch op {
	case "take":
		return takenString(c.Take(s.now, s.roll))
	case "made":
		return fmt.Sprint(c.Made(item, s.now))
	case "unmade":
		c.Unmade(s.now, s.roll)
		return "-"
	case "give":
		return fmt.Sprint(c.Give(item, s.now))
	case "drop":
		c.Drop(item, s.now)
		return "-"
	case "evict":
		return fmt.Sprint(c.Evict(s.now))
	case "close":
		return fmt.Sprint(c.Close())
	}
	panic("unknown op " + op)
}

func takenString(t Taken[string]) string {
	switch t.Kind {
	case Ready, Stale:
		return t.Kind.String() + " " + t.Item
	case Later:
		return "Later " + t.Wait.String()
	}
	return t.Kind.String()
}

func newCore(t *testing.T, l Limits, w Ward) *Core[string] {
	t.Helper()
	c, err := NewCore[string](l, w, 0)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func limits(size, idle int, keep, life time.Duration) Limits {
	return Limits{Size: size, Idle: idle, Keep: keep, Life: life}
}

func TestDefaultLimits(t *testing.T) {
	if got, want := DefaultLimits(), limits(10, 10, 30*time.Minute, 0); got != want {
		t.Fatalf("DefaultLimits() = %+v, want %+v", got, want)
	}
}

func TestLimitsValidate(t *testing.T) {
	for _, tc := range []struct {
		l     Limits
		field string
	}{
		{limits(0, 0, 0, 0), "Limits.Size"},
		{limits(-1, 0, 0, 0), "Limits.Size"},
		{limits(2, 3, 0, 0), "Limits.Idle"},
		{limits(2, -1, 0, 0), "Limits.Idle"},
		{limits(2, 2, -1, 0), "Limits.Keep"},
		{limits(2, 2, 0, -1), "Limits.Life"},
	} {
		_, err := NewCore[string](tc.l, Ward{}, 0)
		if !errors.Is(err, ErrInvalid) || !errors.Is(err, ward.ErrInvalid) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("NewCore(%+v) = %v, want an ErrInvalid naming %s", tc.l, err, tc.field)
		}
	}
	if _, err := NewCore[string](limits(MaxSize, 0, 0, 0), Ward{}, 0); err != nil {
		t.Errorf("NewCore(Size MaxSize, Idle 0) = %v", err)
	}
}

// Ready hands out the most recently given back first.
func TestTraceLIFO(t *testing.T) {
	c := newCore(t, limits(3, 3, 0, 0), Ward{})
	run(t, c, []step{
		{0, "take", 0, "Make | 1 0 1"},
		{0, "made a", 0, "true | 1 0 1"},
		{0, "take", 0, "Make | 2 0 2"},
		{0, "made b", 0, "true | 2 0 2"},
		{0, "take", 0, "Make | 3 0 3"},
		{0, "made c", 0, "true | 3 0 3"},
		{0, "take", 0, "Wait | 3 0 3"},
		{1, "give a", 0, "true | 3 1 2"},
		{2, "give c", 0, "true | 3 2 1"},
		{3, "give b", 0, "true | 3 3 0"},
		{4, "take", 0, "Ready b | 3 2 1"},
		{4, "take", 0, "Ready c | 3 1 2"},
		{5, "give c", 0, "true | 3 2 1"},
		{5, "take", 0, "Ready c | 3 1 2"},
		{5, "take", 0, "Ready a | 3 0 3"},
		{5, "take", 0, "Wait | 3 0 3"},
	})
}

// Stale comes from Take whether or not Evict has run, already out of the pool and its count.
func TestTraceStaleOnTake(t *testing.T) {
	c := newCore(t, limits(2, 2, time.Second, 0), Ward{})
	run(t, c, []step{
		{0, "take", 0, "Make | 1 0 1"},
		{0, "made a", 0, "true | 1 0 1"},
		{0, "give a", 0, "true | 1 1 0"},
		{sec, "take", 0, "Ready a | 1 0 1"}, // exactly Keep: not past it
		{sec, "give a", 0, "true | 1 1 0"},
		{2*sec + 1, "take", 0, "Stale a | 0 0 0"},
		{2*sec + 1, "take", 0, "Make | 1 0 1"},
		{2*sec + 1, "made b", 0, "true | 1 0 1"},
		{2*sec + 1, "give a", 0, "false | 1 0 1"}, // a is gone: unknown, no Make outstanding
	})
}

// Give does not reset a resource's birth, so Life retires one that has been reused all along.
func TestTraceBirthKeptAcrossLoans(t *testing.T) {
	c := newCore(t, limits(2, 2, time.Second, 10*time.Second), Ward{})
	run(t, c, []step{
		{0, "take", 0, "Make | 1 0 1"},
		{0, "made a", 0, "true | 1 0 1"},
		{3 * sec, "give a", 0, "true | 1 1 0"},
		{3 * sec, "take", 0, "Ready a | 1 0 1"},
		{6 * sec, "give a", 0, "true | 1 1 0"},
		{6 * sec, "take", 0, "Ready a | 1 0 1"},
		{9 * sec, "give a", 0, "true | 1 1 0"},
		{10 * sec, "take", 0, "Ready a | 1 0 1"}, // exactly Life: not past it
		{10 * sec, "give a", 0, "true | 1 1 0"},
		{10*sec + 1, "take", 0, "Stale a | 0 0 0"}, // rested 1 ns, but lived past Life
	})
	// Given back past Life, it is not kept.
	c = newCore(t, limits(2, 2, 0, 10*time.Second), Ward{})
	run(t, c, []step{
		{0, "take", 0, "Make | 1 0 1"},
		{0, "made a", 0, "true | 1 0 1"},
		{11 * sec, "give a", 0, "false | 0 0 0"},
	})
}

// Give answers false when Idle already sit idle.
func TestTraceIdleCap(t *testing.T) {
	c := newCore(t, limits(3, 1, 0, 0), Ward{})
	run(t, c, []step{
		{0, "take", 0, "Make | 1 0 1"},
		{0, "made a", 0, "true | 1 0 1"},
		{0, "take", 0, "Make | 2 0 2"},
		{0, "made b", 0, "true | 2 0 2"},
		{1, "give a", 0, "true | 2 1 1"},
		{1, "give b", 0, "false | 1 1 0"},
		{1, "give a", 0, "true | 1 1 0"}, // already idle: kept as it is
	})
	c = newCore(t, limits(1, 0, 0, 0), Ward{})
	run(t, c, []step{
		{0, "take", 0, "Make | 1 0 1"},
		{0, "made a", 0, "true | 1 0 1"},
		{1, "give a", 0, "false | 0 0 0"},
	})
}

// Drop keeps the live count honest; an unknown give fills a reservation; Made needs one.
func TestTraceDropAndReservations(t *testing.T) {
	c := newCore(t, limits(2, 2, 0, 0), Ward{})
	run(t, c, []step{
		{0, "made x", 0, "false | 0 0 0"}, // no Make outstanding
		{0, "take", 0, "Make | 1 0 1"},
		{0, "made a", 0, "true | 1 0 1"},
		{0, "made a", 0, "false | 1 0 1"}, // known
		{0, "take", 0, "Make | 2 0 2"},
		{0, "take", 0, "Wait | 2 0 2"},
		{1, "give b", 0, "true | 2 1 1"}, // made without Made: fills the reservation
		{2, "drop a", 0, "- | 1 1 0"},
		{2, "drop a", 0, "- | 1 1 0"}, // not lent: ignored
		{2, "drop b", 0, "- | 1 1 0"}, // idle: ignored
		{3, "take", 0, "Ready b | 1 0 1"},
		{3, "take", 0, "Make | 2 0 2"},
		{3, "unmade", 0, "- | 1 0 1"},
		{3, "unmade", 0, "- | 1 0 1"}, // none outstanding
	})
}

func TestTraceEvictAndClose(t *testing.T) {
	c := newCore(t, limits(4, 4, 2*time.Second, 0), Ward{})
	run(t, c, []step{
		{0, "take", 0, "Make | 1 0 1"},
		{0, "made a", 0, "true | 1 0 1"},
		{0, "take", 0, "Make | 2 0 2"},
		{0, "made b", 0, "true | 2 0 2"},
		{0, "take", 0, "Make | 3 0 3"},
		{0, "made c", 0, "true | 3 0 3"},
		{0, "give a", 0, "true | 3 1 2"},
		{sec, "give b", 0, "true | 3 2 1"},
		{2 * sec, "evict", 0, "[] | 3 2 1"},
		{3 * sec, "evict", 0, "[a] | 2 1 1"},
		{3 * sec, "close", 0, "[b] | 1 0 1"},
		{3 * sec, "close", 0, "[] | 1 0 1"},
		{4 * sec, "take", 0, "Shed | 1 0 1"},
		{4 * sec, "give c", 0, "false | 0 0 0"},
	})
}

// A clock that goes backwards ages nothing and never panics.
func TestTraceClockBackwards(t *testing.T) {
	c := newCore(t, limits(2, 2, time.Second, time.Second), Ward{})
	run(t, c, []step{
		{10 * sec, "take", 0, "Make | 1 0 1"},
		{10 * sec, "made a", 0, "true | 1 0 1"},
		{10 * sec, "give a", 0, "true | 1 1 0"},
		{0, "take", 0, "Ready a | 1 0 1"},
		{math.MinInt64, "give a", 0, "true | 1 1 0"},
		{math.MaxInt64, "take", 0, "Stale a | 0 0 0"},
	})
}

// fakeBreaker refuses while open is set and records what it is told.
type fakeBreaker struct {
	open    bool
	records []bool
}

func (b *fakeBreaker) Allow(now int64, roll float64) bool { return !b.open }
func (b *fakeBreaker) Record(now int64, ok bool)          { b.records = append(b.records, ok) }
func (b *fakeBreaker) Ratio(now int64) float64 {
	if b.open {
		return 1
	}
	return 0
}

// fakeBucket has one token every interval, starting full.
type fakeBucket struct{ next, interval int64 }

func (b *fakeBucket) Wait(now int64) time.Duration {
	if now >= b.next {
		return 0
	}
	return time.Duration(b.next - now)
}
func (b *fakeBucket) Take(now int64) { b.next = now + b.interval }

// fakeBackoff waits failures × 100 ms, plus roll × 10 ms.
type fakeBackoff struct{}

func (fakeBackoff) Delay(failures int, roll float64, previous time.Duration) time.Duration {
	return time.Duration(failures)*100*time.Millisecond + time.Duration(roll*float64(10*time.Millisecond))
}

// fakeShedder refuses while hot and counts loans out.
type fakeShedder struct {
	hot      bool
	out      int
	returned []bool
}

func (s *fakeShedder) Lend(now int64) (int, bool) {
	if s.hot {
		return 0, false
	}
	s.out++
	return s.out, true
}
func (s *fakeShedder) Return(loan int, now int64, ok bool) {
	s.out--
	s.returned = append(s.returned, ok)
}

func TestTraceWardBreaker(t *testing.T) {
	b := &fakeBreaker{}
	c := newCore(t, limits(2, 2, 0, 0), Ward{Breaker: b})
	run(t, c, []step{
		{0, "take", 0, "Make | 1 0 1"},
		{0, "unmade", 0, "- | 0 0 0"},
		{0, "take", 0, "Make | 1 0 1"},
		{0, "made a", 0, "true | 1 0 1"},
	})
	b.open = true
	if got := c.Refusal(0); got != 1 {
		t.Fatalf("Refusal = %v, want the breaker's ratio 1", got)
	}
	run(t, c, []step{
		{1, "take", 0, "Shed | 1 0 1"}, // a new connection is refused
		{1, "give a", 0, "true | 1 1 0"},
		{1, "take", 0, "Ready a | 1 0 1"}, // lending an idle one is not a new connection
	})
	if fmt.Sprint(b.records) != "[false true]" {
		t.Fatalf("breaker records = %v, want [false true]", b.records)
	}
}

func TestTraceWardBucket(t *testing.T) {
	c := newCore(t, limits(3, 3, 0, 0), Ward{Bucket: &fakeBucket{interval: sec}})
	run(t, c, []step{
		{0, "take", 0, "Make | 1 0 1"},
		{0, "made a", 0, "true | 1 0 1"},
		{sec / 4, "take", 0, "Later 750ms | 1 0 1"},
		{sec / 4, "give a", 0, "true | 1 1 0"},
		{sec / 2, "take", 0, "Ready a | 1 0 1"}, // idle ones are lent regardless
		{sec, "take", 0, "Make | 2 0 2"},
	})
}

func TestTraceWardBackoff(t *testing.T) {
	c := newCore(t, limits(3, 3, 0, 0), Ward{Backoff: fakeBackoff{}})
	run(t, c, []step{
		{0, "take", 0, "Make | 1 0 1"},
		{0, "unmade", 0.5, "- | 0 0 0"},
		{0, "take", 0, "Later 105ms | 0 0 0"},
		{105 * int64(time.Millisecond), "take", 0, "Make | 1 0 1"},
		{105 * int64(time.Millisecond), "unmade", 0, "- | 0 0 0"}, // second in a row: 200 ms
		{205 * int64(time.Millisecond), "take", 0, "Later 100ms | 0 0 0"},
		{305 * int64(time.Millisecond), "take", 0, "Make | 1 0 1"},
		{305 * int64(time.Millisecond), "made a", 0, "true | 1 0 1"}, // resets the count
		{305 * int64(time.Millisecond), "take", 0, "Make | 2 0 2"},
		{305 * int64(time.Millisecond), "unmade", 0, "- | 1 0 1"},
		{305 * int64(time.Millisecond), "take", 0, "Later 100ms | 1 0 1"},
	})
}

func TestTraceWardShedder(t *testing.T) {
	s := &fakeShedder{}
	c := newCore(t, limits(3, 3, 0, 0), Ward{Shedder: s})
	run(t, c, []step{
		{0, "take", 0, "Make | 1 0 1"},
		{0, "made a", 0, "true | 1 0 1"},
		{0, "give a", 0, "true | 1 1 0"},
	})
	s.hot = true
	run(t, c, []step{
		{1, "take", 0, "Shed | 1 1 0"}, // no lending, idle or new
	})
	s.hot = false
	run(t, c, []step{
		{2, "take", 0, "Ready a | 1 0 1"},
		{2, "drop a", 0, "- | 0 0 0"},
		{2, "take", 0, "Make | 1 0 1"},
		{2, "unmade", 0, "- | 0 0 0"},
	})
	if s.out != 0 || fmt.Sprint(s.returned) != "[true false false]" {
		t.Fatalf("shedder: %d loans out, returned %v; want 0 and [true false false]", s.out, s.returned)
	}
}

func TestPick(t *testing.T) {
	for _, tc := range []struct {
		refusal       []float64
		busy          []int
		first, second float64
		want          int
	}{
		{nil, nil, 0, 0, -1},
		{[]float64{0.5}, []int{3}, 0.9, 0.9, 0},
		{[]float64{0.5, 0.1}, []int{0, 9}, 0, 0, 1},             // refuses less wins over busy
		{[]float64{0.1, 0.1}, []int{5, 2}, 0, 0, 1},             // then fewer in use
		{[]float64{0.1, 0.1}, []int{2, 2}, 0.9, 0, 1},           // then the first drawn
		{[]float64{0, 0, 0, 0}, []int{4, 3, 2, 1}, 0.3, 0.4, 2}, // 1 and 2 drawn: 2 is less busy
		{[]float64{0, 0, 0}, []int{0, 0, 0}, 0.5, 0.5, 1},
		{[]float64{math.NaN(), 0.9}, []int{0, 9}, 0, 0, 1}, // NaN loses
		{[]float64{0, 0}, []int{1, 0}, math.NaN(), 2, 1},   // draws held into [0, 1)
		{[]float64{0, 0, 0}, []int{1}, 0.9, 0.9, 0},        // only pools both slices describe
	} {
		if got := Pick(tc.refusal, tc.busy, tc.first, tc.second); got != tc.want {
			t.Errorf("Pick(%v, %v, %v, %v) = %d, want %d", tc.refusal, tc.busy, tc.first, tc.second, got, tc.want)
		}
	}
}

func TestCoreAllocs(t *testing.T) {
	c := newCore(t, DefaultLimits(), Ward{})
	c.Take(0, 0)
	c.Made("a", 0)
	c.Give("a", 0)
	var now int64
	if n := testing.AllocsPerRun(1000, func() {
		now++
		tk := c.Take(now, 0.5)
		c.Give(tk.Item, now)
	}); n != 0 {
		t.Fatalf("Take+Give allocates %v times, want 0", n)
	}
}
