package breaker

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
	f.Fuzz(func(t *testing.T, data []byte) {
		differential(t, DefaultPolicy(), data)
		differential(t, GoZeroPolicy(), data)
		differential(t, RecoveryPolicy(), data)
	})
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
		p := GoZeroPolicy()
		switch trial % 4 {
		case 1:
			p.Buckets, p.Window, p.ProbeAfter = 7, 3*time.Second, 200*time.Millisecond
		case 2:
			p = DefaultPolicy()
		case 3: // the default's trip, tolerance and recovery on a small window
			p = DefaultPolicy()
			p.Buckets, p.Window, p.ProbeAfter, p.Recovery, p.Trip = 7, 3*time.Second, 200*time.Millisecond, time.Second, 3
		}
		differential(t, p, data)
	}
}

// TestDoClassification: Do settles fn's error by the one classification: nil and the caller's own
// errors pass (the backend answered), the caller's cancellation is ignored, a deadline, a
// WithFailure error and any other error fail, a panic fails and continues. fn's error comes back
// unchanged.
func TestDoClassification(t *testing.T) {
	errNotFound := errors.New("not found")
	errOverload := errors.New("overloaded")
	errBackend := errors.New("backend down")
	errBoth := errors.Join(errNotFound, errOverload) // own and failure: failure wins
	// the caller gives up while fn runs: fn cancels it (a context done before Do is refused)
	canceled, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, c := range []struct {
		name string
		ctx  context.Context
		err  error
		want Snapshot // successes and failures after one call
	}{
		{"nil", context.Background(), nil, Snapshot{Successes: 1}},
		{"caller cancelled", canceled, context.Canceled, Snapshot{}},
		{"canceled, ctx alive", context.Background(), context.Canceled, Snapshot{Failures: 1}},
		{"deadline", context.Background(), context.DeadlineExceeded, Snapshot{Failures: 1}},
		{"wrapped deadline", context.Background(), fmt.Errorf("call: %w", context.DeadlineExceeded), Snapshot{Failures: 1}},
		{"own", context.Background(), errNotFound, Snapshot{Successes: 1}},
		{"WithFailure", context.Background(), errOverload, Snapshot{Failures: 1}},
		{"own and WithFailure", context.Background(), errBoth, Snapshot{Failures: 1}},
		{"other", context.Background(), errBackend, Snapshot{Failures: 1}},
	} {
		b, err := New(WithRefresh(0),
			WithOwnError(func(err error) bool { return errors.Is(err, errNotFound) }),
			WithFailure(func(err error) bool { return errors.Is(err, errOverload) }))
		if err != nil {
			t.Fatal(err)
		}
		var got context.Context
		if err := b.Do(c.ctx, func(ctx context.Context) error {
			got = ctx
			if ctx == canceled {
				cancel()
			}
			return c.err
		}); err != c.err {
			t.Errorf("%s: Do returned %v, want fn's error %v unchanged", c.name, err, c.err)
		}
		if got != c.ctx {
			t.Errorf("%s: fn was not handed Do's context", c.name)
		}
		if s := b.Snapshot(); s.Successes != c.want.Successes || s.Failures != c.want.Failures {
			t.Errorf("%s: settled as %d successes, %d failures; want %d, %d", c.name, s.Successes, s.Failures, c.want.Successes, c.want.Failures)
		}
	}
}

// TestDoPanicsAndRefusals: a panicking fn settles as a failure and the panic continues; a refusal
// returns ErrUnavailable (matching ward.ErrRefused, no wait) without calling fn.
func TestDoPanicsAndRefusals(t *testing.T) {
	now := int64(0)
	roll := 0.0
	b, _ := New(WithClock(func() int64 { return now }), WithRand(func() float64 { return roll }), WithRefresh(0))
	ctx := context.Background()
	errBackend := errors.New("backend down")
	for i := 0; i < 30; i++ {
		_ = b.Do(ctx, func(context.Context) error { return errBackend })
	}
	err := b.Do(ctx, func(context.Context) error { t.Fatal("fn ran on a refusal"); return nil })
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, ward.ErrRefused) {
		t.Fatalf("refusal: err %v, want ErrUnavailable matching ward.ErrRefused", err)
	}
	if _, ok := ward.RetryAfter(err); ok {
		t.Fatal("a breaker's refusal carries a wait it cannot know")
	}
	if a := testing.AllocsPerRun(100, func() { _ = b.Do(ctx, func(context.Context) error { return nil }) }); a != 0 {
		t.Fatalf("a refused Do allocates %v", a)
	}
	roll = 0.99 // a draw over the ratio: let through while refusing, which arms the probe
	_ = b.Do(ctx, func(context.Context) error { return errBackend })
	roll = 0
	now += int64(2 * time.Second) // the probe lets one through: it panics, which is a failure
	failures := b.Snapshot().Failures
	func() {
		defer func() {
			if recover() != "boom" {
				t.Fatal("the panic did not continue")
			}
		}()
		_ = b.Do(ctx, func(context.Context) error { panic("boom") })
	}()
	if got := b.Snapshot().Failures; got != failures+1 {
		t.Fatalf("a panicking fn left failures at %d, want %d", got, failures+1)
	}
}

// TestFallbackIdiom: the fallback a caller serves on a refusal is an errors.Is away.
func TestFallbackIdiom(t *testing.T) {
	b, _ := New(WithRand(func() float64 { return 0 }), WithRefresh(0))
	ctx := context.Background()
	for i := 0; i < 20; i++ {
		_ = b.Do(ctx, func(context.Context) error { return errors.New("down") })
	}
	served := ""
	if err := b.Do(ctx, func(context.Context) error { served = "backend"; return nil }); errors.Is(err, ErrUnavailable) {
		served = "cache"
	}
	if served != "cache" {
		t.Fatalf("served from %q, want the cache", served)
	}
}

func TestPromiseSettlesOnce(t *testing.T) {
	b, _ := New(WithRefresh(0))
	for _, settle := range []func(p *Promise){(*Promise).Pass, (*Promise).Fail, (*Promise).Ignore} {
		p, err := b.Allow()
		if err != nil {
			t.Fatal(err)
		}
		settle(&p)
		p.Pass()
		p.Fail()
		p.Ignore()
	}
	var zero Promise
	zero.Fail()
	zero.Pass()
	zero.Ignore()
	if s := b.Snapshot(); s.Successes != 1 || s.Failures != 1 {
		t.Fatalf("three promises settled Pass, Fail, Ignore and then again recorded %+v, want 1 success, 1 failure", s)
	}
}

// TestIgnoreRecordsNothing: an ignored call moves neither the counts nor the ratio.
func TestIgnoreRecordsNothing(t *testing.T) {
	now := int64(0)
	b, _ := New(WithClock(func() int64 { return now }), WithRefresh(0))
	for i := 0; i < 10; i++ {
		p, _ := b.Allow()
		p.Fail()
	}
	before := b.Snapshot()
	for i := 0; i < 100; i++ {
		if p, err := b.Allow(); err == nil {
			p.Ignore()
		}
	}
	after := b.Snapshot()
	if after.Successes != before.Successes || after.Failures != before.Failures {
		t.Fatalf("ignored calls recorded: %+v, then %+v", before, after)
	}
}

func TestNow(t *testing.T) {
	now := int64(12345)
	b, _ := New(WithClock(func() int64 { return now }))
	if b.Now() != 12345 {
		t.Fatalf("Now() = %d, want the clock's 12345", b.Now())
	}
	now = 99
	if b.Now() != 99 {
		t.Fatalf("Now() = %d, want 99", b.Now())
	}
	d, _ := New()
	if a, n := clock.Now(), d.Now(); n < a || n-a > int64(time.Hour) {
		t.Fatalf("a default breaker's Now() = %d, ward's clock read %d", n, a)
	}
	if n := Nop().Now(); n <= 0 {
		t.Fatalf("Nop().Now() = %d", n)
	}
}

func TestNop(t *testing.T) {
	b := Nop()
	var g ward.Guard = b
	for i := 0; i < 100; i++ {
		if err := g.Do(context.Background(), func(context.Context) error { return errors.New("x") }); err == nil || errors.Is(err, ErrUnavailable) {
			t.Fatal("Nop refused or swallowed the error")
		}
		p, err := b.Allow()
		if err != nil {
			t.Fatal(err)
		}
		p.Fail()
		p.Ignore()
	}
	if b.Ratio() != 0 || b.Snapshot() != (Snapshot{}) {
		t.Fatal("Nop recorded something")
	}
}

// The contract, checked at compile time.
var (
	_ ward.Guard  = (*Breaker)(nil)
	_ ward.Handle = (*Promise)(nil)
)

func TestOptionErrors(t *testing.T) {
	for name, o := range map[string]Option{
		"WithRefresh":  WithRefresh(-1),
		"WithClock":    WithClock(nil),
		"WithRand":     WithRand(nil),
		"WithOwnError": WithOwnError(nil),
		"WithFailure":  WithFailure(nil),
		"option 1":     nil,
	} {
		opts := []Option{WithRefresh(0), o}
		_, err := New(opts...)
		if !errors.Is(err, ErrInvalid) || !errors.Is(err, ward.ErrInvalid) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: New = %v, want ErrInvalid naming it", name, err)
		}
	}
}

func TestAllocs(t *testing.T) {
	b, _ := New()
	ctx := context.Background()
	ok := func(context.Context) error { return nil }
	if a := testing.AllocsPerRun(1000, func() {
		p, _ := b.Allow()
		p.Pass()
		_ = b.Do(ctx, ok)
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
