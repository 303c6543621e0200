package shed

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wardgo/ward"
	"github.com/wardgo/ward/internal/clock"
)

// differential drives a Core and a Shedder (refresh on every call, every call timed) with the
// same steps decoded from data: (time step, action, cpu). Decisions, flight and capacity match.
func differential(t *testing.T, data []byte) {
	t.Helper()
	now := int64(0)
	cpu := 0
	p := DefaultPolicy()
	core, _ := NewCore(p, now)
	s, _ := New(WithClock(func() int64 { return now }), WithCPU(func() int { return cpu }), WithRefresh(0), WithSampleEvery(1))
	var ct []Ticket
	var sp []Promise
	for i := 0; i+2 < len(data); i += 3 {
		now += (int64(data[i]) - 16) * int64(10*time.Millisecond) // sometimes backwards
		cpu = int(data[i+2]) * 4                                  // 0-1020
		switch a := data[i+1] % 5; {
		case a <= 1 || len(ct) == 0:
			tk, want := core.Allow(now, cpu)
			pr, err := s.Allow()
			if got := err == nil; got != want {
				t.Fatalf("step %d at %d cpu %d: shedder admitted %v, core %v (flying %d, avg %v, capacity %v)",
					i/3, now, cpu, got, want, core.InFlight(), core.Average(), core.Capacity(now))
			}
			if want {
				ct, sp = append(ct, tk), append(sp, pr)
			}
		default:
			k := int(data[i]) % len(ct)
			switch a {
			case 2:
				ct[k].Pass(now)
				sp[k].Pass()
			case 3:
				ct[k].Fail()
				sp[k].Fail()
			default:
				ct[k].Ignore()
				sp[k].Ignore()
			}
			ct, sp = append(ct[:k], ct[k+1:]...), append(sp[:k], sp[k+1:]...)
		}
		if s.inFlight.load() != core.InFlight() || math.Float64frombits(s.avg.Load()) != core.Average() {
			t.Fatalf("step %d: shedder flying %d avg %v, core %d %v", i/3, s.inFlight.load(), math.Float64frombits(s.avg.Load()), core.InFlight(), core.Average())
		}
		if g, w := s.capacityAt(now), core.Capacity(now); g != w {
			t.Fatalf("step %d: capacity %v, core %v", i/3, g, w)
		}
	}
}

func FuzzShedderMatchesCore(f *testing.F) {
	f.Add([]byte{17, 0, 250, 17, 0, 250, 18, 2, 250, 17, 0, 230, 17, 0, 240, 30, 3, 100})
	f.Fuzz(func(t *testing.T, data []byte) { differential(t, data) })
}

func TestShedderMatchesCore(t *testing.T) {
	seed := uint64(3)
	for trial := 0; trial < 100; trial++ {
		data := make([]byte, 3000)
		for i := range data {
			seed = seed*6364136223846793005 + 1442695040888963407
			data[i] = byte(seed >> 56)
		}
		for i := 0; i < len(data); i += 3 {
			data[i] = 16 + data[i]%4 // mostly forward, small steps: many calls per bucket
			if trial%2 == 0 {
				data[i+2] = 200 + data[i+2]%56 // mostly hot
			}
		}
		differential(t, data)
	}
}

func TestAllocs(t *testing.T) {
	cpu := 0
	s, _ := New(WithCPU(func() int { return cpu }), WithSampleEvery(1))
	if a := testing.AllocsPerRun(1000, func() {
		p, _ := s.Allow()
		p.Pass()
		q, _ := s.Allow()
		q.Fail()
	}); a != 0 {
		t.Fatalf("admit + settle allocates %v", a)
	}
	var held []Promise
	for i := 0; i < 1000; i++ {
		p, _ := s.Allow()
		held = append(held, p)
	}
	for i := 0; i < 100; i++ {
		held[i].Fail()
	}
	cpu = 1000
	if _, err := s.Allow(); !errors.Is(err, ErrOverloaded) {
		t.Fatalf("not refusing: %v", err)
	}
	if a := testing.AllocsPerRun(1000, func() { _, _ = s.Allow() }); a != 0 {
		t.Fatalf("a refusal allocates %v", a)
	}
	if snap := s.Snapshot(); !snap.Hot || snap.Refused < 1000 || snap.InFlight != 900 || snap.CPU != 1000 {
		t.Fatalf("snapshot %+v", snap)
	}
}

// TestStress: many goroutines against a hot CPU, admitting, refusing and settling at once; flight
// returns to exactly zero.
func TestStress(t *testing.T) {
	s, _ := New(WithCPU(func() int { return 950 }), WithRefresh(time.Millisecond))
	var start, done sync.WaitGroup
	start.Add(1)
	for g := 0; g < 64; g++ {
		done.Add(1)
		go func() {
			defer done.Done()
			start.Wait()
			for i := 0; i < 500; i++ {
				p, err := s.Allow()
				if err != nil {
					continue
				}
				if i%3 == 0 {
					p.Fail()
				} else {
					p.Pass()
				}
			}
		}()
	}
	start.Done()
	done.Wait()
	if f := s.inFlight.load(); f != 0 {
		t.Fatalf("flying %d after every promise settled", f)
	}
}

// TestDoClassification: Do settles fn's error by the one classification. Pass counts toward
// capacity (one more pass in the bucket); Fail and Ignore leave flight without a pass; Fail moves
// the average of calls in flight, Ignore does not.
func TestDoClassification(t *testing.T) {
	errNotFound := errors.New("not found")
	errOverload := errors.New("overloaded")
	errOther := errors.New("backend down")
	// the caller gives up while fn runs: fn cancels it (a context done before Do is refused)
	canceled, cancel := context.WithCancel(context.Background())
	defer cancel()
	const pass, fail, ignore = "pass", "fail", "ignore"
	for _, c := range []struct {
		name string
		ctx  context.Context
		err  error
		want string
	}{
		{"nil", context.Background(), nil, pass},
		{"caller cancelled", canceled, context.Canceled, ignore},
		{"canceled, ctx alive", context.Background(), context.Canceled, fail},
		{"deadline", context.Background(), context.DeadlineExceeded, fail},
		{"own", context.Background(), errNotFound, pass},
		{"WithFailure", context.Background(), errOverload, fail},
		{"own and WithFailure", context.Background(), errors.Join(errNotFound, errOverload), fail},
		{"other", context.Background(), errOther, fail},
	} {
		now := int64(0)
		s, err := New(WithClock(func() int64 { return now }), WithCPU(func() int { return 0 }), WithRefresh(0), WithSampleEvery(1),
			WithOwnError(func(err error) bool { return errors.Is(err, errNotFound) }),
			WithFailure(func(err error) bool { return errors.Is(err, errOverload) }))
		if err != nil {
			t.Fatal(err)
		}
		held, _ := s.Allow() // one call stays in flight, so a settle that moves the average shows
		err = s.Do(c.ctx, func(ctx context.Context) error {
			if ctx != c.ctx {
				t.Errorf("%s: fn was not handed Do's context", c.name)
			}
			now += 50 * int64(time.Millisecond)
			if ctx == canceled {
				cancel()
			}
			return c.err
		})
		if err != c.err {
			t.Errorf("%s: Do returned %v, want fn's error %v unchanged", c.name, err, c.err)
		}
		now = 200 * int64(time.Millisecond)
		got := ignore
		switch {
		case s.Snapshot().InFlight != 1:
			got = fmt.Sprintf("in flight %d", s.Snapshot().InFlight)
		case s.capacityAt(now) == 1: // one pass of 50 ms in a 100 ms bucket (idle: 10)
			got = pass
		case math.Float64frombits(s.avg.Load()) != 0:
			got = fail
		}
		if got != c.want {
			t.Errorf("%s: settled as %s, want %s", c.name, got, c.want)
		}
		held.Pass()
	}
}

// TestDoPanicsAndRefusals: a panicking fn settles as a failure (it leaves flight) and the panic
// continues; a refusal returns ErrOverloaded, matching ward.ErrRefused with no wait, without
// calling fn and without allocating.
func TestDoPanicsAndRefusals(t *testing.T) {
	cpu := 0
	s, _ := New(WithCPU(func() int { return cpu }), WithRefresh(0), WithSampleEvery(1))
	ctx := context.Background()
	func() {
		defer func() {
			if recover() != "boom" {
				t.Fatal("the panic did not continue")
			}
		}()
		_ = s.Do(ctx, func(context.Context) error { panic("boom") })
	}()
	if n := s.Snapshot().InFlight; n != 0 {
		t.Fatalf("a panicking fn left %d in flight", n)
	}
	var held []Promise
	for i := 0; i < 100; i++ {
		p, _ := s.Allow()
		held = append(held, p)
		if i%10 == 0 {
			held[0].Fail()
			held = held[1:]
		}
	}
	cpu = 1000
	err := s.Do(ctx, func(context.Context) error { t.Fatal("fn ran on a refusal"); return nil })
	if !errors.Is(err, ErrOverloaded) || !errors.Is(err, ward.ErrRefused) {
		t.Fatalf("refusal: %v, want ErrOverloaded matching ward.ErrRefused", err)
	}
	if _, ok := ward.RetryAfter(err); ok {
		t.Fatal("a shedder's refusal carries a wait it cannot know")
	}
	if a := testing.AllocsPerRun(100, func() { _ = s.Do(ctx, func(context.Context) error { return nil }) }); a != 0 {
		t.Fatalf("a refused Do allocates %v", a)
	}
}

// TestPromiseVerbs: each verb settles once; settling again, or a zero Promise, is a no-op. Ignore
// leaves flight and moves neither the average nor capacity.
func TestPromiseVerbs(t *testing.T) {
	now := int64(0)
	s, _ := New(WithClock(func() int64 { return now }), WithCPU(func() int { return 0 }), WithRefresh(0), WithSampleEvery(1))
	held, _ := s.Allow()
	for _, settle := range []func(*Promise){(*Promise).Ignore, (*Promise).Pass, (*Promise).Fail} {
		p, _ := s.Allow()
		settle(&p)
		p.Pass()
		p.Fail()
		p.Ignore()
		if n := s.Snapshot().InFlight; n != 1 {
			t.Fatalf("in flight %d after settling one call four times, want 1", n)
		}
	}
	var zero Promise
	zero.Pass()
	zero.Fail()
	zero.Ignore()
	held.Ignore()
	if n := s.Snapshot().InFlight; n != 0 {
		t.Fatalf("in flight %d, want 0", n)
	}
	// Ignore alone moves nothing
	fresh, _ := New(WithClock(func() int64 { return now }), WithCPU(func() int { return 0 }), WithRefresh(0), WithSampleEvery(1))
	other, _ := fresh.Allow()
	p, _ := fresh.Allow()
	now += int64(50 * time.Millisecond)
	p.Ignore()
	now += int64(200 * time.Millisecond)
	if snap := fresh.Snapshot(); snap.Average != 0 || snap.Capacity != 10 || snap.InFlight != 1 {
		t.Fatalf("after Ignore: %+v, want average 0, the idle capacity 10, 1 in flight", snap)
	}
	other.Fail()
}

func TestNow(t *testing.T) {
	now := int64(777)
	s, _ := New(WithClock(func() int64 { return now }), WithCPU(func() int { return 0 }))
	if s.Now() != 777 {
		t.Fatalf("Now() = %d, want the clock's 777", s.Now())
	}
	now = -5
	if s.Now() != -5 {
		t.Fatalf("Now() = %d, want -5", s.Now())
	}
	d, _ := New(WithCPU(func() int { return 0 }))
	if a, n := clock.Now(), d.Now(); n < a || n-a > int64(time.Hour) {
		t.Fatalf("a default shedder's Now() = %d, ward's clock read %d", n, a)
	}
}

func TestOptionErrors(t *testing.T) {
	for name, o := range map[string]Option{
		"WithRefresh":     WithRefresh(-1),
		"WithClock":       WithClock(nil),
		"WithCPU":         WithCPU(nil),
		"WithSampleEvery": WithSampleEvery(3),
		"WithOwnError":    WithOwnError(nil),
		"WithFailure":     WithFailure(nil),
		"option 1":        nil,
	} {
		_, err := New(WithCPU(func() int { return 0 }), o)
		if !errors.Is(err, ErrInvalid) || !errors.Is(err, ward.ErrInvalid) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: New = %v, want ErrInvalid naming it", name, err)
		}
	}
}

// The contract, checked at compile time.
var (
	_ ward.Guard  = (*Shedder)(nil)
	_ ward.Handle = (*Promise)(nil)
)

// TestRefreshZeroClockReads: with WithRefresh(0) a call the hot rule decides reads the clock,
// and a call on a cool server with nothing marked reads it only to time itself: one timed call in
// WithSampleEvery's n reads it when admitted and when it passes, the others never.
func TestRefreshZeroClockReads(t *testing.T) {
	reads, cpu := 0, 0
	s, err := New(WithClock(func() int64 { reads++; return 1e9 }), WithCPU(func() int { return cpu }),
		WithRefresh(0), WithSampleEvery(4))
	if err != nil {
		t.Fatal(err)
	}
	reads = 0
	timed := 0 // which calls are timed follows the count of the P each starts on
	for range 16 {
		p, err := s.Allow()
		if err != nil {
			t.Fatal(err)
		}
		if p.timed {
			timed++
		}
		p.Pass()
	}
	if reads != 2*timed || timed == 16 { // each timed call read when admitted and when it passed
		t.Fatalf("16 cool calls, %d timed: %d clock reads, want %d, and some calls untimed", timed, reads, 2*timed)
	}
	cpu = s.p.CPU // hot by the reading: the hot rule decides every call
	reads = 0
	for range 8 {
		p, err := s.Allow()
		if err != nil {
			t.Fatal(err)
		}
		p.Fail()
	}
	if reads < 8 {
		t.Fatalf("8 calls the hot rule decided: %d clock reads, want at least 8", reads)
	}
}

// TestUnmarkKeepsLaterMarks: a call that found the server cool clears only the marks it saw. A
// refusal that marked the shedder dropped between that call's read of the marks and its clear
// stays marked (the server stays hot through its cool-down), and the cooling is told once.
func TestUnmarkKeepsLaterMarks(t *testing.T) {
	s, err := New(WithCPU(func() int { return 0 }), WithEvents(func(Event) {}))
	if err != nil {
		t.Fatal(err)
	}
	s.marks.Store(markTold) // hot, as told
	seen := s.marks.Load()  // a call finds the server cool...
	s.marks.Or(markDropped) // ...while another is refused
	if !s.unmark(seen) {    // the first call clears what it saw: it tells the cooling
		t.Fatal("the call that cleared markTold does not tell the cooling")
	}
	if got := s.marks.Load(); got != markDropped {
		t.Fatalf("marks after the clear: %b, want the refusal's markDropped (%b)", got, markDropped)
	}
	if s.unmark(markTold) {
		t.Fatal("a second call tells the cooling again")
	}
}
