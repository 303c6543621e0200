package rate

import (
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
// of the next call, and a call is a compare-and-set on it. It admits exactly what a [Bucket] of
// the same rate and burst admits, up to a rounding of the emission interval to whole nanoseconds.
//
// It never over-admits: a goroutine whose clock reading went stale while others moved the TAT
// sees less room, not more (golang.org/x/time/rate over-admits 1.2-8× with 1024 goroutines on two
// cores, golang/go#71360; TestSimNoOverAdmission shows this one does not). It starts full. It must
// not be copied after first use.
type BucketLimiter struct {
	_     stripe.NoCopy
	_     [stripe.CacheLine]byte
	tat   atomic.Int64
	_     [stripe.CacheLine - 8]byte
	every float64 // nanoseconds per token
	tau   float64 // burst × every: how far ahead of now the TAT may run
	burst float64
	one   int64 // every, rounded: one token's emission interval
	tauNs int64 // tau, rounded down: the bound a grant is checked against
	clock func() int64
}

// NewBucketLimiter returns a full bucket of rate tokens per second (> 0) holding at most burst
// (under 1 is raised to 1).
func NewBucketLimiter(rate, burst float64, opts ...Option) (*BucketLimiter, error) {
	if !(rate > 0) || math.IsInf(rate, 0) {
		return nil, invalid("rate", rate, "finite and > 0")
	}
	if math.IsNaN(burst) || math.IsInf(burst, 0) || burst < 0 {
		return nil, invalid("burst", burst, "finite and >= 0 (under 1 is raised to 1)")
	}
	o := apply(opts)
	b := &BucketLimiter{every: 1e9 / rate, burst: max(burst, 1), clock: o.clock}
	b.tau = b.burst * b.every
	b.one = int64(math.Round(b.every))
	b.tauNs = int64(b.tau)
	b.tat.Store(o.clock())
	return b, nil
}

// Allow takes one token now.
func (b *BucketLimiter) Allow() bool { return b.take(b.clock(), b.one) }

// take moves the TAT by inc if the bucket holds it at now: the whole of a call, in integers.
func (b *BucketLimiter) take(now, inc int64) bool {
	for {
		tat := b.tat.Load()
		next := max(tat, now) + inc
		if next-now > b.tauNs {
			return false
		}
		if b.tat.CompareAndSwap(tat, next) {
			return true
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
	inc := int64(math.Round(n * b.every))
	if b.take(now, inc) {
		return true, 0
	}
	over := max(b.tat.Load(), now) + inc - now - b.tauNs
	return false, time.Duration(max(over, 1))
}

// TokensAt returns how many tokens the bucket holds at now.
func (b *BucketLimiter) TokensAt(now int64) float64 {
	ahead := float64(max(b.tat.Load()-now, 0))
	return max(b.tau-ahead, 0) / b.every
}

// Acquire takes one token at now: the [Permit] method.
func (b *BucketLimiter) Acquire(now int64) bool { return b.take(now, b.one) }

// Release gives one token back, never past the burst.
func (b *BucketLimiter) Release(now int64) {
	for {
		tat := b.tat.Load()
		if tat <= now {
			return // full
		}
		if b.tat.CompareAndSwap(tat, max(tat-b.one, now)) {
			return
		}
	}
}

// SlidingLimiter is a [Sliding] window safe for any number of goroutines. It takes a mutex: an
// exact sliding window is a ring of stamps, which no single compare-and-set can move. It never
// over-admits: at most quota events in any window-long stretch of the instants it was called at.
// It must not be copied after first use.
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

// Release takes back the newest event.
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
		if cur == nil || now-cur.start >= l.p.period {
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
	if cur == nil || now-cur.start >= l.p.period {
		return l.p.quota
	}
	return max(l.p.quota-int(cur.count.Load()), 0)
}

// Acquire counts an event at now: the [Permit] method; Hit is admitted.
func (l *PeriodLimiter) Acquire(now int64) bool { return l.TakeAt(now) != Over }

// Release takes back one event of the open period, if it is still open.
func (l *PeriodLimiter) Release(now int64) {
	cur := l.cur.Load()
	if cur == nil || now-cur.start >= l.p.period {
		return
	}
	for {
		n := cur.count.Load()
		if n <= 0 || cur.count.CompareAndSwap(n, n-1) {
			return
		}
	}
}
