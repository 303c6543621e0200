package rate

import (
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// sweepRates are ordinary and awkward rates: intervals that round up, down and not at all.
var sweepRates = []float64{6, 7, 600, 1500, 1.0 / 3, 1, 3, 10, 1000, 1e6, 6e8, 999_999_999, 1e9,
	1e-3, 2.5e-10, 1.1e-10, 7.77, 123456.789}

// sweepBursts are int64 so that the list builds on 32-bit targets, which skip those over an int.
var sweepBursts = []int64{1, 2, 3, 7, 10, 99, 1e6, 1e10, MaxBurst}

// admitAtOnce counts the one-token calls take grants at one instant, taking most of a large burst
// in one call first so a burst of 2^53 is counted without 2^53 calls.
func admitAtOnce(t *testing.T, want int, take func(n int) bool) int {
	t.Helper()
	got := 0
	if want > 64 {
		if !take(want - 8) {
			t.Errorf("a full bucket refused %v of its %v tokens", want-8, want)
			return 0
		}
		got = want - 8
	}
	for i := 0; i < 80 && take(1); i++ {
		got++
	}
	return got
}

// TestBucketFullBurstSweep: a full bucket admits burst calls at once, at every rate, for the pure
// Bucket and the BucketLimiter alike, at instants across the int64 range; and after that, the
// limiter's first refill comes after exactly the wait it reports.
func TestBucketFullBurstSweep(t *testing.T) {
	for _, rate := range sweepRates {
		for _, burst64 := range sweepBursts {
			burst := int(burst64)
			if int64(burst) != burst64 {
				continue // over a 32-bit int
			}
			want := burst
			for _, start := range []int64{0, -5e18, 1_700_000_000_000_000_000, math.MinInt64} {
				b, err := NewBucket(rate, burst, start)
				if err != nil {
					t.Fatalf("NewBucket(%v, %v): %v", rate, burst, err)
				}
				if got := admitAtOnce(t, want, func(n int) bool { ok, _ := b.TakeAt(start, n); return ok }); got != want {
					t.Errorf("Bucket(%v, %v) at %d: a full bucket admitted %v, want %v", rate, burst, start, got, want)
				}

				now := start
				l, err := NewBucketLimiter(rate, burst, WithClock(func() int64 { return now }))
				if err != nil {
					t.Fatalf("NewBucketLimiter(%v, %v): %v", rate, burst, err)
				}
				allow := func(n int) bool {
					if n == 1 {
						return l.Allow()
					}
					ok, _ := l.TakeAt(now, n)
					return ok
				}
				if got := admitAtOnce(t, want, allow); got != want {
					t.Errorf("BucketLimiter(%v, %v) at %d: a full bucket admitted %v, want %v", rate, burst, start, got, want)
				}
				ok, wait := l.TakeAt(now, 1)
				if pure := b.Next(start, 1); ok || wait != pure {
					t.Fatalf("BucketLimiter(%v, %v): drained, TakeAt = %v %v, the Bucket's wait %v", rate, burst, ok, wait, pure)
				}
				// The refill of one token, to within a unit of the grid: 1 to 2 ns, coarser only for
				// a bucket that takes longer than 2^62 ns to fill (a token is at most 2^62/burst units),
				// whose rate is held to fewer bits (1 part in mul).
				every := 1e9 / rate
				unit := every / float64(l.one)
				if float64(start)+every >= math.MaxInt64 {
					if wait != Forever {
						t.Errorf("BucketLimiter(%v, %v) at %d: a refill past the end of the range waits %v", rate, burst, start, wait)
					}
					continue
				}
				if d := math.Abs(float64(wait) - every); wait == Forever || d > unit+1+every*1e-15+every/float64(l.mul) || float64(burst)*every < 0x1p62 && unit > 2 {
					t.Errorf("BucketLimiter(%v, %v): refill in %v, a token's time is %v ns", rate, burst, wait, every)
					continue
				}
				now = start + int64(wait) - 1
				if l.Allow() {
					t.Errorf("BucketLimiter(%v, %v): admitted 1 ns before the wait it reported", rate, burst)
				}
				now++
				if !l.Allow() {
					t.Errorf("BucketLimiter(%v, %v): refused at the end of the wait it reported", rate, burst)
				}
			}
		}
	}
}

// TestBucketOverflow: parameters and instants at the edges never flip a bucket to admitting
// everything or refusing everything, and waits stay within [0, Forever].
func TestBucketOverflow(t *testing.T) {
	for _, c := range []struct {
		rate  float64
		burst int64
		field string
	}{
		{2e9, 1, "rate"}, // more than a token a nanosecond
		{1e9 + 1e-6, 1, "rate"},
		{math.Inf(1), 1, "rate"},
		{-1e-300, 1, "rate"},
		{1, MaxBurst * 2, "burst"},
		{1, 0, "burst"},
		{1, -1, "burst"},
	} {
		if int64(int(c.burst)) != c.burst {
			continue // over a 32-bit int
		}
		_, err := NewBucketLimiter(c.rate, int(c.burst))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.field) {
			t.Errorf("NewBucketLimiter(%v, %v) = %v, want an error naming %s", c.rate, c.burst, err, c.field)
		}
		_, err = NewBucket(c.rate, int(c.burst), 0)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.field) {
			t.Errorf("NewBucket(%v, %v) = %v, want an error naming %s", c.rate, c.burst, err, c.field)
		}
	}
	// Fill times past the clock's range build: a token every 317 years, a burst of 1e10 at 1/s.
	for _, c := range []struct {
		rate  float64
		burst int64
	}{{1e-10, 1}, {1, 1e10}, {1e-10, MaxBurst}} {
		if int64(int(c.burst)) != c.burst {
			continue
		}
		if _, err := NewBucketLimiter(c.rate, int(c.burst)); err != nil {
			t.Errorf("NewBucketLimiter(%v, %v): %v", c.rate, c.burst, err)
		}
	}
	if over := int64(MaxBurst * 2); int64(int(over)) == over {
		if _, err := NewBucket(1, int(over), 0); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "burst") {
			t.Errorf("NewBucket with a burst over 2^53: %v", err)
		}
	}

	// The pure bucket takes any finite rate: the wait saturates at Forever, never wraps negative.
	for _, rate := range []float64{1e-10, 1e-300, math.SmallestNonzeroFloat64} {
		b, _ := NewBucket(rate, 1, 0)
		first, _ := b.TakeAt(0, 1)
		second, wait := b.TakeAt(0, 1)
		if !first || second || wait != Forever {
			t.Fatalf("rate %v: a bucket of one", rate)
		}
		if w := b.Next(0, 1); w != Forever {
			t.Errorf("rate %v: Next = %v, want Forever", rate, w)
		}
		if g := b.Step(0, Tokens{}, 1); g.Granted || g.Wait != Forever {
			t.Errorf("rate %v: Step = %+v, want a wait of Forever", rate, g)
		}
	}
	b, _ := NewBucket(1, 1, 0)
	if big := int64(1e10); int64(int(big)) == big { // the pure bucket holds a burst the limiter cannot time
		b, _ = NewBucket(1, int(big), 0)
		all, _ := b.TakeAt(0, int(big))
		one, _ := b.TakeAt(0, 1)
		if !all || one || b.Next(0, 1) != time.Second {
			t.Error("a bucket of 1e10 at rate 1")
		}
	}

	// A state stamped at the start of the range is full at its end: 2^64-1 ns have passed.
	if g := b.Step(math.MaxInt64, Tokens{Stamp: math.MinInt64}, 1); !g.Granted {
		t.Errorf("MinInt64 to MaxInt64 did not refill: %+v", g)
	}

	// The limiter near the ends of the range: never more than the burst at once.
	for _, now := range []int64{math.MaxInt64, math.MaxInt64 - 10, math.MaxInt64 - 3e9, math.MinInt64, math.MinInt64 + 1} {
		at := now
		l, _ := NewBucketLimiter(1, 2, WithClock(func() int64 { return at }))
		admitted := 0
		for i := 0; i < 100; i++ {
			if l.Allow() {
				admitted++
			}
		}
		if admitted > 2 {
			t.Errorf("at %d: %d admitted by a bucket of 2", now, admitted)
		}
		if now < 0 && admitted != 2 {
			t.Errorf("at %d: %d admitted by a full bucket of 2", now, admitted)
		}
		if ok, w := l.TakeAt(now, 1); ok || w < 1 {
			t.Errorf("at %d: TakeAt = %v %v", now, ok, w)
		}
	}
	// At a token a nanosecond the units are nanoseconds: at the very end of the range no call
	// fits, and the refusal waits Forever, never 0.
	for _, now := range []int64{math.MaxInt64, math.MaxInt64 - 1} {
		b, _ := NewBucket(1e9, 4, now)
		l, _ := NewBucketLimiter(1e9, 4, WithClock(func() int64 { return now }))
		ok, wait := b.TakeAt(now, 2)
		lok, lwait := l.TakeAt(now, 2)
		if ok || wait != Forever || lok != ok || lwait != wait || b.Next(now, 2) != Forever {
			t.Errorf("rate 1e9 at %d: Take %v %v, TakeAt %v %v, want refused, Forever", now, ok, wait, lok, lwait)
		}
	}
	// A clock that jumps between the ends of the range. A jump forwards finds the bucket full
	// (time passed); a jump back of more than MaxSkew pulls the TAT back to the instant, empty
	// there; MaxInt64-2e9 is a stale reading of MaxInt64, a token short. So each cycle admits at
	// MaxInt64 and at 5e18, the first also at MinInt64, never two at one instant, and nothing on
	// a jump back.
	at := int64(math.MinInt64)
	l, _ := NewBucketLimiter(1, 1, WithClock(func() int64 { return at }))
	admitted := 0
	for i := 0; i < 100; i++ {
		prev := at
		at = []int64{math.MinInt64, math.MaxInt64, math.MaxInt64 - 2e9, -5e18, 5e18}[i%5]
		allowed := l.Allow()
		ok, w := l.TakeAt(at, 1)
		if allowed && ok {
			t.Fatalf("at %d: two admitted at once by a bucket of one", at)
		}
		if !ok && w < 1 {
			t.Fatalf("at %d: a wait of %v", at, w)
		}
		if (allowed || ok) && i > 0 && skewed(prev, at) {
			t.Fatalf("at %d: admitted on a jump back from %d", at, prev)
		}
		if allowed || ok {
			admitted++
		}
		if tok := l.TokensAt(at); tok < 0 || tok > 1 {
			t.Fatalf("at %d: %v tokens", at, tok)
		}
	}
	if admitted != 41 {
		t.Errorf("%d admitted by a bucket of one across 100 jumps, want 41", admitted)
	}
}

// TestSlidingOutOfOrder: quota 2 per 10 ns, calls at 0, 1, 11, 2: the call at 2 would put three
// events in [0, 10), so it is refused.
func TestSlidingOutOfOrder(t *testing.T) {
	s, _ := NewSliding(2, 10)
	runSliding(t, s, []slidingStep{
		{0, true, 1, 0},
		{1, true, 0, 9},
		{11, true, 1, 0},  // 0 and 1 are out at 11: a window has passed since each
		{2, false, 0, 9},  // 0, 1 and 2 would be three in [0, 10): refused
		{12, true, 0, 9},  // in order: 11 and 12 in [3, 13)
		{21, true, 0, 1},  // 11 is out at 21; 12 is in for 1 ns more
		{3, false, 0, 19}, // far behind: until 12 is out of the window at 3's clock
	})

	// A late call that keeps the promise is admitted at its own instant, and Release takes back
	// the newest event at or before its instant.
	s, _ = NewSliding(3, 10)
	for i, c := range []struct {
		now int64
		ok  bool
	}{{0, true}, {20, true}, {15, true}, {5, false}, {30, true}, {25, true}, {26, false}, {19, false}} {
		if got, _ := s.TakeAt(c.now, 1); got != c.ok {
			t.Fatalf("late step %d: Take(%d) = %v, want %v", i, c.now, got, c.ok)
		}
	}
	s.Release(27) // takes back 25, not 30
	if ok, _ := s.TakeAt(26, 1); !ok || s.Acquire(27) {
		t.Fatal("Release did not take back the newest event at or before its instant")
	}
	s.Release(-1)        // nothing at or before -1
	if s.Left(35) != 1 { // 20, 26, 30 held: 26 and 30 in the window at 35
		t.Fatalf("Left(35) = %d, want 1", s.Left(35))
	}
}

// checkWindows fails if more than quota of the instants lie in some window-long stretch.
func checkWindows(t *testing.T, admitted []int64, quota int, window int64) {
	t.Helper()
	slices.Sort(admitted)
	j := 0
	for i, a := range admitted {
		for since(a, admitted[j]) >= uint64(window) {
			j++
		}
		if i-j+1 > quota {
			t.Fatalf("%d admissions in [%d, %d], a window of %d holds at most %d", i-j+1, admitted[j], a, window, quota)
		}
	}
}

// TestSlidingPromise drives windows with instants that mostly move forwards and sometimes jump
// back, and checks the promise over every admission kept, Left and Next against Take, and that an
// instant at or after every admission is judged exactly.
func TestSlidingPromise(t *testing.T) {
	x := uint64(0x9e3779b97f4a7c15)
	rnd := func(n int64) int64 { x ^= x << 13; x ^= x >> 7; x ^= x << 17; return int64(x % uint64(n)) }
	for _, c := range []struct {
		quota  int
		window int64
	}{{1, 10}, {2, 10}, {3, 100}, {5, 7}, {20, 1000}} {
		s, _ := NewSliding(c.quota, time.Duration(c.window))
		var kept []int64
		now, newest := int64(0), int64(math.MinInt64)
		for i := 0; i < 20000; i++ {
			now += rnd(c.window/2+2) - c.window/8
			if rnd(10) == 0 {
				now -= rnd(2 * c.window)
			}
			if rnd(20) == 0 {
				s.Release(now)
				if j := slices.IndexFunc(kept, func(k int64) bool { return k <= now }); j >= 0 {
					best := j
					for k := range kept {
						if kept[k] <= now && kept[k] > kept[best] {
							best = k
						}
					}
					kept = slices.Delete(kept, best, best+1)
				}
				continue
			}
			left, next := s.Left(now), s.Next(now, 1)
			ok, wait := s.TakeAt(now, 1)
			if (left > 0) != ok || wait != next || next < 0 || (now >= newest && next > time.Duration(c.window)) {
				t.Fatalf("Take(%d) = %v, but Left = %d, Next = %v", now, ok, left, next)
			}
			if now >= newest { // in order: exactly the live count
				live := 0
				for _, k := range kept {
					if !s.out(k, now) {
						live++
					}
				}
				if want := live < c.quota; ok != want {
					t.Fatalf("in order at %d: Take = %v with %d live of %d", now, ok, live, c.quota)
				}
			}
			if ok {
				kept = append(kept, now)
				newest = max(newest, now)
			}
			if i%500 == 0 {
				checkWindows(t, slices.Clone(kept), c.quota, c.window)
			}
		}
		checkWindows(t, kept, c.quota, c.window)
	}
}

// TestSlidingLimiterStress: many goroutines read one clock that moves forwards a microsecond a
// reading and every fifth reading jumps up to 22 µs back, and call Acquire with their reading
// (what Allow does) on a window of 5 per 10 µs. Readings reach the lock out of order; the
// admissions still hold at most 5 in any 10 µs.
func TestSlidingLimiterStress(t *testing.T) {
	goroutines, calls := 1024, 300
	if testing.Short() {
		goroutines, calls = 64, 300
	}
	const quota, window = 5, 10 * time.Microsecond
	var tick atomic.Int64
	clock := func() int64 {
		n := tick.Add(1000)
		if n%5000 == 0 {
			return n - n%23*1000
		}
		return n
	}
	l, _ := NewSlidingLimiter(quota, window, WithClock(clock))
	admitted := make([][]int64, goroutines)
	together(goroutines, func(g int) {
		for i := 0; i < calls; i++ {
			now := l.clock()
			if l.Acquire(now) {
				admitted[g] = append(admitted[g], now)
			}
		}
	})
	all := slices.Concat(admitted...)
	if len(all) < quota {
		t.Fatalf("only %d admitted", len(all))
	}
	checkWindows(t, all, quota, int64(window))
	t.Logf("%d of %d admitted over %v of clock", len(all), goroutines*calls, time.Duration(tick.Load()))
}

// together runs f in n goroutines released at once by a start barrier, and waits for them all.
func together(n int, f func(g int)) {
	var start, done sync.WaitGroup
	start.Add(1)
	for g := 0; g < n; g++ {
		done.Add(1)
		go func() {
			defer done.Done()
			start.Wait()
			f(g)
		}()
	}
	start.Done()
	done.Wait()
}

// TestSlidingBounds: the quota is bounded by the memory a window keeps.
func TestSlidingBounds(t *testing.T) {
	for _, q := range []int{math.MaxInt, MaxSlidingQuota + 1, -1, math.MinInt} {
		if _, err := NewSliding(q, time.Second); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "quota") {
			t.Errorf("NewSliding(%d): %v", q, err)
		}
		if _, err := NewSlidingLimiter(q, time.Second); !errors.Is(err, ErrInvalid) {
			t.Errorf("NewSlidingLimiter(%d): %v", q, err)
		}
	}
	if s, err := NewSliding(MaxSlidingQuota, time.Duration(math.MaxInt64)); err != nil || s.Quota() != MaxSlidingQuota {
		t.Fatalf("NewSliding(MaxSlidingQuota): %v", err)
	}
	// Instants at the ends of the range are a window apart however long the window.
	s, _ := NewSliding(1, time.Duration(math.MaxInt64))
	// The last is more than MaxSkew behind the newest event: the window is pulled back to it, full.
	if !s.Acquire(math.MinInt64) || s.Acquire(-2) || !s.Acquire(math.MaxInt64) || s.Acquire(math.MinInt64) {
		t.Error("a window of MaxInt64 at the ends of the range")
	}
	if w := s.Next(math.MinInt64, 1); w != Forever {
		t.Errorf("Next a window of MaxInt64 after a pull back = %v, want Forever", w)
	}
	// A clock jumping between 5e18 and -5e18: each jump forwards finds the window empty (an hour
	// passed), each jump back finds it pulled back, full: one admitted per jump forwards.
	s, _ = NewSliding(1, time.Hour)
	admitted := 0
	for i := 0; i < 10; i++ {
		if s.Acquire([]int64{5e18, -5e18}[i%2]) {
			admitted++
		}
	}
	if admitted != 5 {
		t.Errorf("a clock jumping between 5e18 and -5e18: %d admitted, want 5", admitted)
	}
}

// TestPeriodExtremes: a clock that jumps across the range neither reopens a period early nor
// wraps an aligned start round.
func TestPeriodExtremes(t *testing.T) {
	p, _ := NewPeriod(1, time.Hour, false)
	l, _ := NewPeriodLimiter(1, time.Hour, false)
	// Each jump forwards opens a new period (an hour passed); each jump back pulls the open period
	// back to the instant, spent: one admitted each per jump forwards, none on a jump back.
	admitted := 0
	for i := 0; i < 10; i++ {
		now := []int64{5e18, -5e18}[i%2]
		if ok, w := p.TakeAt(now, 1); ok {
			admitted++
		} else if w < 1 || w > time.Hour {
			t.Fatalf("Take(%d) refused with a wait of %v", now, w)
		}
		if l.TakeQuota(now) != Over {
			admitted++
		}
		if w := p.Reset(now); w < 0 || w > time.Hour {
			t.Fatalf("Reset(%d) = %v", now, w)
		}
	}
	if admitted != 10 {
		t.Errorf("a clock jumping between 5e18 and -5e18: %d admitted, want 10 (five each)", admitted)
	}
	a, _ := NewPeriod(2, 10, true)
	if g := a.Step(math.MinInt64+1, Usage{}, 1); !g.Granted || g.State.Start != math.MinInt64 {
		t.Fatalf("aligned at MinInt64+1: %+v", g)
	}
	if a.TakeQuota(math.MinInt64+1) != Under || a.TakeQuota(math.MinInt64+2) != Hit || a.TakeQuota(math.MinInt64+3) != Over {
		t.Fatal("an aligned period at the start of the range")
	}
	if a.TakeQuota(math.MaxInt64) != Under || a.TakeQuota(math.MaxInt64) != Hit || a.TakeQuota(math.MaxInt64) != Over || a.Reset(math.MaxInt64) != 3 {
		t.Fatalf("an aligned period at the end of the range: Reset = %v", a.Reset(math.MaxInt64))
	}
}
