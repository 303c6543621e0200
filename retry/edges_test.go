package retry

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"testing"
	"time"
)

var allJitters = []Jitter{Rigid, Full, Equal, Decorrelated, Spread(0), Spread(0.2), Spread(1)}

// delayLimit is the most Delay may return: the cap, or for Spread(f) the cap × (1 + f), held to
// the largest Duration.
func delayLimit(b Backoff) time.Duration {
	if b.Jitter < 0 {
		return b.Cap
	}
	over := float64(b.Cap) * float64(b.Jitter)
	if over >= float64(math.MaxInt64-b.Cap) {
		return math.MaxInt64
	}
	return b.Cap + time.Duration(over)
}

// TestDelayHugeCap: a cap of the largest Duration ("no cap") and caps next to it, huge retry
// numbers and every jitter: the delay never goes negative and never passes the cap.
func TestDelayHugeCap(t *testing.T) {
	for _, cp := range []time.Duration{math.MaxInt64, math.MaxInt64 - 1, 1<<62 + 1, 1 << 53} {
		for _, base := range []time.Duration{1, 100 * ms, cp} {
			for _, j := range allJitters {
				b := Backoff{Base: base, Factor: 2, Cap: cp, Attempts: 3, Jitter: j}
				limit := delayLimit(b)
				for _, retry := range []int{1, 2, 34, 35, 36, 37, 38, 39, 64, 1000, math.MaxInt} {
					for _, roll := range []float64{0, 0.5, 0.999999} {
						for _, prev := range []time.Duration{0, base, cp / 2, cp} {
							if d := b.Delay(retry, roll, prev); d < 0 || d > limit {
								t.Fatalf("Base %d Cap %d %v: Delay(%d, %v, %d) = %d, outside [0, %d]",
									base, cp, j, retry, roll, prev, d, limit)
							}
						}
					}
					if c := b.Ceiling(retry); c < 0 || c > cp {
						t.Fatalf("Base %d Cap %d: Ceiling(%d) = %d, outside [0, %d]", base, cp, retry, c, cp)
					}
				}
			}
		}
	}
}

// TestDoHugeCapWaits: with no cap, Do's waits keep growing; none is negative (which a sleep
// takes as "do not wait").
func TestDoHugeCapWaits(t *testing.T) {
	for _, j := range []Jitter{Rigid, Equal, Spread(0.2)} {
		b := Backoff{Base: 100 * ms, Factor: 2, Cap: math.MaxInt64, Attempts: 80, Jitter: j}
		var slept []time.Duration
		sleep := func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil }
		_ = Do(context.Background(), b, func(context.Context) error { return errors.New("down") },
			WithSleep(sleep), WithRand(func() float64 { return 0.5 }))
		if len(slept) != 79 {
			t.Fatalf("%v: %d waits, want 79", j, len(slept))
		}
		for i, d := range slept {
			if d <= 0 || (i > 0 && d < slept[i-1]) {
				t.Fatalf("%v: wait %d = %v after %v: want positive and growing", j, i+1, d, slept[max(i-1, 0)])
			}
		}
	}
}

// TestScheduleHugeAttempts: a policy that retries until its context ends (Attempts = MaxInt) has
// a schedule of MaxScheduled delays, not a panic or an absurd allocation.
func TestScheduleHugeAttempts(t *testing.T) {
	for _, attempts := range []int{math.MaxInt, math.MaxInt - 1, MaxScheduled + 2} {
		b := DefaultBackoff()
		b.Attempts = attempts
		s := b.Schedule([]float64{0.5})
		if len(s) != MaxScheduled || cap(s) != MaxScheduled {
			t.Fatalf("Attempts %d: Schedule has %d delays (capacity %d), want %d", attempts, len(s), cap(s), MaxScheduled)
		}
	}
	b := DefaultBackoff()
	b.Attempts = MaxScheduled + 1
	if n := len(b.Schedule(nil)); n != MaxScheduled {
		t.Fatalf("Attempts %d: Schedule has %d delays, want %d", b.Attempts, n, MaxScheduled)
	}
}

// TestDoPushback follows gRPC A6's server pushback: a negative hint stops the retries, zero
// retries at once, a positive hint is waited exactly and resets the backoff.
func TestDoPushback(t *testing.T) {
	ctx := context.Background()
	rigid := DefaultBackoff()
	rigid.Jitter, rigid.Attempts = Rigid, 6
	for _, c := range []struct {
		name  string
		errs  []error // what each call returns; past the end, success
		calls int
		slept string
		err   bool
	}{
		{"negative: no retry", []error{hinted{-ms}}, 1, "[]", true},
		{"negative after backoff", []error{errors.New("x"), hinted{-1}}, 2, "[100ms]", true},
		{"zero: at once", []error{hinted{0}, hinted{0}}, 3, "[0s 0s]", false},
		{"positive: exactly, then the backoff starts over", []error{errors.New("x"), errors.New("x"), hinted{3 * time.Second}, errors.New("x"), errors.New("x")},
			6, "[100ms 200ms 3s 100ms 200ms]", false},
		{"wrapped", []error{fmt.Errorf("call: %w", hinted{-time.Second})}, 1, "[]", true},
	} {
		var slept []time.Duration
		sleep := func(ctx context.Context, d time.Duration) error { slept = append(slept, d); return ctx.Err() }
		calls := 0
		err := Do(ctx, rigid, func(context.Context) error {
			calls++
			if calls <= len(c.errs) {
				return c.errs[calls-1]
			}
			return nil
		}, WithSleep(sleep))
		if calls != c.calls || fmt.Sprint(slept) != c.slept || (err != nil) != c.err {
			t.Errorf("%s: %d calls, slept %v, err %v; want %d calls, slept %s, error %v", c.name, calls, slept, err, c.calls, c.slept, c.err)
		}
	}
}

// TestDelayAllocs: Delay and Ceiling are plain arithmetic, free of allocations.
func TestDelayAllocs(t *testing.T) {
	b := Backoff{Base: 100 * ms, Factor: 2, Cap: math.MaxInt64, Attempts: 3, Jitter: Spread(0.2)}
	if n := testing.AllocsPerRun(100, func() { _ = b.Delay(70, 0.5, time.Second) + b.Ceiling(80) }); n != 0 {
		t.Fatalf("Delay allocates %v times", n)
	}
}

// TestDeadlineClockExtremes: a deadline started near one end of the clock and read near the other
// neither wraps into a fresh budget nor expires early.
func TestDeadlineClockExtremes(t *testing.T) {
	for _, c := range []struct {
		start, now int64
		budget     time.Duration
		left       time.Duration
	}{
		{-1, math.MaxInt64, time.Second, 0},              // long past: spent
		{math.MinInt64, math.MaxInt64, math.MaxInt64, 0}, // the whole clock has passed
		{1, math.MinInt64, time.Second, time.Second},     // far backwards: never more than the budget
		{math.MinInt64, 0, math.MaxInt64, 0},             // 2⁶³ ns passed, one over the budget
		{math.MinInt64, -2, math.MaxInt64, 1},            // one short of 2⁶³ − 1 ns
		{math.MaxInt64 - 10, math.MaxInt64, time.Second, time.Second - 10},
	} {
		d := NewDeadline(c.budget, c.start)
		left, ok := d.Remaining(c.now)
		if !ok || left != c.left || d.Expired(c.now) != (c.left == 0) {
			t.Errorf("budget %d from %d, at %d: Remaining = %d, %v, Expired %v; want %d", c.budget, c.start, c.now, left, ok, d.Expired(c.now), c.left)
		}
	}
}

// FuzzDeadline: for any start, instant and budget, Remaining is the budget less the time passed
// (none when the clock went backwards), within [0, Budget], computed exactly.
func FuzzDeadline(f *testing.F) {
	f.Add(int64(0), int64(time.Second), int64(2*time.Second))
	f.Add(int64(-1), int64(math.MaxInt64), int64(time.Second))
	f.Add(int64(math.MinInt64), int64(math.MaxInt64), int64(math.MaxInt64))
	f.Add(int64(1), int64(math.MinInt64), int64(0))
	f.Fuzz(func(t *testing.T, start, now, budget int64) {
		d := NewDeadline(time.Duration(budget), start)
		left, ok := d.Remaining(now)
		if budget <= 0 {
			if ok || left != 0 || d.Expired(now) {
				t.Fatalf("no budget (%d): Remaining = %d, %v, Expired %v", budget, left, ok, d.Expired(now))
			}
			return
		}
		passed := new(big.Int).Sub(big.NewInt(now), big.NewInt(start))
		want := new(big.Int).Sub(big.NewInt(budget), passed)
		if passed.Sign() < 0 {
			want.SetInt64(budget)
		} else if want.Sign() < 0 {
			want.SetInt64(0)
		}
		if !ok || int64(left) != want.Int64() || d.Expired(now) != (left == 0) {
			t.Fatalf("budget %d from %d, at %d: Remaining = %d, %v; want %v", budget, start, now, left, ok, want)
		}
	})
}
