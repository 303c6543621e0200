package rate

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/wardgo/ward/internal/clock"
	"github.com/wardgo/ward/internal/contract"
	"github.com/wardgo/ward/internal/stripe"
	"github.com/wardgo/ward/internal/tally"
)

// Option configures a concurrent limiter of this package.
type Option func(*config) error

type config struct {
	clock  func() int64
	given  bool // WithClock given: clock is the caller's, not ward's
	counts bool
}

// WithClock replaces the clock: nanoseconds from any monotonic origin, the instants Now returns
// and the short forms (Allow, Do) decide at. For tests. A nil clock is an error.
func WithClock(now func() int64) Option {
	return func(c *config) error {
		c.given = true
		return contract.Set(ErrInvalid, "WithClock", &c.clock, now)
	}
}

func apply(opts []Option) (config, error) {
	c := config{clock: clock.Now}
	err := contract.Apply(ErrInvalid, &c, opts)
	return c, err
}

// kept returns the clock a limiter keeps: the caller's (WithClock), or nil for ward's, which the
// limiter calls directly, inlined, where a function value could not be.
func (c *config) kept() func() int64 {
	if c.given {
		return c.clock
	}
	return nil
}

// read returns the reading of a kept clock.
func read(kept func() int64) int64 {
	if kept == nil {
		return clock.Now()
	}
	return kept()
}

// do is the Do of every limiter: fn runs when ok, and its error comes back unchanged; a refusal
// is [ErrLimited] with its wait.
func do(ctx context.Context, fn func(context.Context) error, ok bool, wait time.Duration) error {
	if !ok {
		return contract.Wait(ErrLimited, wait)
	}
	return fn(ctx)
}

// BucketLimiter is a token bucket safe for any number of goroutines, lock-free: GCRA, the
// generic cell rate algorithm, keeps the bucket as one word, the theoretical arrival time (TAT)
// of the next call, and a call is a compare-and-set on it. It starts full.
//
// It decides as a [Bucket] does, with the same arithmetic (see the Bucket's "How it works"):
// driven from one goroutine it gives exactly a Bucket's answers, waits included, at every rate
// and burst both accept. It runs at its rate, a token a second at rate 1 as a token every 1.667
// nanoseconds at rate 6e8, and a full BucketLimiter admits exactly burst calls at once.
//
// It never over-admits: a goroutine whose clock reading went stale while others moved the TAT
// sees less room, not more (golang.org/x/time/rate's Limiter over-admits when many goroutines
// share a few cores). It must not be copied after first use.
//
// # How it works
//
// The TAT is counted in the units of the Bucket's grid; a call at now converts now with one
// multiply and moves the TAT by compare-and-set. A call whose TAT would pass the end of the
// units' range (an instant within the fill time of the end of the clock's range, at rates near a
// token a nanosecond) is refused with a wait of [Forever] rather than wrapped round. A TAT more
// than the burst plus [MaxSkew]'s refill after the instant of a call (the clock jumped back, or
// an instant of another origin was passed) is pulled back to that instant plus the burst: the
// bucket empty there, not in debt for decades.
//
// Under contention it leases tokens to Ps. The first time two callers collide on the TAT, a
// limiter whose burst is at least 4 tokens for each P (GOMAXPROCS when it was made, rounded up to
// a power of two) starts giving each P a lease: a run of the bucket's future slots, claimed by one
// compare-and-set and then spent by the calls on that P on a cache line of their own, so the cores
// stop passing one word back and forth. A lease holds at most 1/(2×Ps) of the tokens the bucket
// held when it was taken, and a slot is only spent at or after its own time, never late: leasing
// never over-admits (at most burst + the tokens the grid brought in any stretch of time, as
// without it: elapsed × rate, plus at most one unit, a whole token only at 5e8 a second and more).
// A pull-back or a Release on the shared word retires every lease taken before it. What leasing
// can cost is room: tokens leased to one P and not yet spent cannot serve another. A P gives its
// lease back when it runs short and nobody claimed after it; otherwise it keeps it and takes what
// the call needs alone, so each P holds at most one lease and together they hold at most half
// the burst, less as they are spent. Leases left in the rows of Ps that GOMAXPROCS took away are
// not given back: time passes them by (at most burst/rate). A limiter one goroutine calls never
// collides and never leases. Next, Left and TokensAt count leased tokens as taken; once leasing
// is on, Release gives the token to the caller's P's lease, and drops it when the lease cannot
// hold it. With a burst under 4 tokens a P every call takes the slot at its own instant, which
// only the shared word can hand out: such a limiter stays one word. Leases take one cache line a
// P, made when leasing starts; the builds without the P index (the ward_nolinkname tag, gccgo)
// never lease.
type BucketLimiter struct {
	_   stripe.NoCopy
	_   [stripe.CacheLine]byte // the TAT on a line of its own, whatever was allocated before it
	tat atomic.Uint64
	_   [stripe.CacheLine - unsafe.Sizeof(atomic.Uint64{})]byte
	// Writes that moved the TAT back (pull-backs, Releases on the shared word), counted before
	// each: a lease taken before one is neither spent nor given back (lease.go). Read by every
	// leased call, written rarely: a line of its own.
	gen atomic.Int64
	_   [stripe.CacheLine - unsafe.Sizeof(atomic.Int64{})]byte
	bucketPolicy
	// Never zero bytes: a zero-size last field makes the compiler pad the struct off the line.
	_ [stripe.CacheLine - unsafe.Sizeof(bucketPolicy{})%stripe.CacheLine]byte
}

// bucketPolicy is what a BucketLimiter reads on every call: written once, when leasing starts.
type bucketPolicy struct {
	gcra
	clock    func() int64 // WithClock; nil reads ward's clock, called directly
	leasing  atomic.Int32 // leaseOff, leaseWanted, leaseStarting, leaseOn, and the counting bit (lease.go)
	leasable bool         // the build pins to Ps and the burst is large enough to lease
	leases   stripe.Table // a lease per P, made when leasing starts
	counts   *tally.Table // the calls' counts, per P: nil unless WithCounts
}

// NewBucketLimiter returns a full bucket of rate tokens per second holding at most burst: rate
// in [0, 1e9] (0: never refills; at most a token a nanosecond), burst in [1, [MaxBurst]], as
// [NewBucket] takes them. Anything else is an error naming the field.
func NewBucketLimiter(rate float64, burst int, opts ...Option) (*BucketLimiter, error) {
	g, err := newGCRA(rate, burst)
	if err != nil {
		return nil, err
	}
	c, err := apply(opts)
	if err != nil {
		return nil, err
	}
	b := &BucketLimiter{bucketPolicy: bucketPolicy{gcra: g,
		leasable: stripe.Pinned && int64(burst) >= 4*int64(stripe.Count()), counts: c.table()}}
	if b.counts != nil {
		b.leasing.Store(counting)
	}
	b.clock = c.kept()
	b.tat.Store(b.at(b.Now()))
	return b, nil
}

// Now returns the instant Allow and Do decide at: nanoseconds of the limiter's clock, the origin
// of every now this limiter is passed.
func (b *BucketLimiter) Now() int64 { return read(b.clock) }

// Allow takes one token at Now.
func (b *BucketLimiter) Allow() bool {
	var now int64
	if b.clock == nil { // Now, written out: a direct call of ward's clock, inlined
		now = clock.Now()
	} else {
		now = b.clock()
	}
	x := b.at(now)
	// take's first round for one token and decide's count, written out while leasing is off: no
	// call but the count's.
	if st := b.leasing.Load(); st&^counting == leaseOff {
		tat := b.tat.Load()
		var next uint64 // max(tat, x) + one, the end of the call's slot
		if tat <= x {
			next = x + b.one
		} else {
			if d := tat - x; d > b.room { // refused
				if d > b.far { // skewed: decide pulls the TAT back
					ok, _ := b.decide(0, x, b.one, false)
					return ok
				}
				if st != leaseOff {
					count(b.counts, false)
				}
				return false
			}
			next = tat + b.one
		}
		if next >= b.one { // the sum did not wrap: within the range, granted
			if b.tat.CompareAndSwap(tat, next) {
				if st != leaseOff {
					count(b.counts, true)
				}
				return true
			}
			b.collided()
		}
	}
	ok, _ := b.decide(0, x, b.one, false) // no wait: now is not needed
	return ok
}

// decide answers a call for inc units of tokens at now (counted x), and counts it: from the
// caller's P's lease once callers have collided, on the shared TAT before. The wait is worked out
// for a refusal when wait is set (the only use of now), and is 0 otherwise.
func (b *BucketLimiter) decide(now int64, x, inc uint64, wait bool) (bool, time.Duration) {
	var ok bool
	var tat uint64
	if b.leasingOn() {
		ok, tat = b.leased(x, inc)
	} else {
		ok, tat = b.take(x, inc)
	}
	if b.counts != nil {
		count(b.counts, ok)
	}
	if ok || !wait {
		return ok, 0
	}
	return false, b.refused(tat, x, now, inc)
}

// Do runs fn if a token is there at Now, and returns fn's error unchanged; otherwise it returns
// [ErrLimited] with the wait until a token would be there, without calling fn. A ctx already done
// returns its error (context.Canceled or context.DeadlineExceeded) and takes no token.
func (b *BucketLimiter) Do(ctx context.Context, fn func(context.Context) error) error {
	if err := contract.Dead(ctx); err != nil {
		return err
	}
	now := b.Now()
	ok, wait := b.decide(now, b.at(now), b.one, true)
	return do(ctx, fn, ok, wait)
}

// take moves the TAT by inc units (at most tau) if the bucket holds them at x: the whole of a
// call on the shared word. When it does not, it returns the TAT the call was refused against
// (pulled back when it was skewed, and written so).
func (b *BucketLimiter) take(x, inc uint64) (ok bool, refused uint64) {
	for {
		old := b.tat.Load()
		tat := b.pull(old, x)
		next, ok := b.grant(tat, x, inc)
		if !ok {
			if tat != old { // write the pull back, or the next call is refused for decades too
				b.tat.CompareAndSwap(old, tat)
			}
			return false, tat
		}
		if b.tat.CompareAndSwap(old, next) {
			return true, 0
		}
		b.collided()
	}
}

// TakeAt takes n tokens at now (an instant of the limiter's clock, as Now returns; a negative n
// costs nothing) if they are there. If not, wait is how long until they would be: 0 when ok,
// [Forever] when they never will be (more than the burst, rate 0, or past the end of the clock's
// range).
func (b *BucketLimiter) TakeAt(now int64, n int) (ok bool, wait time.Duration) {
	if cost(n) > b.burst {
		if b.counts != nil {
			count(b.counts, false)
		}
		return false, Forever
	}
	return b.decide(now, b.at(now), b.units(n), true)
}

// Next returns how long until n tokens would be there at now, without taking them: 0 when they
// are, [Forever] when they never will be.
func (b *BucketLimiter) Next(now int64, n int) time.Duration {
	if cost(n) > b.burst {
		return Forever
	}
	x := b.at(now)
	return b.wait(b.read(b.tat.Load(), x), x, now, b.units(n))
}

// TokensAt returns how many tokens the bucket holds at now, fractions included.
func (b *BucketLimiter) TokensAt(now int64) float64 { return b.tokens(b.heldAt(now)) }

// heldAt returns the units the bucket holds at now.
func (b *BucketLimiter) heldAt(now int64) uint64 {
	x := b.at(now)
	return b.held(b.read(b.tat.Load(), x), x)
}

// Left returns how many calls of one token at now would be admitted one after another.
func (b *BucketLimiter) Left(now int64) int { return int(b.heldAt(now) >> b.shift) }

// Acquire takes one token at now: the [Permit] method.
func (b *BucketLimiter) Acquire(now int64) bool {
	ok, _ := b.decide(now, b.at(now), b.one, false)
	return ok
}

// Release gives one token back, never past the burst. Once the limiter leases tokens to Ps (see
// How it works), the token goes back to the caller's P's lease, and is dropped when that lease
// cannot hold it.
func (b *BucketLimiter) Release(now int64) {
	x := b.at(now)
	if b.state() == leaseOn {
		b.releaseLeased(x)
		return
	}
	for {
		old := b.tat.Load()
		next, ok := b.release(b.pull(old, x), x)
		if !ok {
			return // full
		}
		b.gen.Add(1) // a lease that leasing, starting meanwhile, took may end where the TAT is
		if b.tat.CompareAndSwap(old, next) {
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
	clock func() int64 // WithClock; nil reads ward's clock, called directly
	// The calls admitted and refused, counted under mu.
	admitted, refused uint64
}

// NewSlidingLimiter returns an empty window of quota events per window.
func NewSlidingLimiter(quota int, window time.Duration, opts ...Option) (*SlidingLimiter, error) {
	s, err := NewSliding(quota, window)
	if err != nil {
		return nil, err
	}
	c, err := apply(opts)
	if err != nil {
		return nil, err
	}
	return &SlidingLimiter{s: s, clock: c.kept()}, nil
}

// Now returns the instant Allow and Do decide at: nanoseconds of the limiter's clock, the origin
// of every now this limiter is passed.
func (l *SlidingLimiter) Now() int64 { return read(l.clock) }

// Allow counts an event at Now if the window has room.
func (l *SlidingLimiter) Allow() bool {
	if l.clock == nil { // Now, written out: a direct call of ward's clock, inlined
		return l.Acquire(clock.Now())
	}
	return l.Acquire(l.clock())
}

// Do runs fn if the window has room at Now, counting it, and returns fn's error unchanged;
// otherwise it returns [ErrLimited] with the wait until the window would have room, without
// calling fn. A ctx already done returns its error and counts nothing.
func (l *SlidingLimiter) Do(ctx context.Context, fn func(context.Context) error) error {
	if err := contract.Dead(ctx); err != nil {
		return err
	}
	ok, wait := l.TakeAt(l.Now(), 1)
	return do(ctx, fn, ok, wait)
}

// TakeAt counts n events at now (an instant of the limiter's clock, as Now returns; a negative n
// costs nothing) if the window has room for them all. If not, wait is how long until it would: 0
// when ok, [Forever] for more than the quota.
func (l *SlidingLimiter) TakeAt(now int64, n int) (ok bool, wait time.Duration) {
	l.mu.Lock()
	ok, wait = l.s.TakeAt(now, n)
	if ok {
		l.admitted++
	} else {
		l.refused++
	}
	l.mu.Unlock()
	return ok, wait
}

// Acquire counts an event at now if the window has room: the [Permit] method.
func (l *SlidingLimiter) Acquire(now int64) bool {
	ok, _ := l.TakeAt(now, 1)
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

// Next returns how long until the window has room for n events at now, without counting them.
func (l *SlidingLimiter) Next(now int64, n int) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.Next(now, n)
}

// PeriodLimiter is a [Period] counter safe for any number of goroutines, lock-free: the open
// period is an immutable start with an atomic count, swapped by compare-and-set when a period
// ends (one allocation per period, none per call). It never over-admits: the count is one atomic
// add. Driven from one goroutine it gives exactly a [Period]'s answers, the pull back of a period
// more than [MaxSkew] ahead of the instant included. It must not be copied after first use.
type PeriodLimiter struct {
	_      stripe.NoCopy
	cur    atomic.Pointer[openPeriod]
	p      *Period      // the policy; its own state is unused
	clock  func() int64 // WithClock; nil reads ward's clock, called directly
	counts *tally.Table // the calls' counts, per P: nil unless WithCounts
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
	c, err := apply(opts)
	if err != nil {
		return nil, err
	}
	return &PeriodLimiter{p: p, clock: c.kept(), counts: c.table()}, nil
}

// Now returns the instant Allow and Do decide at: nanoseconds of the limiter's clock, the origin
// of every now this limiter is passed.
func (l *PeriodLimiter) Now() int64 { return read(l.clock) }

// Allow counts one event at Now if the quota has room.
func (l *PeriodLimiter) Allow() bool {
	var now int64
	if l.clock == nil { // Now, written out: a direct call of ward's clock, inlined
		now = clock.Now()
	} else {
		now = l.clock()
	}
	_, ok := l.take(now, 1)
	return ok
}

// Do runs fn if the quota has room at Now, counting it, and returns fn's error unchanged;
// otherwise it returns [ErrLimited] with the wait until the period ends, without calling fn. A
// ctx already done returns its error and counts nothing.
func (l *PeriodLimiter) Do(ctx context.Context, fn func(context.Context) error) error {
	if err := contract.Dead(ctx); err != nil {
		return err
	}
	ok, wait := l.TakeAt(l.Now(), 1)
	return do(ctx, fn, ok, wait)
}

// take counts n > 0 events at now if the open period has room for them, and returns the count
// after them (before them when refused). Refused events are not counted.
func (l *PeriodLimiter) take(now int64, n int64) (count int64, ok bool) {
	for {
		cur := l.cur.Load()
		if cur == nil || l.p.ended(cur.start, now) || skewed(cur.start, now) {
			next := &openPeriod{start: l.p.open(now)}
			if cur != nil && skewed(cur.start, now) {
				next.count.Store(int64(l.p.quota)) // pulled back: spent
			}
			if !l.cur.CompareAndSwap(cur, next) {
				continue
			}
			cur = next
		}
		c := cur.count.Add(n)
		if c > 0 && c <= int64(l.p.quota) { // c <= 0: the add wrapped round (a quota near MaxInt64)
			if l.counts != nil {
				l.counts.Add(tally.Admitted)
			}
			return c, true
		}
		cur.count.Add(-n)
		if l.counts != nil {
			l.counts.Add(tally.Refused)
		}
		return c - n, false
	}
}

// TakeAt counts n events at now (an instant of the limiter's clock, as Now returns; a negative n
// costs nothing) if the quota has room for them all. If not, wait is how long until it would: 0
// when ok, the end of the period, [Forever] for more than the quota.
func (l *PeriodLimiter) TakeAt(now int64, n int) (ok bool, wait time.Duration) {
	n = cost(n)
	switch {
	case n > l.p.quota:
		if l.counts != nil {
			l.counts.Add(tally.Refused)
		}
		return false, Forever
	case n == 0:
		if l.counts != nil {
			l.counts.Add(tally.Admitted)
		}
		return true, 0
	}
	if _, ok := l.take(now, int64(n)); ok {
		return true, 0
	}
	return false, max(l.p.reset(now, l.usage(now)), 1) // at least 1 ns if the period ended meanwhile
}

// TakeQuota counts one event at now and says where the quota stands: [Under], [Hit] (the last
// event of the period) or [Over] (refused, not counted).
func (l *PeriodLimiter) TakeQuota(now int64) Quota {
	c, ok := l.take(now, 1)
	return l.p.quotaOf(ok, int(c))
}

// usage returns the open period as a [Period] reads it at now.
func (l *PeriodLimiter) usage(now int64) Usage {
	cur := l.cur.Load()
	if cur == nil {
		return Usage{}
	}
	return l.p.current(now, Usage{Start: cur.start, Count: int(cur.count.Load()), Open: true})
}

// Left returns how many events remain in the current period at now.
func (l *PeriodLimiter) Left(now int64) int { return l.p.left(l.usage(now)) }

// Next returns how long until n events at now would be admitted, without counting them.
func (l *PeriodLimiter) Next(now int64, n int) time.Duration {
	return l.p.next(now, l.usage(now), n)
}

// Reset returns how long until the current period ends and the count starts again: 0 when no
// period is open.
func (l *PeriodLimiter) Reset(now int64) time.Duration { return l.p.reset(now, l.usage(now)) }

// Acquire counts an event at now: the [Permit] method.
func (l *PeriodLimiter) Acquire(now int64) bool {
	_, ok := l.take(now, 1)
	return ok
}

// Release takes back one event of the open period, if it is still open (a period that would be
// pulled back at now is left as it is).
func (l *PeriodLimiter) Release(now int64) {
	cur := l.cur.Load()
	if cur == nil || l.p.ended(cur.start, now) || skewed(cur.start, now) {
		return
	}
	for {
		n := cur.count.Load()
		if n <= 0 || cur.count.CompareAndSwap(n, n-1) {
			return
		}
	}
}
