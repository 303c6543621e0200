package breaker

import (
	"errors"
	"math"
	"sync"
	"testing"
	"time"
)

// differential drives a Core and a Breaker (refresh on every call) with the same steps decoded
// from data: (time step, outcome, roll). Every decision and every ratio must match.
func differential(t *testing.T, p Policy, data []byte) {
	t.Helper()
	now := int64(0)
	core, err := NewCore(p, now)
	if err != nil {
		t.Skip()
	}
	var roll float64
	b, _ := New(WithPolicy(p), WithClock(func() int64 { return now }), WithRand(func() float64 { return roll }), WithRefresh(0))
	width := int64(p.Window) / int64(p.Buckets)
	for i := 0; i+2 < len(data); i += 3 {
		now += (int64(data[i]) - 24) * width / 16 // sometimes backwards
		roll = float64(data[i+2]) / 256
		want := core.Allow(now, roll)
		promise, err := b.Allow()
		if got := err == nil; got != want {
			t.Fatalf("step %d at %d roll %v: breaker allowed %v, core %v", i/3, now, roll, got, want)
		}
		if want {
			switch data[i+1] % 3 {
			case 0:
				core.Record(now, Success)
				promise.Pass()
			case 1:
				core.Record(now, Failure)
				promise.Fail()
			default: // still in flight: settled by nobody (a lost promise records nothing)
			}
		}
		if g, w := b.Ratio(), core.Ratio(now); g != w {
			t.Fatalf("step %d at %d: breaker ratio %v, core %v", i/3, now, g, w)
		}
	}
}

func FuzzBreakerMatchesCore(f *testing.F) {
	f.Add([]byte{20, 1, 0, 20, 1, 0, 20, 1, 0, 20, 1, 0, 20, 1, 0, 20, 1, 0, 20, 1, 0, 20, 1, 0, 40, 0, 200})
	f.Add([]byte{0, 1, 1, 0, 1, 1, 0, 1, 1, 0, 1, 1, 0, 1, 1, 0, 1, 1, 0, 1, 1, 255, 0, 0, 30, 2, 9})
	f.Fuzz(func(t *testing.T, data []byte) { differential(t, DefaultPolicy(), data) })
}

func TestBreakerMatchesCore(t *testing.T) {
	seed := uint64(99)
	for trial := 0; trial < 200; trial++ {
		data := make([]byte, 3000)
		for i := range data {
			seed = seed*6364136223846793005 + 1442695040888963407
			data[i] = byte(seed >> 56)
		}
		for i := 1; i < len(data); i += 3 { // mostly failures, so the breaker refuses a lot
			if data[i]%4 != 0 {
				data[i] = 1
			}
		}
		p := DefaultPolicy()
		if trial%2 == 1 {
			p.Buckets, p.Window, p.Probe = 7, 3*time.Second, 200*time.Millisecond
		}
		differential(t, p, data)
	}
}

func TestDoVariants(t *testing.T) {
	now := int64(0)
	roll := 0.0
	b, _ := New(WithClock(func() int64 { return now }), WithRand(func() float64 { return roll }), WithRefresh(0))
	errNotFound := errors.New("not found")
	errBackend := errors.New("backend down")
	acceptable := func(err error) bool { return errors.Is(err, errNotFound) }
	fallbacks := 0
	fallback := func(err error) error { fallbacks++; return errors.Join(errors.New("served stale"), err) }
	for i := 0; i < 6; i++ {
		if err := b.DoWith(func() error { return errNotFound }, acceptable, fallback); err != errNotFound {
			t.Fatalf("DoWith returned %v", err)
		}
	}
	if s := b.Snapshot(); s.Successes != 6 || s.Failures != 0 {
		t.Fatalf("acceptable errors counted as %+v, want 6 successes", s)
	}
	for i := 0; i < 30; i++ {
		_ = b.Do(func() error { return errBackend })
	}
	err := b.DoWith(func() error { t.Fatal("fn ran on a refusal"); return nil }, nil, fallback)
	if !errors.Is(err, ErrUnavailable) || fallbacks != 1 {
		t.Fatalf("refusal: err %v, %d fallbacks", err, fallbacks)
	}
	if err := b.Do(func() error { return nil }); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Do on a refusal returned %v", err)
	}
	roll = 0.99 // a draw over the ratio: let through while refusing, which arms the probe
	_ = b.Do(func() error { return errBackend })
	roll = 0
	now += int64(2 * time.Second) // the probe lets one through: it panics, which is a failure
	failures := b.Snapshot().Failures
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the panic did not continue")
			}
		}()
		_ = b.Do(func() error { panic("boom") })
	}()
	if got := b.Snapshot().Failures; got != failures+1 {
		t.Fatalf("a panicking fn left failures at %d, want %d", got, failures+1)
	}
}

func TestPromiseSettlesOnce(t *testing.T) {
	b, _ := New(WithRefresh(0))
	p, err := b.Allow()
	if err != nil {
		t.Fatal(err)
	}
	p.Pass()
	p.Pass()
	p.Fail()
	var zero Promise
	zero.Fail()
	if s := b.Snapshot(); s.Successes != 1 || s.Failures != 0 {
		t.Fatalf("a promise settled three times recorded %+v", s)
	}
}

func TestNop(t *testing.T) {
	b := Nop()
	for i := 0; i < 100; i++ {
		if err := b.Do(func() error { return errors.New("x") }); err == nil || errors.Is(err, ErrUnavailable) {
			t.Fatal("Nop refused or swallowed the error")
		}
	}
	if b.Ratio() != 0 || b.Snapshot() != (Snapshot{}) {
		t.Fatal("Nop recorded something")
	}
}

func TestAllocs(t *testing.T) {
	b, _ := New()
	ok := func() error { return nil }
	if a := testing.AllocsPerRun(1000, func() {
		p, _ := b.Allow()
		p.Pass()
		_ = b.Do(ok)
	}); a != 0 {
		t.Fatalf("a healthy call allocates %v", a)
	}
	now := int64(0)
	r, _ := New(WithClock(func() int64 { return now }), WithRand(func() float64 { return 0 }))
	for i := 0; i < 100; i++ {
		now += int64(time.Millisecond) // the cached ratio refreshes every 62.5 ms of settles
		p, _ := r.Allow()
		p.Fail()
	}
	if _, err := r.Allow(); err == nil {
		t.Fatal("not refusing after 100 failures")
	}
	if a := testing.AllocsPerRun(1000, func() { _, _ = r.Allow() }); a != 0 {
		t.Fatalf("a refusal allocates %v", a)
	}
}

// TestStress: many goroutines with a backend failing half its calls; the window never holds more
// than was recorded, and nothing panics under -race.
func TestStress(t *testing.T) {
	b, _ := New()
	const goroutines, calls = 64, 500
	var start, done sync.WaitGroup
	var mu sync.Mutex
	var passed, failed, refused int64
	start.Add(1)
	for g := 0; g < goroutines; g++ {
		done.Add(1)
		go func() {
			defer done.Done()
			start.Wait()
			var p, f, r int64
			for i := 0; i < calls; i++ {
				pr, err := b.Allow()
				switch {
				case err != nil:
					r++
				case i%2 == 0:
					pr.Pass()
					p++
				default:
					pr.Fail()
					f++
				}
			}
			mu.Lock()
			passed, failed, refused = passed+p, failed+f, refused+r
			mu.Unlock()
		}()
	}
	start.Done()
	done.Wait()
	s := b.Snapshot()
	if s.Successes > passed || s.Failures > failed || s.Drops > refused || s.Refused != refused {
		t.Fatalf("snapshot %+v, recorded %d/%d/%d", s, passed, failed, refused)
	}
	if r := b.Ratio(); math.IsNaN(r) || r < 0 || r >= 1 {
		t.Fatalf("ratio %v", r)
	}
}
