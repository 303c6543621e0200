package adaptive

import (
	"context"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/wardgo/ward/internal/clock"
	"github.com/wardgo/ward/internal/contract"
	"github.com/wardgo/ward/internal/stripe"
	"github.com/wardgo/ward/internal/tally"
)

// ErrLimitExceeded is the refusal of a [Limiter] at its limit: allocation-free, matched with
// errors.Is, and matching ward.ErrRefused too. It carries no wait: when a slot frees depends on
// calls in flight, not on time.
var ErrLimitExceeded = contract.Refusal("adaptive: limit exceeded")

// Limiter is a concurrency limit that moves itself: [Limiter.Admit] (or [Limiter.Acquire]) admits
// a call while fewer than the limit are in flight, and the response times of the calls it admitted
// move the limit through a [Rule], once per [Window]. It is the concurrent form of [Core]'s
// arithmetic: driven from one goroutine with an injected clock and WithSampleEvery(1), it gives
// exactly a Core's decisions and limits. A refusal reads no clock and allocates nothing.
//
// A Limiter is safe for concurrent use and must not be copied after first use. The zero value is
// not usable: build one with [New] (or [Default]); Acquire on a zero Limiter panics. A concurrent
// reader may observe a call settling while a window is folded counted in that window or the next
// (never in both, never invented); Limit, InFlight and Snapshot are atomic loads and may be one
// window stale.
//
// # How it works
//
// The limit is held as credits spread over per-P pools: an acquire takes a credit from its P's
// pool (a compare-and-set on that P's own cache line, no read-modify-write on a line other cores
// write), a settle gives one back to the settling P's pool, and only an empty or overfull pool
// touches the shared central pool. A P whose pool and the central pool are empty takes a credit
// parked on another P before refusing, so at most the limit is ever in flight and, driven from one
// goroutine, exactly the limit is admitted. A refusal reads its own pool and the central pool's
// line (which nobody writes while the limit is full), which also says whether any credit has been
// parked on a P since a scan found every pool empty; only then does it scan the other Ps' pools.
// It counts itself in its P's row.
//
// A timed call's response time goes into its P's row, in the histogram [Limiter.Latency] reads,
// in the pinned section that gives its credit back: no atomic read-modify-write, no second line.
// The rows' totals (response times, timed calls, failures) only grow; a window is their growth
// since the last window closed, and its in-flight maximum is one word that a settle carrying a
// larger reading raises by compare-and-set. A window closes once at least its Duration (1 s) has
// passed and it holds at least MinSamples timed calls (10); a window that has run its time with
// fewer is extended (its end moves a Duration past the call that found it short) and keeps its
// samples. The call that settles after a window closes folds it (one goroutine wins a
// compare-and-set; the others never wait) and feeds the rule one [Sample]: the window's average
// response time, its largest in-flight count and whether any call failed. A limit lowered below the calls already running interrupts nothing: it takes the
// difference out of the central pool (which goes into debt) and sweeps every P's pool into it, so
// new calls are refused until enough have finished.
//
// In flight is the limit less the credits in the central pool and in every P's pool, which takes a
// read of every P's line. The in-flight maximum a window reports is the largest such reading taken
// at an admission: every timed admission with WithSampleEvery(1), and one timed admission in 8
// otherwise (one admitted call in 64 by default), since the reading makes each P's line travel
// once; a failed call that was not timed reads it at its settle. [Limiter.InFlight] takes the same
// reading: exact when no call is being admitted or settled, otherwise a reading of words that move
// independently.
//
// Timing a call costs two clock reads, the largest cost of a call. By default a Limiter times one
// admitted call in every [DefaultSampleEvery] (chosen per P by a striped counter) and settles the
// others without reading the clock; the window's average is the average of the timed calls, and a
// window needs its minimum of timed calls to close, so at low traffic a window lasts longer.
// WithSampleEvery(1) times every call, which is Netflix's behaviour. A failure is always a sample
// (the window's drop flag and in-flight maximum see it), whether or not its call was timed.
type Limiter struct {
	_ stripe.NoCopy
	_ [stripe.CacheLine]byte

	credits // written only when a P's pool is empty or overfull: a line of its own
	_       [creditsPad]byte

	limiterShared
	_ [sharedPad]byte

	limiterCold
	_ [coldPad]byte
}

// limiterShared is read by every timed acquire or settle and written about once per window.
type limiterShared struct {
	limit   atomic.Int64 // credits in all: central + pools + in flight
	end     atomic.Int64 // when the open window may close, read by every timed settle
	peak    atomic.Int64 // the most calls in flight a settled call of the open window saw
	closing atomic.Int32 // 1 while a goroutine folds a window
}

// limiterCold is set by New, or written once per window.
type limiterCold struct {
	clock  func() int64
	w      Window
	mask   int64 // every - 1: time one call in every (WithSampleEvery's n, a power of two)
	own    func(error) bool
	fail   func(error) bool
	pools  stripe.Table // per P: the credits parked there, its counts, its timed calls' histogram (wPool…)
	rule   Rule         // touched only by the goroutine holding closing
	closed totals       // the rows' totals when the last window closed; touched only by the goroutine holding closing
	events func(Event)  // WithEvents (events.go)

	windows atomic.Int64
	lastRTT atomic.Int64
}

// Padding that rounds each group to whole cache lines, sized by the compiler on every target.
const (
	sharedPad = (stripe.CacheLine - unsafe.Sizeof(limiterShared{})%stripe.CacheLine) % stripe.CacheLine
	coldPad   = (stripe.CacheLine - unsafe.Sizeof(limiterCold{})%stripe.CacheLine) % stripe.CacheLine
)

// DefaultSampleEvery is how many admitted calls share one timed call by default.
const DefaultSampleEvery = 8

// Option configures a [Limiter]; [New] applies the options in order and returns the first error.
type Option func(*config) error

type config struct {
	clock  func() int64
	every  int
	w      Window
	own    func(error) bool
	fail   func(error) bool
	events func(Event) // WithEvents (events.go)
}

// WithClock replaces the clock: nanoseconds from any monotonic origin. For tests. A nil clock is
// an error.
func WithClock(now func() int64) Option {
	return func(c *config) error { return contract.Set(ErrInvalid, "WithClock", &c.clock, now) }
}

// WithWindow sets when windows close; the default is [DefaultWindow] (at least 1 s and at least
// 10 timed calls, as Netflix's WindowedLimit has them).
func WithWindow(w Window) Option {
	return func(c *config) error {
		if err := w.Validate(); err != nil {
			return err
		}
		c.w = w
		return nil
	}
}

// WithSampleEvery times one admitted call in every n (a power of two from 1 to 1024; 1 times every
// call). The default is [DefaultSampleEvery].
func WithSampleEvery(n int) Option {
	return func(c *config) error {
		if n < 1 || n > 1024 || n&(n-1) != 0 {
			return contract.Field(ErrInvalid, "WithSampleEvery", n, "a power of two in [1, 1024]")
		}
		c.every = n
		return nil
	}
}

// WithOwnError says which errors returned to [Limiter.Do] are the caller's own (not found,
// validation): the backend did the work and answered, so they settle as a Pass, and their
// response time is a sample like a success's. An error that neither this nor [WithFailure]
// claims only frees the slot (an Ignore); an error both claim is a Fail (WithFailure is asked
// first). A nil predicate is an error.
func WithOwnError(own func(error) bool) Option {
	return func(c *config) error { return contract.Set(ErrInvalid, "WithOwnError", &c.own, own) }
}

// ownAs and otherAs are how Do settles an error [WithOwnError] claims and any other error
// neither predicate claims.
const (
	ownAs   = contract.Pass
	otherAs = contract.Ignore
)

// WithFailure says which errors returned to [Limiter.Do] are overloads (a 503 from further in, a
// full queue) besides context.DeadlineExceeded: they settle as Fail, a sample marked dropped.
// Other errors only free the slot. A nil predicate is an error.
func WithFailure(fail func(error) bool) Option {
	return func(c *config) error { return contract.Set(ErrInvalid, "WithFailure", &c.fail, fail) }
}

// New returns a limiter whose limit rule moves. The draws Vegas and MinRTT need are given to
// their constructors ([NewVegas], [NewMinRTT]); the limiter itself draws nothing.
func New(rule Rule, opts ...Option) (*Limiter, error) {
	if rule == nil {
		return nil, contract.Field(ErrInvalid, "rule", "nil", "a Rule")
	}
	c := config{clock: clock.Now, every: DefaultSampleEvery, w: DefaultWindow()}
	if err := contract.Apply(ErrInvalid, &c, opts); err != nil {
		return nil, err
	}
	l := &Limiter{}
	l.clock, l.w, l.mask, l.own, l.fail, l.rule = c.clock, c.w, int64(c.every-1), c.own, c.fail, rule
	l.events = c.events
	l.pools.Init(rowWords)
	l.setLimit(limitOfRule(rule))
	l.end.Store(l.w.endOf(l.clock()))
	return l, nil
}

// Now returns the instant the limiter's clock reads: nanoseconds of ward's monotonic clock, or of
// the one given [WithClock]. Acquire and the settle methods time calls on it.
func (l *Limiter) Now() int64 { return l.clock() }

// Lease is an admitted call. Settle it exactly once with Pass, Fail or Ignore, through the
// variable Acquire returned (the methods clear it, so settling the same variable twice is a
// harmless no-op; settling two copies of one lease frees two slots, which is a bug in the caller).
// The zero Lease is settled already.
type Lease struct {
	lim   *Limiter
	start int64 // clock reading at acquire, for a timed call
	probe int64 // a timed call's in-flight reading << 1 | 1 (the reading 0 when not taken); 0 untimed
}

// Acquire admits a call if fewer than the limit are in flight: it takes a credit from its P's
// pool, else from the central pool or another P's. It is refused only when every credit is held by
// a call in flight: one that finds credits moving between the central pool and a P's yields its P
// (runtime.Gosched) until the move is done and looks again. It never blocks on a channel or lock
// and never reads the clock on a refusal.
func (l *Limiter) Acquire() (Lease, bool) {
	r := l.pools.Current()
	if r == nil {
		panic("adaptive: Limiter used without New")
	}
	// Pinned from here to Unpin: only loads, atomics and plain adds on words that exist.
	i := stripe.PinRow(r)
	if uint(i) < uint(r.Len()) {
		if row := r.Row(i); l.takeOne(row) {
			t := tick(row)
			stripe.Unpin()
			return l.lease(t), true
		}
	}
	return l.takeRest(r.Row(i), nil, nil)
}

// take is Partition.Acquire, a call of partition p: it is refused as a borrower while another
// partition is hungry, counted, admitted or refused, in the calling P's row of p's counts in the
// same pinned section, and it may start or end p's hunger.
func (l *Limiter) take(p *Partition) (Lease, bool) {
	if p.set.hungry.Load() != 0 && p.borrows() {
		return Lease{}, false
	}
	r := l.pools.Current()
	// Pinned from here to Unpin, as in Acquire.
	i := stripe.PinRow(r)
	if x := p.counts.Current(); uint(i) < uint(r.Len()) && uint(i) < uint(x.Len()) {
		if row, xrow := r.Row(i), x.Row(i); l.takeOne(row) {
			t := tick(row)
			tally.AddRow(xrow, tally.Admitted)
			stripe.Unpin()
			return l.lease(t), true
		}
	}
	row, xrow := rowsOf(r, p, i)
	return l.takeRest(row, xrow, p)
}

// takeOne takes a credit from the pool of row, the row of the P the caller is pinned to, if the
// pool has one it can take. Where a row is picked at random rather than by the P (stripe.Pinned
// false) a pool is not its P's own, and a credit a settle has just given to it, before the settle
// pays a debt with it, could be taken by any caller: there no pooled credit is taken while the
// central pool is in debt. Where rows are the Ps' own the test is compiled out: only the pool's P
// takes from it, and a settle pays a debt before it unpins (unpinGave).
func (l *Limiter) takeOne(row unsafe.Pointer) bool {
	w := (*int64)(row)
	n := atomic.LoadInt64(w)
	return (stripe.Pinned || l.central.Load() >= 0) && n > 0 && atomic.CompareAndSwapInt64(w, n, n-1)
}

// takeRest finishes an admission (of partition p when not nil) that takeOne could not make or was
// not tried for (row nil). It is entered pinned, with the P's rows of l.pools and of p's counts as
// rowsOf returns them, and it unpins: it grows the rows if the P has none, and takes a credit from
// the central pool or another P's, or refuses.
func (l *Limiter) takeRest(row, xrow unsafe.Pointer, p *Partition) (Lease, bool) {
	for {
		if row == nil {
			stripe.Unpin()
			row, xrow = l.pinGrown(p)
		}
		// The P may be another after a growth or a wait, its pool not empty.
		if l.takeOne(row) {
			break
		}
		got := slowRefused
		if !l.refusable() {
			got = l.takeSlow((*int64)(row))
		}
		if got == slowTaken {
			break
		}
		if got == slowRefused {
			tally.AddRow(row, wRefused)
			if xrow != nil {
				tally.AddRow(xrow, tally.Refused)
			}
			stripe.Unpin()
			if p != nil {
				p.refused()
			}
			return Lease{}, false
		}
		// Credits were moving between the pools (their mover's thread may be descheduled): let
		// the move finish, unpinned, and look again on the P the caller runs on then.
		stripe.Unpin()
		runtime.Gosched()
		r := l.pools.Current()
		row, xrow = rowsOf(r, p, stripe.PinRow(r))
	}
	t := tick(row)
	if xrow != nil {
		tally.AddRow(xrow, tally.Admitted)
	}
	stripe.Unpin()
	return l.lease(t), true
}

// lease is the lease of the t-th call admitted on its P: timed when it is one of the calls
// sampled.
func (l *Limiter) lease(t int64) Lease {
	if t&l.mask != 0 { // not one of the timed calls: no clock read
		return Lease{lim: l}
	}
	return l.timedLease(t)
}

// timedLease is the lease of the t-th call admitted on its P, one of those timed.
func (l *Limiter) timedLease(t int64) Lease {
	var n int64
	if l.mask == 0 || t&(inFlightEvery*(l.mask+1)-1) == 0 {
		n = l.inFlightNow()
	}
	return Lease{lim: l, start: l.clock(), probe: n<<1 | 1}
}

// inFlightEvery: with sampling, one timed call in inFlightEvery also counts the calls in flight,
// which reads every P's pool (a cache line that P writes), so it is kept off most calls.
const inFlightEvery = 8

// Pass settles a call that succeeded: its response time is a sample.
func (ls *Lease) Pass() { ls.settle(wPassed) }

// Fail settles a call that timed out or met an overload answer: a sample marked dropped.
func (ls *Lease) Fail() { ls.settle(wFailed) }

// Ignore settles a call whose outcome says nothing about load (the caller's own error or
// cancellation, a bad request, a not found): it frees the slot and is no sample.
func (ls *Lease) Ignore() { ls.settle(wIgnored) }

// settle settles the lease as o (wPassed, wFailed or wIgnored). Small enough to inline, so that
// a settle is one call.
func (ls *Lease) settle(o uintptr) {
	if l := ls.lim; l != nil {
		ls.lim = nil
		l.release(o, ls)
	}
}

// release settles ls, a call of the Limiter's own settled as o (its caller cleared it): gives
// its credit back and counts the settle in the calling P's row. A timed call and a failure go to
// sample; the others (all but one call in DefaultSampleEvery, by default) are written here, in
// one pinned section.
func (l *Limiter) release(o uintptr, ls *Lease) {
	if ls.probe != 0 || o == wFailed {
		l.sample(o, ls, nil)
		return
	}
	r := l.pools.Current()
	// Pinned from here to Unpin: only loads, atomics and plain adds on words that exist
	// (a zero Limiter has no lease to settle; its nil rows would fault in PinRow, before the pin).
	var row unsafe.Pointer
	if i := stripe.PinRow(r); uint(i) < uint(r.Len()) {
		row = r.Row(i)
	} else {
		stripe.Unpin()
		row, _ = l.pinGrown(nil)
	}
	tally.AddRow(row, o)
	if w, n := giveBack(row); l.gated(n) {
		l.unpinGave(w, n)
	} else {
		stripe.Unpin()
	}
}

// settlePart is release for pl, a call of a partition settled as o (its caller cleared it): it
// counts the settle in the partition's row too, in the same pinned section, the count
// before the credit (a call racing for the credit never finds the settled call still in its
// partition's count).
func (l *Limiter) settlePart(o uintptr, pl *PartitionLease) {
	p := pl.part
	if pl.lease.probe != 0 || o == wFailed {
		l.sample(o, &pl.lease, p)
		return
	}
	r := l.pools.Current()
	// Pinned from here to Unpin, as in release.
	var row, xrow unsafe.Pointer
	if i, x := stripe.PinRow(r), p.counts.Current(); uint(i) < uint(r.Len()) && uint(i) < uint(x.Len()) {
		row, xrow = r.Row(i), x.Row(i)
	} else {
		stripe.Unpin()
		row, xrow = l.pinGrown(p)
	}
	tally.AddRow(row, o)
	tally.AddRow(xrow, o-wCounts)
	if w, n := giveBack(row); l.gated(n) {
		l.unpinGave(w, n)
	} else {
		stripe.Unpin()
	}
	p.settled()
}

// sample settles ls, a call of l (of partition p when not nil) settled as o (its caller cleared
// it): release and settlePart for a timed call and a failure. It counts the settle in the calling
// P's row (and in p's), and, for a timed call that is not an Ignore or for a failure, records its
// sample. The response time, the counts and the credit are written in one pinned section, the
// counts before the credit (a call racing for the credit never finds the settled call still in
// its partition's count).
func (l *Limiter) sample(o uintptr, ls *Lease, p *Partition) {
	// Before the credit goes back: the window's in-flight maximum is raised to the call's reading,
	// and a timed call reads the clock (its credit may be handed to a waiter: the hand-off is not
	// timed). rtt stays -1 for no sample.
	now, rtt := int64(0), int64(-1)
	switch {
	case ls.probe != 0 && o != wIgnored:
		l.saw(ls.probe >> 1)
		now = l.clock()
		rtt = max(now-ls.start, 0)
	case o == wFailed:
		l.saw(l.inFlightNow()) // an untimed failure takes the reading now, counting itself
	}
	r := l.pools.Current()
	// Pinned from here to Unpin, as in release.
	row, xrow := rowsOf(r, p, stripe.PinRow(r))
	if row == nil {
		stripe.Unpin()
		row, xrow = l.pinGrown(p)
	}
	if rtt >= 0 {
		tally.ObserveRow(row, wLatency, rtt) // the sample: its window reads the histogram's totals
	}
	tally.AddRow(row, o)
	if xrow != nil {
		tally.AddRow(xrow, o-wCounts)
	}
	if w, n := giveBack(row); l.gated(n) {
		l.unpinGave(w, n)
	} else {
		stripe.Unpin()
	}
	if p != nil {
		p.settled()
	}
	if rtt >= 0 && l.w.due(now, l.end.Load()) {
		l.close(now)
	}
}

// giveBack gives a settled call's credit back to the pool of row, the row of the P the caller is
// pinned to: it returns the pool's word and the credits it holds after the give. The caller
// unpins: with unpinGave when gated says so, else with Unpin (a test before the unpin, so that a
// settle that needs nothing more keeps nothing across it).
func giveBack(row unsafe.Pointer) (w *int64, n int64) {
	w = (*int64)(row)
	return w, atomic.AddInt64(w, 1)
}

// unpinGave unpins and finishes the give of a credit to the pool w, which holds n after it. A
// debt is paid before the unpin, so no call on the P takes the credit out of the pool meanwhile
// (a goroutine preempted at the unpin would let one run).
func (l *Limiter) unpinGave(w *int64, n int64) {
	l.repay(w)
	stripe.Unpin()
	l.gave(w, n)
}

// gated reports whether a settle whose credit brought its P's pool to n credits needs gave: only a
// pool that filled from empty or is overfull, a debt and an attached Queue do, which the gate
// says in one load (n is 1, or over 2×batch, or the gate is closed).
func (l *Limiter) gated(n int64) bool {
	return uint64(n-2) >= uint64(uint32(l.gate.Load()))
}

// saw raises the open window's in-flight maximum to n.
func (l *Limiter) saw(n int64) {
	for p := l.peak.Load(); n > p && !l.peak.CompareAndSwap(p, n); p = l.peak.Load() {
	}
}

// close folds the window if it has its samples, or extends it; one goroutine at a time.
func (l *Limiter) close(now int64) {
	if !l.closing.CompareAndSwap(0, 1) {
		return
	}
	defer l.closing.Store(0)
	if !l.w.due(now, l.end.Load()) { // another goroutine closed it meanwhile
		return
	}
	l.end.Store(l.w.endOf(now))
	w, totals := l.window()
	if w[fTimed] < int64(l.w.MinSamples) {
		return // too few: extended, keeping the samples
	}
	l.closed = totals
	w[fInFlight] = l.peak.Swap(0)
	limit, rtt := learn(l.rule, w)
	l.tell(now, limit, rtt) // events.go: sets the limit, tells WithEvents' function if it moved
	l.lastRTT.Store(rtt)
	l.windows.Add(1)
	l.freed() // a raised limit frees slots for waiters (queue.go)
}

// Limit returns the current limit.
func (l *Limiter) Limit() int { return int(l.limit.Load()) }

// InFlight returns how many admitted calls have not settled.
func (l *Limiter) InFlight() int { return int(l.inFlightNow()) }

// Snapshot returns the limiter's state. Its fields are read one by one and may be from slightly
// different instants.
func (l *Limiter) Snapshot() Snapshot {
	return snapshot(l.rule, Snapshot{
		Limit:    l.Limit(),
		InFlight: l.InFlight(),
		Windows:  l.windows.Load(),
		Latency:  time.Duration(l.lastRTT.Load()),
		Refused:  l.sumOf(wRefused),
	})
}

// Do runs fn under the limit. A refusal returns [ErrLimitExceeded] without calling fn. fn's error
// settles the lease as ward's one classification says: nil is a Pass; the caller's own
// cancellation (context.Canceled while ctx is done) is an Ignore; context.DeadlineExceeded, or an
// error the [WithFailure] predicate accepts, is a Fail; an error the [WithOwnError] predicate
// accepts is a Pass (the backend answered: its response time is a sample); any other error is an
// Ignore: it frees the slot and is no sample, since it says nothing sure about load. A panicking
// fn settles as a Fail and the panic
// continues. Do returns fn's error unchanged. A ctx already done returns its error
// (context.Canceled or context.DeadlineExceeded) without taking a slot or recording a sample.
func (l *Limiter) Do(ctx context.Context, fn func(context.Context) error) error {
	if err := contract.Dead(ctx); err != nil {
		return err
	}
	lease, ok := l.Acquire()
	if !ok {
		return ErrLimitExceeded
	}
	defer lease.Fail() // a no-op once settled: only a panicking fn gets here unsettled
	err := fn(ctx)
	contract.Settle(contract.Classify(ctx, err, l.own, l.fail, ownAs, otherAs), lease.Pass, lease.Fail, lease.Ignore)
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
	lease.lim = nil // the slot is held; the lease is dropped unsettled on purpose
	return ok
}

// Release frees one slot. With no call in flight it frees nothing; a Release racing the last
// calls' settles may free one more than was taken (a bug in the caller either way).
func (p PermitAdapter) Release(int64) {
	if p.l.inFlightNow() > 0 {
		p.l.release(wIgnored, &Lease{})
	}
}
