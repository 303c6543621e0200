package retry

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/wardgo/ward/internal/contract"
)

const ms = time.Millisecond

func TestCeiling(t *testing.T) {
	b := DefaultBackoff()
	for retry, want := range map[int]time.Duration{-3: 100 * ms, 0: 100 * ms, 1: 100 * ms, 2: 200 * ms, 3: 400 * ms, 4: 800 * ms, 5: time.Second, 1000: time.Second} {
		if got := b.Ceiling(retry); got != want {
			t.Errorf("Ceiling(%d) = %v, want %v", retry, got, want)
		}
	}
}

func TestDelay(t *testing.T) {
	b := DefaultBackoff()
	for _, c := range []struct {
		jitter Jitter
		retry  int
		roll   float64
		prev   time.Duration
		want   time.Duration
	}{
		{Rigid, 2, 0.9, 0, 200 * ms},
		{Full, 2, 0, 0, 0},
		{Full, 2, 0.5, 0, 100 * ms},
		{Equal, 2, 0, 0, 100 * ms},
		{Equal, 2, 0.5, 0, 150 * ms},
		{Decorrelated, 5, 0, 0, 100 * ms},          // previous under base counts as base: [100, 300]
		{Decorrelated, 5, 0.5, 300 * ms, 500 * ms}, // [100, 900]
		{Decorrelated, 5, 0.99, 900 * ms, time.Second},
		{Spread(0.2), 1, 0, 0, 80 * ms},
		{Spread(0.2), 1, 0.5, 0, 100 * ms},
		{Spread(0.2), 5, 0.75, 0, 1100 * ms}, // passes the cap by up to a fifth
		{Spread(0.2), 1, math.NaN(), 0, 80 * ms},
		{Full, 1, 7, 0, 99999999}, // a roll over 1 is held under 1
	} {
		b.Jitter = c.jitter
		if got := b.Delay(c.retry, c.roll, c.prev); got != c.want {
			t.Errorf("%v Delay(%d, %v, %v) = %v, want %v", c.jitter, c.retry, c.roll, c.prev, got, c.want)
		}
	}
	for _, f := range []float64{0, 0.2, 1} {
		if Spread(f) != Jitter(f) {
			t.Errorf("Spread(%v) = %v", f, Spread(f))
		}
	}
}

// TestSpreadOutOfRange: Spread of an f outside [0, 1] is not clamped into a valid jitter (nor,
// negative, into a named one): Validate rejects it, naming Backoff.Jitter and the value.
func TestSpreadOutOfRange(t *testing.T) {
	for _, c := range []struct {
		f    float64
		want string
	}{{3, "Spread(3)"}, {1.5, "Spread(1.5)"}, {-1, "Spread(NaN)"}, {-0.2, "Spread(NaN)"}, {math.NaN(), "Spread(NaN)"}, {math.Inf(1), "Spread(+Inf)"}} {
		b := DefaultBackoff()
		b.Jitter = Spread(c.f)
		err := b.Validate()
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "Backoff.Jitter = "+c.want) {
			t.Errorf("Spread(%v): Validate = %v, want ErrInvalid naming Backoff.Jitter = %s", c.f, err, c.want)
		}
		if d := b.Delay(1, 0.5, 0); d < 0 || d > b.Cap*2 {
			t.Errorf("Spread(%v): Delay = %v, want within [0, 2×Cap]", c.f, d)
		}
	}
}

func TestMoreAndSchedule(t *testing.T) {
	b := DefaultBackoff()
	if !b.More(1) || !b.More(2) || b.More(3) {
		t.Fatal("three attempts allow two retries")
	}
	got := fmt.Sprint(b.Schedule([]float64{0.5}))
	if got != "[100ms 160ms]" { // the second roll runs short: 0, the low end of Spread(0.2) of 200 ms
		t.Fatalf("Schedule = %s", got)
	}
	b.Jitter, b.Attempts = Decorrelated, 4
	if got := fmt.Sprint(b.Schedule([]float64{0.5, 0.5, 0.5})); got != "[200ms 350ms 575ms]" {
		t.Fatalf("decorrelated Schedule = %s", got)
	}
	b.Attempts = 1
	if len(b.Schedule(nil)) != 0 {
		t.Fatal("one attempt has no retries")
	}
}

func TestValidate(t *testing.T) {
	for field, edit := range map[string]func(*Backoff){
		"Base":     func(b *Backoff) { b.Base = 0 },
		"Factor":   func(b *Backoff) { b.Factor = 0.5 },
		"Cap":      func(b *Backoff) { b.Cap = time.Millisecond },
		"Attempts": func(b *Backoff) { b.Attempts = 0 },
		"Jitter":   func(b *Backoff) { b.Jitter = 3 },
	} {
		b := DefaultBackoff()
		edit(&b)
		if err := b.Validate(); !errors.Is(err, ErrInvalid) || !errors.Is(err, contract.ErrInvalid) || !strings.Contains(err.Error(), "Backoff."+field+" = ") {
			t.Errorf("%s: %v", field, err)
		}
	}
	if err := DefaultBackoff().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestDeadline(t *testing.T) {
	sec := int64(time.Second)
	d := NewDeadline(2*time.Second, 10*sec)
	for _, c := range []struct {
		now     int64
		left    time.Duration
		expired bool
	}{
		{10 * sec, 2 * time.Second, false},
		{11 * sec, time.Second, false},
		{12*sec - 1, 1, false},
		{12 * sec, 0, true},
		{99 * sec, 0, true},
		{5 * sec, 2 * time.Second, false}, // backwards: never more than the budget
	} {
		left, ok := d.Remaining(c.now)
		if !ok || left != c.left || d.Expired(c.now) != c.expired {
			t.Errorf("at %v: Remaining %v %v, Expired %v; want %v, %v", time.Duration(c.now), left, ok, d.Expired(c.now), c.left, c.expired)
		}
	}
	for _, budget := range []time.Duration{0, -time.Second} {
		none := NewDeadline(budget, 0)
		if _, ok := none.Remaining(math.MaxInt64); ok || none.Expired(math.MaxInt64) {
			t.Errorf("a budget of %v expired", budget)
		}
	}
}

type hinted struct{ after time.Duration }

func (h hinted) Error() string             { return "slow down" }
func (h hinted) RetryAfter() time.Duration { return h.after }

func TestDo(t *testing.T) {
	var slept []time.Duration
	sleep := func(ctx context.Context, d time.Duration) error { slept = append(slept, d); return ctx.Err() }
	half := func() float64 { return 0.5 }
	ctx := context.Background()
	boom := errors.New("boom")

	calls := 0
	err := Do(ctx, DefaultBackoff(), func(context.Context) error {
		calls++
		if calls < 3 {
			return boom
		}
		return nil
	}, WithSleep(sleep), WithRand(half))
	if err != nil || calls != 3 || fmt.Sprint(slept) != "[100ms 200ms]" {
		t.Fatalf("succeeding on the third: err %v, calls %d, slept %v", err, calls, slept)
	}

	slept, calls = nil, 0
	err = Do(ctx, DefaultBackoff(), func(context.Context) error { calls++; return boom }, WithSleep(sleep), WithRand(half))
	if !errors.Is(err, boom) || calls != 3 {
		t.Fatalf("always failing: err %v, calls %d", err, calls)
	}

	slept, calls = nil, 0
	err = Do(ctx, DefaultBackoff(), func(context.Context) error { calls++; return hinted{3 * time.Second} }, WithSleep(sleep))
	if fmt.Sprint(slept) != "[3s 3s]" || !errors.As(err, new(hinted)) {
		t.Fatalf("the Retry-After hint was not honoured: slept %v", slept)
	}

	calls = 0
	permanent := errors.New("bad request")
	err = Do(ctx, DefaultBackoff(), func(context.Context) error { calls++; return permanent },
		WithSleep(sleep), WithRetryIf(func(err error) bool { return !errors.Is(err, permanent) }))
	if !errors.Is(err, permanent) || calls != 1 {
		t.Fatalf("a permanent error was retried: %d calls", calls)
	}

	cctx, cancel := context.WithCancel(ctx)
	calls = 0
	err = Do(cctx, DefaultBackoff(), func(context.Context) error { calls++; cancel(); return boom }, WithSleep(sleep))
	if !errors.Is(err, context.Canceled) || !errors.Is(err, boom) || calls != 1 {
		t.Fatalf("a cancelled context: err %v, calls %d", err, calls)
	}

	bad := DefaultBackoff()
	bad.Attempts = 0
	if err := Do(ctx, bad, func(context.Context) error { t.Fatal("called"); return nil }); !errors.Is(err, ErrInvalid) {
		t.Fatalf("an invalid backoff: %v", err)
	}
}

// TestDoRealSleep runs the default sleep with delays of zero and an ended context: it returns at
// once either way, so the test waits for nothing.
func TestDoRealSleep(t *testing.T) {
	b := Backoff{Base: 1, Factor: 1, Cap: 1, Attempts: 2, Jitter: Full}
	calls := 0
	err := Do(context.Background(), b, func(context.Context) error {
		calls++
		if calls == 1 {
			return errors.New("once")
		}
		return nil
	}, WithRand(func() float64 { return 0 }))
	if err != nil || calls != 2 {
		t.Fatalf("err %v, calls %d", err, calls)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := sleepCtx(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("sleepCtx on an ended context: %v", err)
	}
}

// FuzzDelay: any policy that validates (Base, Cap, Factor, Jitter and Attempts at their extremes
// included: 0, negative, NaN, ±Inf, the largest Duration) and any retry number, draw and previous
// delay give a delay within the jitter's range: never negative, never over the cap (over it by at
// most Cap × f for Spread(f)); Schedule lists at most MaxScheduled delays, each the same.
func FuzzDelay(f *testing.F) {
	f.Add(int64(100*ms), int64(time.Second), 2.0, float64(Spread(0.2)), 3, 3, 0.5, int64(250*ms))
	f.Add(int64(100*ms), int64(time.Second), 2.0, float64(Decorrelated), 3, -7, math.NaN(), int64(-1))
	f.Add(int64(100*ms), int64(math.MaxInt64), 2.0, float64(Rigid), math.MaxInt, 64, 0.0, int64(0))
	f.Add(int64(1), int64(math.MaxInt64), math.MaxFloat64, 1.0, math.MaxInt, math.MaxInt, 0.999, int64(math.MaxInt64))
	f.Add(int64(math.MaxInt64), int64(math.MaxInt64), 1.0, float64(Full), 2, 1, math.Inf(1), int64(math.MinInt64))
	f.Add(int64(0), int64(-1), math.Inf(1), math.NaN(), 0, 0, math.Inf(-1), int64(0))
	f.Fuzz(func(t *testing.T, base, cp int64, factor, jitter float64, attempts, retry int, roll float64, previous int64) {
		b := Backoff{Base: time.Duration(base), Factor: factor, Cap: time.Duration(cp), Attempts: attempts, Jitter: Jitter(jitter)}
		if err := b.Validate(); err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("%+v: Validate = %v, not ErrInvalid", b, err)
			}
			return
		}
		limit := delayLimit(b)
		if d := b.Delay(retry, roll, time.Duration(previous)); d < 0 || d > limit {
			t.Fatalf("%+v: Delay(%d, %v, %v) = %v, outside [0, %v]", b, retry, roll, time.Duration(previous), d, limit)
		}
		if c := b.Ceiling(retry); c < 0 || c > b.Cap {
			t.Fatalf("%+v: Ceiling(%d) = %v, outside [0, %v]", b, retry, c, b.Cap)
		}
		s := b.Schedule([]float64{roll, roll})
		if len(s) != min(attempts-1, MaxScheduled) {
			t.Fatalf("%+v: Schedule lists %d delays", b, len(s))
		}
		for i, d := range s {
			if d < 0 || d > limit {
				t.Fatalf("%+v: Schedule[%d] = %v, outside [0, %v]", b, i, d, limit)
			}
		}
	})
}
