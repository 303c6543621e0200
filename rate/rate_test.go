package rate

import (
	"errors"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wardgo/ward"
	"github.com/wardgo/ward/internal/testkit"
)

const ms = int64(time.Millisecond)

func TestBucketTrace(t *testing.T) {
	b, err := NewBucket(10, 20, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		if ok, _ := b.TakeAt(0, 1); !ok {
			t.Fatalf("take %d of a full bucket of 20 refused", i+1)
		}
	}
	steps := []struct {
		now  int64
		n    int
		ok   bool
		next time.Duration // Next(now, 1) after the take
	}{
		{0, 1, false, 100 * time.Millisecond},
		{50 * ms, 1, false, 50 * time.Millisecond},
		{100 * ms, 1, true, 100 * time.Millisecond}, // exactly one token at 100 ms
		{150 * ms, -5, true, 50 * time.Millisecond}, // negative costs nothing
		{150 * ms, 0, true, 50 * time.Millisecond},
		{100 * ms, 1, false, 100 * time.Millisecond}, // backwards: adds nothing, takes nothing (the token is due at 200 ms)
		{2100 * ms, 20, true, 100 * time.Millisecond},
		{2100 * ms, 21, false, 100 * time.Millisecond}, // more than the burst: never
	}
	for i, s := range steps {
		want := b.Next(s.now, s.n)
		if got, wait := b.TakeAt(s.now, s.n); got != s.ok || wait != want || got != (wait == 0) {
			t.Fatalf("step %d: Take(%v, %v) = %v %v, want %v %v (tokens %v)", i, time.Duration(s.now), s.n, got, wait, s.ok, want, b.TokensAt(s.now))
		}
		if got := b.Next(s.now, 1); got != s.next {
			t.Fatalf("step %d: Next = %v, want %v", i, got, s.next)
		}
	}
	if got := b.Next(0, 21); got != Forever {
		t.Fatalf("Next(21) over a burst of 20 = %v, want Forever", got)
	}
	b.Release(2100 * ms)
	if got, left := b.TokensAt(2100*ms), b.Left(2100*ms); got != 1 || left != 1 {
		t.Fatalf("after a release: %v tokens (Left %d), want 1", got, left)
	}
}

func TestBucketStep(t *testing.T) {
	b, _ := NewBucket(10, 20, 0)
	stored := b.Opening(0) // what a key that is not in the store starts as
	g := b.Step(0, stored, 1)
	if !g.Granted || g.State.Tokens != 19 || g.Wait != 0 {
		t.Fatalf("Step from the opening = %+v, want granted, 19 tokens", g)
	}
	g = b.Step(0, Tokens{Tokens: 0.5, Stamp: 0}, 1)
	if g.Granted || g.Wait != 50*time.Millisecond {
		t.Fatalf("Step short of a token = %+v, want a 50ms wait", g)
	}
	for _, bad := range []Tokens{{Tokens: math.NaN()}, {Tokens: -3}, {Tokens: 1e9}, {Tokens: math.Inf(1)}} {
		g := b.Step(0, bad, 0)
		if math.IsNaN(g.State.Tokens) || g.State.Tokens < 0 || g.State.Tokens > 20 {
			t.Fatalf("Step from a corrupt state %+v gave %+v", bad, g.State)
		}
	}
	for _, c := range []struct {
		rate  float64
		burst int
		field string
	}{{-1, 1, "rate"}, {math.NaN(), 1, "rate"}, {math.Inf(1), 1, "rate"}, {1, -1, "burst"}, {1, 0, "burst"}} {
		_, err := NewBucket(c.rate, c.burst, 0)
		if !errors.Is(err, ErrInvalid) || !errors.Is(err, ward.ErrInvalid) || !strings.Contains(err.Error(), c.field) {
			t.Errorf("NewBucket(%v, %v): %v, want an error naming %s", c.rate, c.burst, err, c.field)
		}
	}
	b0, _ := NewBucket(0, 2, 0)
	if ok, _ := b0.TakeAt(0, 2); !ok {
		t.Errorf("a rate-0 bucket refused its burst")
	}
	if ok, wait := b0.TakeAt(time.Hour.Nanoseconds(), 1); ok || wait != Forever || b0.Next(0, 1) != Forever {
		t.Errorf("a rate-0 bucket refilled")
	}
}

func FuzzBucketStep(f *testing.F) {
	f.Add(10.0, 20, 5.0, int64(0), int64(100), 1)
	f.Add(0.0, 1, math.NaN(), int64(5), int64(-5), -1)
	f.Add(1.0, 3, 2.0, int64(2e18), int64(0), 1) // a stamp of another origin: pulled back, empty
	f.Fuzz(func(t *testing.T, rate float64, burst int, tokens float64, stamp, now int64, n int) {
		b, err := NewBucket(math.Abs(rate), burst, 0)
		if err != nil {
			return
		}
		g := b.Step(now, Tokens{Tokens: tokens, Stamp: stamp}, n)
		if s := g.State.Tokens; math.IsNaN(s) || s < 0 || s > float64(b.Burst()) {
			t.Fatalf("tokens %v outside [0, %v]", s, b.Burst())
		}
		if g.Wait < 0 || (g.Granted && g.Wait != 0) {
			t.Fatalf("wait %v (granted %v)", g.Wait, g.Granted)
		}
		if skewed(stamp, now) {
			if g.State.Stamp != now || g.Granted != (cost(n) == 0) {
				t.Fatalf("a stamp %d far after %d: Step gave %+v, want pulled back to now, empty", stamp, now, g)
			}
		} else if g.State.Stamp < stamp {
			t.Fatalf("stamp went back from %d to %d", stamp, g.State.Stamp)
		}
	})
}

// slidingStep is a row of a Sliding trace: Take(now) gives ok, and after it Left and Next give
// left and next.
type slidingStep struct {
	now  int64
	ok   bool
	left int
	next time.Duration
}

// runSliding plays the steps on s; before each Take, Left and Next must agree with it.
func runSliding(t *testing.T, s *Sliding, steps []slidingStep) {
	t.Helper()
	for i, c := range steps {
		left, next := s.Left(c.now), s.Next(c.now, 1)
		if got, wait := s.TakeAt(c.now, 1); got != c.ok || wait != next {
			t.Fatalf("step %d: Take(%v) = %v %v, want %v %v", i, time.Duration(c.now), got, wait, c.ok, next)
		}
		if (left > 0) != c.ok || (next == 0) != c.ok {
			t.Fatalf("step %d: before the take Left = %d, Next = %v, but Take = %v", i, left, next, c.ok)
		}
		if got := s.Left(c.now); got != c.left {
			t.Fatalf("step %d: Left = %d, want %d", i, got, c.left)
		}
		if got := s.Next(c.now, 1); got != c.next {
			t.Fatalf("step %d: Next = %v, want %v", i, got, c.next)
		}
	}
}

func TestSlidingTrace(t *testing.T) {
	s, _ := NewSliding(3, time.Second)
	runSliding(t, s, []slidingStep{
		{0, true, 2, 0},
		{100 * ms, true, 1, 0},
		{200 * ms, true, 0, 800 * time.Millisecond},
		{999 * ms, false, 0, time.Millisecond},
		{1000 * ms, true, 0, 100 * time.Millisecond}, // the 0 ms event is exactly a window old: out
		{500 * ms, false, 0, 600 * time.Millisecond}, // backwards
		{5000 * ms, true, 2, 0},
	})
	s.Release(5000 * ms)
	if s.Left(5000*ms) != 3 {
		t.Fatal("Release did not take back the newest event")
	}
	if _, err := NewSliding(0, time.Second); !errors.Is(err, ErrInvalid) {
		t.Error("quota 0 accepted")
	}
	if _, err := NewSliding(1, 0); !errors.Is(err, ErrInvalid) {
		t.Error("window 0 accepted")
	}
}

func TestPeriodTrace(t *testing.T) {
	p, _ := NewPeriod(3, time.Second, false)
	for i, c := range []struct {
		now  int64
		q    Quota
		left int
		next time.Duration
	}{
		{300 * ms, Under, 2, time.Second}, // opens at the first event
		{400 * ms, Under, 1, 900 * time.Millisecond},
		{500 * ms, Hit, 0, 800 * time.Millisecond},
		{1299 * ms, Over, 0, time.Millisecond},
		{1300 * ms, Under, 2, time.Second}, // exactly a period later: a new one
		{100 * ms, Under, 1, time.Second},  // backwards: counted in the open period, Next held to it
	} {
		if got := p.TakeQuota(c.now); got != c.q {
			t.Fatalf("step %d: TakeQuota(%v) = %v, want %v", i, time.Duration(c.now), got, c.q)
		}
		if got := p.Left(c.now); got != c.left {
			t.Fatalf("step %d: Left = %d, want %d", i, got, c.left)
		}
		if got := p.Reset(c.now); got != c.next {
			t.Fatalf("step %d: Reset = %v, want %v", i, got, c.next)
		}
		if got, want := p.Next(c.now, 1), map[bool]time.Duration{true: 0, false: c.next}[c.left > 0]; got != want {
			t.Fatalf("step %d: Next = %v, want %v", i, got, want)
		}
	}
	if p.Reset(10*int64(time.Second)) != 0 {
		t.Fatal("Reset with no open period is not 0")
	}
	if ok, wait := p.TakeAt(10*int64(time.Second), 2); !ok || wait != 0 || p.Left(10*int64(time.Second)) != 1 {
		t.Fatal("Take of 2 in a fresh period of 3")
	}
	if ok, wait := p.TakeAt(10*int64(time.Second)+ms, 2); ok || wait != time.Second-time.Millisecond {
		t.Fatalf("Take of 2 with 1 left = %v %v, want a wait until the period ends", ok, wait)
	}
	if ok, wait := p.TakeAt(10*int64(time.Second), 4); ok || wait != Forever || p.Next(0, 4) != Forever {
		t.Fatal("more than the quota is not Forever")
	}
	a, _ := NewPeriod(2, time.Second, true)
	if a.TakeQuota(1700*ms) != Under || a.Reset(1700*ms) != 300*time.Millisecond || a.TakeQuota(1999*ms) != Hit || a.TakeQuota(2000*ms) != Under {
		t.Fatal("an aligned period does not reset on the multiple of the period")
	}
	if g := a.Step(-1, a.Opening(0), 1); !g.Granted || g.State.Start != -int64(time.Second) {
		t.Fatalf("an aligned period before 0 opens at %d", g.State.Start)
	}
	a.Release(2000 * ms)
	if a.Left(2000*ms) != 2 {
		t.Fatal("Release did not take back the event")
	}
}

func FuzzPeriodStep(f *testing.F) {
	f.Add(3, int64(time.Second), true, int64(5), 2, true, int64(7))
	f.Fuzz(func(t *testing.T, quota int, period int64, align bool, start int64, count int, open bool, now int64) {
		p, err := NewPeriod(quota%1000, time.Duration(period), align)
		if err != nil {
			return
		}
		n := 1 + count&1 // one or two events
		g := p.Step(now, Usage{Start: start, Count: count, Open: open}, n)
		u := g.State
		if !u.Open && n <= p.Quota() || (g.Granted && (u.Count < n || u.Count > p.Quota())) {
			t.Fatalf("Step gave %+v", g)
		}
		if g.Granted != (g.Wait == 0) || g.Wait < 0 || g.Wait > time.Duration(period) && g.Wait != Forever {
			t.Fatalf("Step gave a wait of %v (granted %v)", g.Wait, g.Granted)
		}
	})
}

func TestGate(t *testing.T) {
	g, err := NewGate(2)
	if err != nil {
		t.Fatal(err)
	}
	first, second, third := g.Enter(), g.Enter(), g.Enter()
	if !first || !second || third || g.Held() != 2 {
		t.Fatal("a gate of 2")
	}
	g.Leave()
	g.Leave()
	g.Leave() // empty: nothing goes negative
	if g.Held() != 0 || !g.Enter() {
		t.Fatal("leave on an empty gate corrupted it")
	}
	var open Gate
	for i := 0; i < 1000; i++ {
		if !open.Enter() {
			t.Fatal("the zero Gate has a ceiling")
		}
	}
	if _, err := NewGate(-1); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "limit") {
		t.Fatalf("NewGate(-1): %v, want an error naming the limit", err)
	}
}

func TestChained(t *testing.T) {
	b, _ := NewBucket(0, 5, 0)
	g, _ := NewGate(1)
	c := Chain(b, g)
	if !c.Acquire(0) {
		t.Fatal("refused with room in both")
	}
	if c.Acquire(0) {
		t.Fatal("admitted past the gate")
	}
	if got := b.TokensAt(0); got != 4 {
		t.Fatalf("the bucket kept the refused call's token: %v left, want 4", got)
	}
	c.Release(0)
	if g.Held() != 0 || b.TokensAt(0) != 5 {
		t.Fatal("Release did not give back both")
	}
}

func TestPartitioned(t *testing.T) {
	made := 0
	p, err := NewPartitioned(3, func(string) *Bucket { made++; b, _ := NewBucket(0, 1, 0); return b })
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b", "c"} {
		if !p.Acquire(k, 0) || p.Acquire(k, 0) {
			t.Fatalf("key %s: a bucket of one", k)
		}
	}
	p.Acquire("a", 0) // a is now the most recently used
	if !p.Acquire("d", 0) || p.Len() != 3 {
		t.Fatal("a fourth key not admitted, or the table grew past 3")
	}
	if !p.Acquire("b", 0) { // b was the least recently used: dropped, made fresh
		t.Fatal("the least recently used key was not dropped")
	}
	if p.Acquire("a", 0) {
		t.Fatal("a recently used key was dropped")
	}
	if made != 5 {
		t.Fatalf("%d limiters made, want 5", made)
	}
	if a := testing.AllocsPerRun(1000, func() { p.Acquire("a", 0) }); a != 0 {
		t.Fatalf("a known key allocates %v", a)
	}
	if _, err := NewPartitioned[*Bucket](0, nil); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "make") {
		t.Fatal("a nil constructor accepted")
	}
	gate := func(string) *Gate { g, _ := NewGate(1); return g }
	if _, err := NewPartitioned(-1, gate); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "max") {
		t.Fatalf("NewPartitioned(-1): %v, want an error naming max", err)
	}
	big, _ := NewPartitioned(0, gate)
	if n := len(big.shards); n < 2 || DefaultPartitions/n < 64 {
		t.Fatalf("%d shards for the default size", n)
	}
}

// TestLimitersRun is the seeds' "limiters" run: a burst of forty calls every two seconds,
// straddling the second boundary, through a bucket, a sliding window and a period of twenty a
// second: 21, 20 and 40 pass per burst.
func TestLimitersRun(t *testing.T) {
	got := limitersRun(4)
	for i, row := range got {
		if row != [3]int{21, 20, 40} {
			t.Fatalf("burst %d: bucket/sliding/period passed %v, want [21 20 40]", i, row)
		}
	}
}

func limitersRun(bursts int) [][3]int {
	bucket, _ := NewBucket(20, 20, 0)
	sliding, _ := NewSliding(20, time.Second)
	period, _ := NewPeriod(20, time.Second, true)
	var out [][3]int
	for b := 0; b < bursts; b++ {
		var row [3]int
		for i := 0; i < 40; i++ {
			now := int64(b)*2*int64(time.Second) + 970*ms + int64(i)*1500*int64(time.Microsecond)
			if ok, _ := bucket.TakeAt(now, 1); ok {
				row[0]++
			}
			if ok, _ := sliding.TakeAt(now, 1); ok {
				row[1]++
			}
			if ok, _ := period.TakeAt(now, 1); ok {
				row[2]++
			}
		}
		out = append(out, row)
	}
	return out
}

// TestSimNoOverAdmission: 1024 goroutines against each concurrent limiter, a shared clock moving
// 1 µs a read. Admitted never passes what the limit allows over the clock's span (x/time/rate
// over-admits 1.2-8× here, golang/go#71360).
func TestSimNoOverAdmission(t *testing.T) {
	testkit.SkipRace(t)
	const goroutines, calls = 1024, 1000
	var tick atomic.Int64
	clock := func() int64 { return tick.Add(1000) }
	run := func(allow func() bool) int64 {
		var admitted atomic.Int64
		together(goroutines, func(int) {
			for i := 0; i < calls; i++ {
				if allow() {
					admitted.Add(1)
				}
			}
		})
		return admitted.Load()
	}
	tick.Store(0)
	b, _ := NewBucketLimiter(1000, 50, WithClock(clock))
	got := run(b.Allow)
	span := float64(tick.Load()) / 1e9
	if limit := 50 + 1000*span; float64(got) > limit+1 {
		t.Errorf("bucket admitted %d over %.3fs, more than %.0f", got, span, limit)
	}
	t.Logf("bucket: %d admitted over %.3f s of clock (at most %.0f)", got, span, 50+1000*span)

	tick.Store(0)
	s, _ := NewSlidingLimiter(100, 100*time.Millisecond, WithClock(clock))
	got = run(s.Allow)
	span = float64(tick.Load()) / 1e9
	if windows := math.Ceil(span / 0.1); float64(got) > 100*windows {
		t.Errorf("sliding admitted %d over %.3fs, more than %.0f", got, span, 100*windows)
	}
	t.Logf("sliding: %d admitted over %.3f s of clock", got, span)

	tick.Store(0)
	p, _ := NewPeriodLimiter(100, 100*time.Millisecond, true, WithClock(clock))
	got = run(p.Allow)
	span = float64(tick.Load()) / 1e9
	if periods := math.Ceil(span/0.1) + 1; float64(got) > 100*periods {
		t.Errorf("period admitted %d over %.3fs, more than %.0f", got, span, 100*periods)
	}
	t.Logf("period: %d admitted over %.3f s of clock", got, span)
}

func TestBucketLimiter(t *testing.T) {
	now := int64(0)
	b, err := NewBucketLimiter(10, 2, WithClock(func() int64 { return now }))
	if err != nil {
		t.Fatal(err)
	}
	first, second, third := b.Allow(), b.Allow(), b.Allow()
	if !first || !second || third {
		t.Fatal("a burst of 2")
	}
	if ok, wait := b.TakeAt(0, 1); ok || wait != 100*time.Millisecond {
		t.Fatalf("TakeAt = %v %v, want a 100ms wait", ok, wait)
	}
	now = 100 * ms
	if !b.Allow() || b.Allow() {
		t.Fatal("one token per 100 ms")
	}
	if ok, wait := b.TakeAt(now, 3); ok || wait != Forever {
		t.Fatal("more than the burst")
	}
	b.Release(now)
	if got := b.TokensAt(now); got != 1 {
		t.Fatalf("after a release %v tokens", got)
	}
	b.Release(now)
	b.Release(now)
	if got := b.TokensAt(now); got != 2 {
		t.Fatalf("release past the burst: %v tokens", got)
	}
	if z, err := NewBucketLimiter(0, 2, WithClock(func() int64 { return now })); err != nil || !z.Allow() || !z.Allow() || z.Allow() {
		t.Fatalf("rate 0: a burst that never refills: %v", err)
	} else if now += int64(time.Hour); z.Allow() || z.Next(now, 1) != Forever || z.Left(now) != 0 {
		t.Fatal("rate 0 refilled")
	}
	if a := testing.AllocsPerRun(1000, func() { b.Allow() }); a != 0 {
		t.Fatalf("Allow allocates %v", a)
	}
}

func TestPeriodAndSlidingLimiters(t *testing.T) {
	now := int64(0)
	clk := WithClock(func() int64 { return now })
	p, _ := NewPeriodLimiter(2, time.Second, false, clk)
	if p.TakeQuota(now) != Under || p.TakeQuota(now) != Hit || p.TakeQuota(now) != Over || p.Left(now) != 0 {
		t.Fatal("period limiter of 2")
	}
	p.Release(now)
	if p.Left(now) != 1 || !p.Acquire(now) {
		t.Fatal("release")
	}
	now = int64(time.Second)
	if p.Left(now) != 2 || p.TakeQuota(now) != Under {
		t.Fatal("a new period")
	}
	s, _ := NewSlidingLimiter(1, time.Second, clk)
	if !s.Allow() || s.Allow() || s.Next(now, 1) != time.Second || s.Left(now) != 0 {
		t.Fatal("sliding limiter of 1")
	}
	s.Release(now)
	if s.Left(now) != 1 {
		t.Fatal("release")
	}
	if a := testing.AllocsPerRun(1000, func() { p.Allow(); s.Allow() }); a != 0 {
		t.Fatalf("allocates %v", a)
	}
}
