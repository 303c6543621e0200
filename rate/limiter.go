package rate

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wardgo/ward/internal/clock"
	"github.com/wardgo/ward/internal/stripe"
)

// Option configures a concurrent limiter of this package.
type Option func(*options)

type options struct{ clock func() int64 }

// WithClock replaces the clock: nanoseconds from any monotonic origin. For tests. A nil clock
// keeps the default.
func WithClock(now func() int64) Option {
	return func(o *options) {
		if now != nil {
			o.clock = now
		}
	}
}

func apply(opts []Option) options {
	o := options{clock: clock.Now}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// BucketLimiter is a token bucket safe for any number of goroutines, lock-free: GCRA, the
// generic cell rate algorithm, keeps the bucket as one word, the theoretical arrival time (TAT)
// of the next call, and a call is a compare-and-set on it. It starts full.
//
// It works in whole nanoseconds: a token's emission interval, 1e9/rate, is rounded up to a whole
// nanosecond (so the limiter never runs faster than rate; at rates near 1e9 a second the rounding
// shows: 6e8 a second runs at 5e8), and the burst is that interval times the burst, rounded down
// only below one interval. So a full BucketLimiter admits exactly floor(burst) calls at once, as a
// full [Bucket] does, at every rate it accepts, and after that one call per rounded interval.
//
// It never over-admits: a goroutine whose clock reading went stale while others moved the TAT
// sees less room, not more (golang.org/x/time/rate over-admits 1.2-8× with 1024 goroutines on two
// cores, golang/go#71360; TestSimNoOverAdmission shows this one does not). The TAT is an int64: a
// call whose TAT would pass math.MaxInt64 (an instant within burst/rate of the end of the clock's
// range) is refused with a wait of [Forever] rather than wrapped round. It must not be copied
// after first use.
type BucketLimiter struct {
	_     stripe.NoCopy
	_     [stripe.CacheLine]byte
	tat   atomic.Int64
	_     [stripe.CacheLine - 8]byte
	one   int64 // one token's emission interval, 1e9/rate rounded up: at least 1 ns
	tauNs int64 // how far ahead of now the TAT may run: span(burst)
	burst float64
	clock func() int64
}

// NewBucketLimiter returns a full bucket of rate tokens per second holding at most burst (under 1
// is raised to 1). rate must lie between about 1.08e-10 and 1e9 (a token every 292 years at most,
// every nanosecond at least), burst in [0, [MaxBurst]], and the time to fill an empty bucket,
// burst × 1e9/rate nanoseconds, must fit an int64 (about 292 years): past these bounds the
// arithmetic cannot be done in int64 nanoseconds, and the error names the field.
func NewBucketLimiter(rate, burst float64, opts ...Option) (*BucketLimiter, error) {
	every := 1e9 / rate
	if !(rate > 0) || !(every >= 1 && every < math.MaxInt64) {
		return nil, invalid("rate", rate, "in [1e9/MaxInt64, 1e9]: a token every 1 ns to every MaxInt64 ns")
	}
	if err := checkBurst(burst); err != nil {
		return nil, err
	}
	b := &BucketLimiter{one: int64(math.Ceil(every)), burst: max(burst, 1)}
	tau, ok := b.span(b.burst)
	if !ok {
		return nil, invalid("burst", burst, fmt.Sprintf("at most %.6g at rate %v: a fill time under MaxInt64 ns", math.MaxInt64/float64(b.one), rate))
	}
	b.tauNs = tau
	o := apply(opts)
	b.clock = o.clock
	b.tat.Store(o.clock())
	return b, nil
}

// span returns the nanoseconds n tokens take: whole tokens at exactly one interval each, a
// fraction of a token rounded down. It is monotone in n, so n tokens fit in a full bucket exactly
// when n <= burst. ok is false when the span does not fit an int64.
func (b *BucketLimiter) span(n float64) (ns int64, ok bool) {
	whole := math.Floor(n)
	frac := int64((n - whole) * float64(b.one)) // under one interval
	if whole > float64(math.MaxInt64/b.one) {   // whole <= MaxBurst, 2^53: the comparison is exact enough

		return 0, false
	}
	ns = int64(whole) * b.one
	if ns > math.MaxInt64-frac {
		return 0, false
	}
	return ns + frac, true
}

// Allow takes one token now.
func (b *BucketLimiter) Allow() bool {
	ok, _ := b.take(b.clock(), b.one)
	return ok
}

// take moves the TAT by inc (at most tauNs) if the bucket holds inc at now: the whole of a call,
// in integers, exact at any two instants however far apart. When it does not, wait is how long
// until it would: [Forever] when the TAT would pass math.MaxInt64.
func (b *BucketLimiter) take(now, inc int64) (ok bool, wait time.Duration) {
	room := uint64(b.tauNs - inc)
	for {
		tat := b.tat.Load()
		base := now
		if tat > now {
			if ahead := since(tat, now); ahead > room {
				if tat > math.MaxInt64-inc { // the TAT could never move past tat
					return false, Forever
				}
				return false, time.Duration(min(ahead-room, uint64(Forever)))
			}
			base = tat
		}
		next := base + inc
		if next < base {
			return false, Forever
		}
		if b.tat.CompareAndSwap(tat, next) {
			return true, 0
		}
	}
}

// TakeAt takes n tokens at now (negative or NaN n costs nothing) if they are there; if not, wait
// is how long until they would be ([Forever] for more than the burst).
func (b *BucketLimiter) TakeAt(now int64, n float64) (ok bool, wait time.Duration) {
	n = cost(n)
	if n > b.burst {
		return false, Forever
	}
	inc, _ := b.span(n) // n <= burst: it fits
	return b.take(now, inc)
}

// TokensAt returns how many tokens the bucket holds at now.
func (b *BucketLimiter) TokensAt(now int64) float64 {
	tat := b.tat.Load()
	if tat <= now {
		return float64(b.tauNs) / float64(b.one)
	}
	ahead := since(tat, now)
	if ahead >= uint64(b.tauNs) {
		return 0
	}
	return float64(uint64(b.tauNs)-ahead) / float64(b.one)
}

// Acquire takes one token at now: the [Permit] method.
func (b *BucketLimiter) Acquire(now int64) bool {
	ok, _ := b.take(now, b.one)
	return ok
}

// Release gives one token back, never past the burst.
func (b *BucketLimiter) Release(now int64) {
	for {
		tat := b.tat.Load()
		if tat <= now {
			return // full
		}
		next := now
		if since(tat, now) > uint64(b.one) {
			next = tat - b.one
		}
		if b.tat.CompareAndSwap(tat, next) {
			return
		}
	}
}

// SlidingLimiter is a [Sliding] window safe for any number of goroutines. It takes a mutex: an
// exact sliding window is a ring of stamps, which no single compare-and-set can move. It never
// over-admits: at most quota admissions in any window-long stretch of the instants they were
// called at (for Allow, the clock reading it takes before the lock), whatever order the callers
// get the lock in. A call whose instant is earlier than an admission already made, because its
// clock reading went stale while it waited, is judged as a [Sliding] judges an earlier instant:
// admitted only when that keeps the promise, so under heavy contention a window close to full can
// refuse such a call although a fresh reading would have fit. It must not be copied after first
// use.
type SlidingLimiter struct {
	_     stripe.NoCopy
	mu    sync.Mutex
	s     *Sliding
	clock func() int64
}

// NewSlidingLimiter returns an empty window of quota events per window.
func NewSlidingLimiter(quota int, window time.Duration, opts ...Option) (*SlidingLimiter, error) {
	s, err := NewSliding(quota, window)
	if err != nil {
		return nil, err
	}
	return &SlidingLimiter{s: s, clock: apply(opts).clock}, nil
}

// Allow counts an event now if the window has room.
func (l *SlidingLimiter) Allow() bool {
	now := l.clock()
	return l.Acquire(now)
}

// Acquire counts an event at now if the window has room: the [Permit] method.
func (l *SlidingLimiter) Acquire(now int64) bool {
	l.mu.Lock()
	ok := l.s.Take(now)
	l.mu.Unlock()
	return ok
}

// Release takes back the newest event at or before now.
func (l *SlidingLimiter) Release(now int64) {
	l.mu.Lock()
	l.s.Release(now)
	l.mu.Unlock()
}

// Left returns how many events remain in the window at now.
func (l *SlidingLimiter) Left(now int64) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.Left(now)
}

// Next returns how long until the window has room at now.
func (l *SlidingLimiter) Next(now int64) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.Next(now)
}

// PeriodLimiter is a [Period] counter safe for any number of goroutines, lock-free: the open
// period is an immutable start with an atomic count, swapped by compare-and-set when a period
// ends (one allocation per period, none per call). It never over-admits: the count is one atomic
// add. It must not be copied after first use.
type PeriodLimiter struct {
	_     stripe.NoCopy
	cur   atomic.Pointer[openPeriod]
	p     *Period // the policy; its own state is unused
	clock func() int64
}

type openPeriod struct {
	start int64
	count atomic.Int64
}

// NewPeriodLimiter returns a counter of quota events per period, aligned to multiples of the
// period on the clock if align is set.
func NewPeriodLimiter(quota int, period time.Duration, align bool, opts ...Option) (*PeriodLimiter, error) {
	p, err := NewPeriod(quota, period, align)
	if err != nil {
		return nil, err
	}
	return &PeriodLimiter{p: p, clock: apply(opts).clock}, nil
}

// Take counts one event now and says where the quota stands.
func (l *PeriodLimiter) Take() Quota { return l.TakeAt(l.clock()) }

// TakeAt counts one event at now and says where the quota stands. Refused events are not counted.
func (l *PeriodLimiter) TakeAt(now int64) Quota {
	for {
		cur := l.cur.Load()
		if cur == nil || l.p.ended(cur.start, now) {
			next := &openPeriod{start: l.p.open(now)}
			if !l.cur.CompareAndSwap(cur, next) {
				continue
			}
			cur = next
		}
		n := cur.count.Add(1)
		switch {
		case n < int64(l.p.quota):
			return Under
		case n == int64(l.p.quota):
			return Hit
		}
		cur.count.Add(-1)
		return Over
	}
}

// Left returns how many events remain in the current period at now.
func (l *PeriodLimiter) Left(now int64) int {
	cur := l.cur.Load()
	if cur == nil || l.p.ended(cur.start, now) {
		return l.p.quota
	}
	return max(l.p.quota-int(cur.count.Load()), 0)
}

// Acquire counts an event at now: the [Permit] method; Hit is admitted.
func (l *PeriodLimiter) Acquire(now int64) bool { return l.TakeAt(now) != Over }

// Release takes back one event of the open period, if it is still open.
func (l *PeriodLimiter) Release(now int64) {
	cur := l.cur.Load()
	if cur == nil || l.p.ended(cur.start, now) {
		return
	}
	for {
		n := cur.count.Load()
		if n <= 0 || cur.count.CompareAndSwap(n, n-1) {
			return
		}
	}
}
