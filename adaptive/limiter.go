package adaptive

import (
	"context"
	"errors"
	"math"
	"sync/atomic"
	"time"

	"github.com/wardgo/ward/atomicwindow"
	"github.com/wardgo/ward/internal/clock"
	"github.com/wardgo/ward/internal/stripe"
)

// ErrLimitExceeded is the refusal of a [Limiter] at its limit: allocation-free, matched with
// errors.Is.
var ErrLimitExceeded = errors.New("adaptive: limit exceeded")

// Batch fields of a window of samples.
const (
	fRTT      = iota // sum of the timed calls' response times, nanoseconds
	fTimed           // how many calls were timed
	fInFlight        // the most calls in flight a sample saw (Max)
	fDropped         // 1 if any call dropped (Max)
)

// Limiter is a concurrency limit that moves itself: [Limiter.Acquire] admits a call while fewer
// than the limit are in flight, and the response times of the calls it admitted move the limit
// through a [Rule], once per window.
//
// Acquire is a compare-and-set on the in-flight count against the limit, which is itself moved by
// compare-and-set: a refusal reads two atomics, counts itself in a per-P stripe, reads no clock and
// allocates nothing. Samples go into per-P stripes without atomic read-modify-write
// ([atomicwindow.Batch]). A window closes once at least the window duration (1 s) has passed and
// it holds at least the minimum of timed samples (10); a window that has run its time with fewer is
// extended (its end moves a window past the call that found it short) and keeps its samples. The
// call that settles after a window closes folds it (one goroutine wins a compare-and-set; the others
// never wait) and feeds the rule one [Sample]: the window's average response time, its largest
// in-flight count and whether any call dropped. A limit lowered below the calls already running
// interrupts nothing: new calls are refused until enough have finished.
//
// Timing: measuring a response time costs two clock reads (about 27 ns each here), the largest
// cost of a call. By default a Limiter times one admitted call in every [DefaultSampleEvery]
// (chosen per P by a striped counter) and settles the others without reading the clock; the
// window's average is the average of the timed calls, and a window needs its minimum of timed
// calls to close, so at low traffic a window lasts longer. WithSampleEvery(1) times every call,
// which is Netflix's behaviour. A drop is always a sample (the window's drop flag and in-flight
// maximum see it), whether or not its call was timed.
//
// What a concurrent reader may observe: a sample being written while a window is folded may be
// lost (never counted twice, never invented); Limit, InFlight and Snapshot are atomic loads and
// may be one window stale. A Limiter is safe for concurrent use and must not be copied after first
// use. The zero value is not usable: build one with [New]; Acquire on a zero Limiter panics.
type Limiter struct {
	_ stripe.NoCopy
	_ [stripe.CacheLine]byte

	inFlight atomic.Int64 // written by every acquire and settle
	_        [stripe.CacheLine - 8]byte

	limit   atomic.Int64 // read by every acquire, written once per window
	end     atomic.Int64 // when the open window may close, read by every timed settle
	closing atomic.Int32 // 1 while a goroutine folds a window
	_       [stripe.CacheLine - 20]byte

	clock      func() int64
	every      int64 // time one call in every; a power of two
	window     int64
	minSamples int64
	dropOn     func(error) bool
	samples    *atomicwindow.Batch
	ticks      stripe.Counter
	refused    stripe.Counter
	rule       Rule // touched only by the goroutine holding closing

	windows atomic.Int64
	lastRTT atomic.Int64
}

// DefaultSampleEvery is how many admitted calls share one timed call by default.
const DefaultSampleEvery = 8

// Option configures a [Limiter].
type Option func(*config) error

type config struct {
	clock      func() int64
	every      int
	window     time.Duration
	minSamples int
	dropOn     func(error) bool
}

// WithClock replaces the clock: nanoseconds from any monotonic origin. For tests.
func WithClock(now func() int64) Option {
	return func(c *config) error {
		if now == nil {
			return invalid("WithClock", "nil", "a clock")
		}
		c.clock = now
		return nil
	}
}

// WithWindow sets the least time a window lasts (1 s by default, as Netflix's
// WindowedLimit have it) and the least timed samples it needs to close (10). Any positive
// duration is valid: a window's end is held at the clock's largest instant, so a duration of
// math.MaxInt64 makes windows that close only at that instant, which in practice is never.
func WithWindow(d time.Duration, minSamples int) Option {
	return func(c *config) error {
		if d <= 0 {
			return invalid("WithWindow.duration", d, "> 0")
		}
		if minSamples < 1 {
			return invalid("WithWindow.minSamples", minSamples, ">= 1")
		}
		c.window, c.minSamples = d, minSamples
		return nil
	}
}

// WithSampleEvery times one admitted call in every n (a power of two from 1 to 1024; 1 times every
// call). The default is [DefaultSampleEvery].
func WithSampleEvery(n int) Option {
	return func(c *config) error {
		if n < 1 || n > 1024 || n&(n-1) != 0 {
			return invalid("WithSampleEvery", n, "a power of two in [1, 1024]")
		}
		c.every = n
		return nil
	}
}

// WithDropOn says which errors returned to [Limiter.Do] are drops (overload signals) besides
// context.DeadlineExceeded. Other errors only free the slot.
func WithDropOn(isDrop func(error) bool) Option {
	return func(c *config) error {
		c.dropOn = isDrop
		return nil
	}
}

// New returns a limiter whose limit rule moves. The draws Vegas and MinRTT need are given to
// their constructors ([NewVegas], [NewMinRTT]); the limiter itself draws nothing.
func New(rule Rule, opts ...Option) (*Limiter, error) {
	if rule == nil {
		return nil, invalid("rule", "nil", "a Rule")
	}
	c := config{clock: clock.Now, every: DefaultSampleEvery, window: time.Second, minSamples: 10}
	for _, o := range opts {
		if err := o(&c); err != nil {
			return nil, err
		}
	}
	l := &Limiter{
		clock:      c.clock,
		every:      int64(c.every),
		window:     int64(c.window),
		minSamples: int64(c.minSamples),
		dropOn:     c.dropOn,
		samples:    atomicwindow.NewBatch(atomicwindow.Sum, atomicwindow.Sum, atomicwindow.Max, atomicwindow.Max),
		rule:       rule,
	}
	l.ticks.Init()
	l.refused.Init()
	l.limit.Store(int64(max(rule.Limit(), 1)))
	l.end.Store(l.endOf(l.clock()))
	return l, nil
}

// Lease is an admitted call. Settle it exactly once with Pass, Drop or Ignore, through the
// variable Acquire returned (the methods clear it, so settling the same variable twice is a
// harmless no-op; settling two copies of one lease frees two slots, which is a bug in the caller).
// The zero Lease is settled already.
type Lease struct {
	l        *Limiter
	start    int64 // clock reading at acquire; untimed when l.every says so
	inFlight int64
	timed    bool
}

// Acquire admits a call if fewer than the limit are in flight. It never blocks and never reads
// the clock on a refusal.
func (l *Limiter) Acquire() (Lease, bool) {
	for {
		n := l.inFlight.Load()
		if n >= l.limit.Load() {
			if l.samples == nil { // the zero Limiter: its limit is 0
				panic("adaptive: Limiter used without New")
			}
			l.refused.Inc()
			return Lease{}, false
		}
		if l.inFlight.CompareAndSwap(n, n+1) {
			if l.every > 1 && l.ticks.Add(1)&(l.every-1) != 0 {
				return Lease{l: l, inFlight: n + 1}, true
			}
			return Lease{l: l, start: l.clock(), inFlight: n + 1, timed: true}, true
		}
	}
}

// Pass settles a call that succeeded: its response time is a sample.
func (s *Lease) Pass() { s.settle(false) }

// Drop settles a call that timed out or met an overload answer: a sample marked dropped.
func (s *Lease) Drop() { s.settle(true) }

// Ignore settles a call whose outcome says nothing about load (a bad request, a not found): it
// frees the slot and is no sample.
func (s *Lease) Ignore() {
	if l := s.l; l != nil {
		s.l = nil
		l.inFlight.Add(-1)
	}
}

func (s *Lease) settle(dropped bool) {
	l := s.l
	if l == nil {
		return
	}
	s.l = nil
	l.inFlight.Add(-1)
	var drop int64
	if dropped {
		drop = 1
	}
	if !s.timed {
		if dropped {
			l.samples.Add(atomicwindow.Bucket{fInFlight: s.inFlight, fDropped: 1})
		}
		return
	}
	now := l.clock()
	l.samples.Add(atomicwindow.Bucket{fRTT: max(now-s.start, 0), fTimed: 1, fInFlight: s.inFlight, fDropped: drop})
	if now >= l.end.Load() {
		l.close(now)
	}
}

// endOf is when a window opened at now may close: now + the window, at most the largest instant
// (a sum that wrapped negative would close a window on every call).
func (l *Limiter) endOf(now int64) int64 {
	if now > math.MaxInt64-l.window {
		return math.MaxInt64
	}
	return now + l.window
}

// close folds the window if it has its samples, or extends it; one goroutine at a time.
func (l *Limiter) close(now int64) {
	if !l.closing.CompareAndSwap(0, 1) {
		return
	}
	defer l.closing.Store(0)
	if now < l.end.Load() { // another goroutine closed it meanwhile
		return
	}
	if l.samples.Peek()[fTimed] < l.minSamples {
		l.end.Store(l.endOf(now)) // too few: extend, keeping the samples
		return
	}
	w := l.samples.Fold()
	l.end.Store(l.endOf(now))
	if w[fTimed] == 0 { // lost to concurrent writers between Peek and Fold
		return
	}
	rtt := w[fRTT] / w[fTimed]
	l.rule.Sample(Sample{RTT: time.Duration(rtt), InFlight: int(w[fInFlight]), Dropped: w[fDropped] != 0})
	l.limit.Store(int64(max(l.rule.Limit(), 1)))
	l.lastRTT.Store(rtt)
	l.windows.Add(1)
}

// Limit returns the current limit.
func (l *Limiter) Limit() int { return int(l.limit.Load()) }

// InFlight returns how many admitted calls have not settled.
func (l *Limiter) InFlight() int { return int(l.inFlight.Load()) }

// Snapshot is a limiter's state for metrics, read without touching the hot path.
type Snapshot struct {
	Limit    int           // the current limit
	InFlight int           // admitted calls not yet settled
	Min, Max int           // the rule's bounds (for a rule of your own: 1 and 0, unknown)
	Windows  int64         // windows closed (each applied to the rule once)
	Latency  time.Duration // the last closed window's average response time
	Refused  int64         // calls refused since New
}

// Snapshot returns the limiter's state. Its fields are read one by one and may be from slightly
// different instants.
func (l *Limiter) Snapshot() Snapshot {
	s := Snapshot{
		Limit:    l.Limit(),
		InFlight: l.InFlight(),
		Min:      1,
		Windows:  l.windows.Load(),
		Latency:  time.Duration(l.lastRTT.Load()),
		Refused:  l.refused.Load(),
	}
	if b, ok := l.rule.(bounded); ok {
		s.Min, s.Max = b.bounds()
	}
	return s
}

// Do runs fn under the limit. A refusal returns [ErrLimitExceeded] without calling fn. fn's nil
// error is a pass; context.DeadlineExceeded, or an error the WithDropOn predicate accepts, is a
// drop; any other error only frees the slot. A panicking fn frees its slot (no sample) and the
// panic continues. Do returns fn's error unchanged.
func (l *Limiter) Do(ctx context.Context, fn func(context.Context) error) error {
	lease, ok := l.Acquire()
	if !ok {
		return ErrLimitExceeded
	}
	defer lease.Ignore() // a no-op once settled; frees the slot if fn panics
	err := fn(ctx)
	switch {
	case err == nil:
		lease.Pass()
	case errors.Is(err, context.DeadlineExceeded) || (l.dropOn != nil && l.dropOn(err)):
		lease.Drop()
	}
	return err
}

// AsPermit returns the limiter as a rate.Permit (Acquire(now) bool, Release(now)), to chain it
// with rate limits or partition it by key. Acquire takes a slot as Limiter.Acquire does, untimed;
// Release frees one slot without a sample, like Lease.Ignore. Calls admitted this way teach the
// rule nothing: settle real calls through Acquire and a Lease to let the limit move.
func (l *Limiter) AsPermit() PermitAdapter { return PermitAdapter{l} }

// PermitAdapter is a Limiter seen as a rate.Permit; see [Limiter.AsPermit].
type PermitAdapter struct{ l *Limiter }

// Acquire takes a slot if fewer than the limit are in flight; now is not read.
func (p PermitAdapter) Acquire(int64) bool {
	lease, ok := p.l.Acquire()
	lease.l = nil // the slot is held; the lease is dropped unsettled on purpose
	return ok
}

// Release frees one slot, never taking the in-flight count below zero.
func (p PermitAdapter) Release(int64) {
	for {
		n := p.l.inFlight.Load()
		if n <= 0 || p.l.inFlight.CompareAndSwap(n, n-1) {
			return
		}
	}
}
