package breaker

import (
	"context"
	"math"
	"sync/atomic"
	"time"

	"github.com/wardgo/ward"
	"unsafe"

	"github.com/wardgo/ward/atomicwindow"
	"github.com/wardgo/ward/internal/clock"
	"github.com/wardgo/ward/internal/contract"
	"github.com/wardgo/ward/internal/draw"
	"github.com/wardgo/ward/internal/stripe"
	"github.com/wardgo/ward/internal/swin"
	"github.com/wardgo/ward/internal/tally"
)

// ErrUnavailable is a breaker's refusal: allocation-free, matched with errors.Is, and matching
// ward.ErrRefused too. It carries no wait: a breaker does not know when its draw will let a call
// through.
var ErrUnavailable = contract.Refusal("breaker: service unavailable")

// Breaker is the breaker of [Core], safe for any number of goroutines. It keeps ten seconds of
// outcomes and refuses each call with a probability that grows with the failures, so a struggling
// backend keeps receiving what it can still serve; a backend that answers nothing trips it, and
// then receives only spaced probes until one succeeds (see the package doc).
//
// Outcomes go into a per-P striped window ([atomicwindow.Striped]) with no lock and no atomic
// read-modify-write. The drop ratio is folded from the window and cached, refreshed at most once
// per refresh interval (a quarter of a bucket by default, [WithRefresh]) by one goroutine while
// the others read the cached value. A healthy call reads the cached ratio and, at settle, the
// clock once and one stripe, its count in the same pinned write: no draw, no lock, no allocation.
// A refusal draws once (not at all while tripped, where every draw refuses, unless [WithRand] gave
// the source), writes its Drop to one stripe (none while tripped: [Policy].Trip) and its P's
// refusal count, and reads the clock only when paced to (below). The default draw comes from a
// generator of the P's own (splitmix64, 53 bits, seeded afresh in each process), kept in the P's
// row beside its refusal count and drawn in the same pinned section that counts the refusal and
// writes it to the window. With [WithRefresh](0), which reads the clock on every call, and on
// two rare paths (a refusal while tripped decided again once the ratio has fallen, a P new since
// GOMAXPROCS grew), the draw comes from math/rand/v2's global generator instead.
//
// Time: settling a call reads the clock (its outcome belongs to the instant it finished). Allow
// does not: it uses the latest reading any settle made, so a refusal costs a few nanoseconds. While
// calls settle that reading is fresh to within a millisecond (or a quarter bucket, if smaller). A
// refusal reads the clock only when it finds that reading moved since its P's previous refusal,
// and on every 8th refusal its P makes (the 1st, 9th, 17th, …); it decides again, with the same
// draw, when the clock has moved by that granularity or more. Calls seconds apart therefore each
// see the time, so the probe fires and the ratio decays as the [Core]'s do however rarely calls
// come; after a burst, at most 7 refusals on a P decide on the instant the burst ended with; a
// flood of refusals costs a clock read once in eight, and one more on each P each time a read
// finds time moved.
// With [WithRefresh](0) Allow reads the clock and refreshes the ratio on every call, and a
// Breaker driven from one goroutine gives exactly the decisions of a [Core] fed the same instants
// and draws (a differential fuzz target proves it).
//
// What a concurrent reader may observe: an outcome being written while the ratio is folded may be
// left out of that fold (it counts at the next); the cached ratio may be one refresh interval
// stale; Ratio and Snapshot fold the window afresh. A Breaker must not be copied after first use.
// The zero value is not usable: build one with [New], or [Nop] for a breaker that never refuses.
type Breaker struct {
	_ stripe.NoCopy
	_ [stripe.CacheLine]byte // keep the hot words off whatever precedes the breaker in memory
	breakerHot
	_ [hotPad]byte
	breakerProbe
	_ [probePad]byte
	breakerCold
	_ [coldPad]byte
}

// breakerHot is what every Allow reads.
type breakerHot struct {
	seen   clock.Coarse  // the latest clock reading a settle made
	open   atomic.Int64  // while healthy: a reading below it is admitted at once (see Allow); else math.MinInt64
	raw    atomic.Uint64 // cached drop ratio before the recovery scaling (float64 bits)
	scaled atomic.Uint64 // cached drop ratio after it
	next   atomic.Int64  // when the cache is due a refresh
	until  atomic.Int64  // while tripped: a reading below it is refused at once (see hold); else math.MinInt64
	thr    atomic.Int64  // while throttling on the default source: a reading below it is drawn for at once (see refresh); else math.MinInt64
}

// breakerProbe is written while the breaker refuses: kept off the line every Allow reads.
type breakerProbe struct {
	lastPass   atomic.Int64 // the last call let through while the ratio was positive
	passed     atomic.Bool
	refreshing atomic.Int32
	pulls      atomic.Uint64 // pull-backs made (see pullBack); a refresh that saw one made meanwhile is due again at once
}

// breakerCold is set at construction and only read after.
type breakerCold struct {
	p          Policy
	win        *swin.Window     // atomicwindow.Striped's window, so a settle counts in the same pin
	fold       []swin.Bucket    // the refresh's copy of the window, Buckets long; used under refreshing
	clock      func() int64     // WithClock; nil reads ward's clock, called directly
	roll       func() float64   // WithRand, its draws cleaned; nil draws from the P's draw.Split word (see Allow)
	own        func(error) bool // WithOwnError
	fail       func(error) bool // WithFailure
	every      int64            // refresh interval, ns; 0 refreshes on every call
	probeAfter uint64           // Policy.ProbeAfter in ns; math.MaxUint64 when the probe is off
	gran       int64            // how stale seen may grow before a settle stores its reading
	counts     stripe.Table     // per P: settled by outcome (tally's words from 0), then wRand, then the refusals (wRef)
	mono       tally.Mono       // keeps Refused monotonic across readings (a refusal decided again is taken back)
	nop        bool
	events     func(Event) // WithEvents
	state      bool        // refusing, as last told to events; written only by the refreshing goroutine
}

// The pads round each group up to whole cache lines, sized from the group itself.
const (
	hotPad   = (stripe.CacheLine - unsafe.Sizeof(breakerHot{})%stripe.CacheLine) % stripe.CacheLine
	probePad = (stripe.CacheLine - unsafe.Sizeof(breakerProbe{})%stripe.CacheLine) % stripe.CacheLine
	coldPad  = (stripe.CacheLine - unsafe.Sizeof(breakerCold{})%stripe.CacheLine) % stripe.CacheLine
)

// Option configures a [Breaker]. A nil Option is an error.
type Option func(*config) error

type config struct {
	policy  Policy
	clock   func() int64
	roll    func() float64
	own     func(error) bool
	fail    func(error) bool
	refresh time.Duration
	set     bool // refresh given
	events  func(Event)
}

// Event says that a breaker started or stopped refusing. It is told by the fold that refreshes
// the cached ratio (at most once per refresh interval), never by a call's own decision.
type Event struct {
	At       int64   // the instant of the fold, in nanoseconds of the breaker's clock
	Refusing bool    // true: the ratio turned positive; false: it fell back to 0
	Ratio    float64 // the standing refusal fraction at At (see Ratio)
}

// WithEvents calls fn when the breaker starts or stops refusing (its drop ratio, before the
// recovery scaling, turns positive or falls back to 0). fn runs on the goroutine whose call
// happened to refresh the ratio, while no other refresh can run: keep it short (count, log with
// log/slog, set a gauge) and do not block in it. It costs nothing on a call that does not refresh.
// A nil fn is an error.
func WithEvents(fn func(Event)) Option {
	return func(c *config) error { return contract.Hook(ErrInvalid, "WithEvents", &c.events, fn) }
}

// WithPolicy sets the policy (default [DefaultPolicy]). An invalid policy is an error when the
// option is applied, naming the field (Policy.Validate).
func WithPolicy(p Policy) Option {
	return func(c *config) error {
		if err := p.Validate(); err != nil {
			return err
		}
		c.policy = p
		return nil
	}
}

// WithClock replaces the clock: nanoseconds from any monotonic origin (default: ward's monotonic
// clock). [Breaker.Now] reads it. A nil clock is an error.
func WithClock(now func() int64) Option {
	return func(c *config) error { return contract.Set(ErrInvalid, "WithClock", &c.clock, now) }
}

// WithRand replaces the draw source (default: a splitmix64 generator per P, seeded afresh in each
// process, whose draws are uniform in [0, 1) with 53 bits; math/rand/v2's generator on the rare
// call that finds GOMAXPROCS grown since, and on a refusal made while tripped, without a draw,
// that is decided again after a refresh lowered the ratio). The source is drawn on every call the drop ratio
// decides, in order. A draw outside [0, 1), NaN included, is held into it (NaN counts as 0). A
// nil source is an error.
func WithRand(roll func() float64) Option {
	return func(c *config) error { return contract.Set(ErrInvalid, "WithRand", &c.roll, roll) }
}

// WithOwnError says which errors of fn, in [Breaker.Do], are the caller's own (a not found, a
// validation error): the backend answered, so they settle as a success. A nil predicate is an
// error.
func WithOwnError(own func(error) bool) Option {
	return func(c *config) error { return contract.Set(ErrInvalid, "WithOwnError", &c.own, own) }
}

// WithFailure says which errors of fn, in [Breaker.Do], are failures besides those every error
// already is: an error it accepts settles as a failure even if [WithOwnError] accepts it too. A
// nil predicate is an error.
func WithFailure(fail func(error) bool) Option {
	return func(c *config) error { return contract.Set(ErrInvalid, "WithFailure", &c.fail, fail) }
}

// WithRefresh sets how often the cached drop ratio is folded afresh from the window; the default
// is a quarter of a bucket (62.5 ms with the preset). Zero refreshes on every call and makes Allow
// read the clock: exact, and slower.
func WithRefresh(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return contract.Field(ErrInvalid, "WithRefresh", d, ">= 0")
		}
		c.refresh, c.set = d, true
		return nil
	}
}

// New returns a breaker with an empty window.
func New(opts ...Option) (*Breaker, error) {
	c := config{policy: DefaultPolicy()}
	if err := contract.Apply(ErrInvalid, &c, opts); err != nil {
		return nil, err
	}
	if err := c.policy.Validate(); err != nil {
		return nil, err
	}
	width := int64(c.policy.Window) / int64(c.policy.Buckets)
	if !c.set {
		c.refresh = clock.Refresh(width)
	}
	b := &Breaker{breakerCold: breakerCold{clock: c.clock}}
	now := b.Now()
	win := swin.New(c.policy.Buckets, width, fields, now) // the shape is valid: Validate checked it
	b.breakerCold = breakerCold{
		p:          c.policy,
		win:        win,
		clock:      c.clock,
		own:        c.own,
		fail:       c.fail,
		every:      int64(c.refresh),
		gran:       clock.Granularity(width),
		events:     c.events,
		fold:       make([]swin.Bucket, c.policy.Buckets),
		probeAfter: math.MaxUint64,
	}
	if c.policy.ProbeAfter > 0 {
		b.probeAfter = uint64(c.policy.ProbeAfter)
	}
	if c.roll != nil {
		b.roll = draw.Func(c.roll)
	}
	b.counts.Init(wWords)
	b.seen.Store(now)
	b.next.Store(now)
	b.until.Store(math.MinInt64)
	b.open.Store(math.MinInt64)
	b.thr.Store(math.MinInt64)
	return b, nil
}

// Nop returns a breaker that never refuses and records nothing: the feature turned off behind
// the same type. Its Now reads ward's monotonic clock.
func Nop() *Breaker {
	b := &Breaker{breakerCold: breakerCold{nop: true, p: DefaultPolicy()}}
	b.until.Store(math.MinInt64)
	b.open.Store(math.MinInt64)
	b.thr.Store(math.MinInt64)
	return b
}

// Now returns the instant the breaker decides at, in nanoseconds of its clock: ward's monotonic
// clock, or the one given [WithClock].
func (b *Breaker) Now() int64 {
	if b.clock == nil {
		return clock.Now() // a direct call: inlined, where a function value could not be
	}
	return b.clock()
}

// draw returns the draw of a call decided against the cached drop ratio scaled. An injected
// source (WithRand) is drawn on every such call, so a test feeding a [Core] the same sequence of
// draws stays in step; the default source is not drawn while tripped (scaled 1), where every draw
// refuses, and reports so with drawn false.
func (b *Breaker) draw(scaled float64) (roll float64, drawn bool) {
	if b.roll != nil {
		return b.roll(), true
	}
	if scaled >= 1 {
		return 0, false
	}
	return draw.Float64(), true
}

// Promise is a call the breaker let through. Settle it once with Pass, Fail or Ignore, through
// the variable Allow returned: the methods clear it, so settling it again is a no-op. The zero
// Promise is settled already.
type Promise struct{ b *Breaker }

// Pass records that the backend served the call.
func (p *Promise) Pass() {
	if b := p.b; b != nil {
		p.b = nil
		b.record(fSuccess, tally.Passed)
	}
}

// Fail records that the backend failed the call.
func (p *Promise) Fail() {
	if b := p.b; b != nil {
		p.b = nil
		b.record(fFailure, tally.Failed)
	}
}

// Ignore settles the call without recording it: the caller gave up before the backend answered,
// so the call says nothing about the backend. A breaker holds no slot for a call, so there is
// nothing to free.
func (p *Promise) Ignore() {
	if b := p.b; b != nil {
		p.b = nil
		tally.AddRow(b.counts.Pin(), tally.Ignored)
		stripe.Unpin()
	}
}

// A P's counts row holds, after tally's words, the P's draw state (wRand, for draw.Split) and its
// refusals with the instant their clock reads are paced by (wRef, clock.Count's words): a refusal
// draws, counts itself and writes its Drop with one pin and one row.
const (
	wRand  = tally.Words
	wRef   = wRand + 1
	wWords = wRef + clock.CountWords
)

// refuse counts a refusal decided at the reading now on the caller's P and reports whether the
// caller should read the clock and decide again (clock.Count).
func (b *Breaker) refuse(now int64) bool {
	read := clock.Count(unsafe.Add(b.counts.Pin(), wRef*8), now)
	stripe.Unpin()
	return read
}

// unrefuse takes back the refusal last counted on the caller's P: decided again, the call was let
// through after all.
func (b *Breaker) unrefuse() {
	clock.Uncount(unsafe.Add(b.counts.Pin(), wRef*8))
	stripe.Unpin()
}

// refused returns the refusals counted since New, summed over the Ps.
func (b *Breaker) refused() int64 {
	var n int64
	for row := range b.counts.All() {
		n += clock.Counted(unsafe.Add(row, wRef*8))
	}
	return n
}

// record counts a settled call's outcome in the window at the clock's instant, and in the counts
// (word out), with one pin. A call is counted as admitted when it settles: Counts takes Admitted
// as the sum of the outcomes, so no word is written for it.
func (b *Breaker) record(field int, out uintptr) {
	var now int64
	if b.clock == nil { // Now, written out: a direct call of ward's clock, inlined
		now = clock.Now()
	} else {
		now = b.clock()
	}
	rows := b.counts.Current()
	if p := stripe.PinRow(rows); uint(p) >= uint(rows.Len()) { // GOMAXPROCS grew past the rows
		stripe.Unpin()
		b.recordSlow(now, field, out)
	} else {
		row := rows.Row(p) // taken before the window's atomic loads: no check after them
		// the window's common case, FreshAt, written out here so that it makes no call: its P's
		// copy of the head bucket known from the memo
		if wrows, h := b.win.Rows(); uint(p) < uint(wrows.Len()) && b.win.FreshAt(wrows.Row(p), h, now) {
			stripe.Add(b.win.FreshCounter(wrows.Row(p), field), 1)
			tally.AddRow(row, out)
			stripe.Unpin()
		} else {
			b.recordMiss(p, row, now, field, out)
		}
	}
	if b.every == 0 {
		return
	}
	// the common case in three compares: the reading at seen or within the granularity past it
	// (the distance taken in uint64, where it cannot overflow), and no refresh due
	if seen := b.seen.Load(); now < seen || uint64(now)-uint64(seen) >= uint64(b.gran) || now >= b.next.Load() {
		b.settled(now)
	}
}

// recordMiss is record's write past FreshAt's case, entered pinned to P index p, whose counts row
// is row: the first write of a head bucket on the P, a late write, a new head bucket, a clock
// jumped back, or GOMAXPROCS grown past the window's rows.
func (b *Breaker) recordMiss(p int, row unsafe.Pointer, now int64, field int, out uintptr) {
	if b.win.AddFreshPinned(p, now, field, 1) {
		tally.AddRow(row, out)
		stripe.Unpin()
		return
	}
	stripe.Unpin()
	b.recordSlow(now, field, out)
}

// recordSlow is record's write past AddFreshPinned's case, entered unpinned: the window's own
// write, which moves the head or restarts the stripes, then the count, which grows the rows.
func (b *Breaker) recordSlow(now int64, field int, out uintptr) {
	b.win.Add(now, field, 1)
	tally.AddRow(b.counts.Pin(), out)
	stripe.Unpin()
}

// settled is record's tail when the reading moved seen's granularity or more, lies behind it, or
// finds a refresh due.
func (b *Breaker) settled(now int64) {
	if !b.pullBack(now) {
		b.seen.Observe(now, b.gran)
	}
	if now >= b.next.Load() {
		b.refresh(now)
	}
}

// refresh folds the window into the cached ratio; one goroutine at a time, the others go on with
// the cached value.
func (b *Breaker) refresh(now int64) {
	if !b.refreshing.CompareAndSwap(0, 1) {
		return
	}
	defer b.refreshing.Store(0) // also if an events function panics
	pulls := b.pulls.Load()
	var h history
	fold := b.fold[:b.win.Read(now, true, b.fold)]
	for i := range fold {
		if t := &fold[i]; t[fSuccess]|t[fFailure]|t[fDrop] != 0 { // an empty bucket changes no total and no run
			h.add((*atomicwindow.Bucket)(t), &b.p)
		}
	}
	raw, scaled := b.p.ratio(h)
	b.publish(now, pulls, raw, scaled)
}

// publish stores a refresh's ratio, made at now, and the instants until which Allow's short paths
// hold. A pull-back made while the refresh ran, or before it but after now was read (pulls moved,
// or the latest reading lies more than a window before now: a settle read an instant more than a
// window before the latest), makes now suspect, a reading far past the clock's: its instants would
// hold the cache until that far future, so the refresh is left due at once and the short paths
// closed, and the next settle refreshes at its own reading.
func (b *Breaker) publish(now int64, pulls uint64, raw, scaled float64) {
	b.raw.Store(math.Float64bits(raw))
	b.scaled.Store(math.Float64bits(scaled))
	b.next.Store(now + b.every)
	b.until.Store(math.MinInt64) // the ratio may have changed: the next refusal decides in full
	// Allow's short paths, each until the next refresh: healthy, every call admitted; throttling
	// on the default source, every call drawn for (Allow's throttling tail)
	open, thr := int64(math.MinInt64), int64(math.MinInt64)
	if b.every != 0 && raw <= 0 {
		open = now + b.every
	} else if b.every != 0 && scaled < 1 && b.roll == nil {
		thr = now + b.every
	}
	b.open.Store(open)
	b.thr.Store(thr)
	if b.pulls.Load() != pulls || b.every != 0 && b.ahead(now) {
		b.next.Store(math.MinInt64)
		b.open.Store(math.MinInt64)
		b.thr.Store(math.MinInt64)
	}
	if b.events != nil && (raw > 0) != b.state {
		b.state = raw > 0
		b.events(Event{At: now, Refusing: b.state, Ratio: scaled})
	}
}

// pullBack reports whether now lies more than a window before the latest reading (the clock
// jumped back, or a far-future instant was read before), and if so pulls the reading and the
// refresh due back to now: without it, Allow would go on deciding at the far-future instant and
// the cache would never refresh.
func (b *Breaker) pullBack(now int64) bool {
	if !b.jumped(now) {
		return false
	}
	b.seen.Store(now)
	b.next.Store(now)
	b.until.Store(math.MinInt64)
	b.open.Store(math.MinInt64)
	b.thr.Store(math.MinInt64)
	b.pulls.Add(1)
	return true
}

// jumped reports whether now lies more than a window before the latest reading: what pullBack
// pulls back, without writing.
func (b *Breaker) jumped(now int64) bool {
	seen := b.seen.Load()
	return now < seen && uint64(seen)-uint64(now) > uint64(b.p.Window)
}

// ahead reports whether now lies more than a window after the latest reading: a reading that a
// pull-back has since pulled the latest reading back from (every settle and every refresh at a
// reading brings the latest reading to within the granularity of it otherwise).
func (b *Breaker) ahead(now int64) bool {
	seen := b.seen.Load()
	return now > seen && uint64(now)-uint64(seen) > uint64(b.p.Window)
}

// moved reports whether again, given the reading now (the latest reading, as Allow loaded it)
// and the clock's fresh reading, should decide again: time moved by the granularity or more, or
// jumped back more than a window (again pulls back only if fresh lies that far before the latest
// reading as it then stands). It reads and writes nothing shared, so a pinned caller may ask.
func (b *Breaker) moved(now, fresh int64) bool {
	return fresh-now >= b.gran || now > fresh && uint64(now)-uint64(fresh) > uint64(b.p.Window)
}

func (b *Breaker) history(now int64) history {
	var h history
	b.win.Each(now, true, func(t swin.Bucket) { h.add((*atomicwindow.Bucket)(&t), &b.p) })
	return h
}

// Allow asks to make one call. It returns a promise to settle once the call has finished, or
// [ErrUnavailable], recorded as a Drop.
func (b *Breaker) Allow() (Promise, error) {
	// The tripped check comes first: a flood of refusals is where a call's cost counts most. now is
	// loaded on the line of a compare, so no no-op instruction marks where its load was inlined.
	if now := b.seen.Load(); now < b.until.Load() {
		// Tripped, the reading before both the next probe and the next refresh: the full path
		// would refuse this call and change nothing but the refusal count (see hold).
		rows := b.counts.Current() // refuse, written out: no call on the refusal
		if p := stripe.PinRow(rows); uint(p) < uint(rows.Len()) {
			if !clock.Count(unsafe.Add(rows.Row(p), wRef*8), now) {
				stripe.Unpin()
				return Promise{}, ErrUnavailable
			}
			stripe.Unpin() // the clock is read unpinned
		} else {
			stripe.Unpin() // GOMAXPROCS grew past the rows: refuse grows them
			if !b.refuse(now) {
				return Promise{}, ErrUnavailable
			}
		}
		var fresh int64
		if b.clock == nil { // Now, written out: a direct call of ward's clock, inlined
			fresh = clock.Now()
		} else {
			fresh = b.clock()
		}
		if b.moved(now, fresh) {
			return b.again(now, fresh, 0, 1, false)
		}
		return Promise{}, ErrUnavailable
	} else if now < b.open.Load() {
		// Healthy at the last refresh, the reading before the next one: the full path would
		// admit this call and change nothing (see refresh).
		return Promise{b: b}, nil
	} else {
		bits := b.scaled.Load()
		if now >= b.thr.Load() {
			// Not throttling on the default source before the next refresh (thr): the general path
			// decides, or finds the call to be throttled.
			var p Promise
			var err error
			var done bool
			if now, bits, p, err, done = b.allow(now); done {
				return p, err
			}
		}
		// Throttling on the default source: after the probe, the draw, the refusal's count and its
		// Drop are made in one pinned section, the draw from the P's own state (draw.Split) in its
		// counts row. First, scaled in [0, 1), its bits compared as an integer (non-negative floats
		// order as their bits; 1 and over, NaN and negatives, whose sign bit is set, all fail): not
		// so after a refresh between the loads of thr and of scaled, and then the general path
		// decides.
		if bits >= math.Float64bits(1) {
			scaled := math.Float64frombits(bits)
			roll, drawn := b.draw(scaled)
			return b.decide(now, roll, scaled, drawn)
		}
		scaled := math.Float64frombits(bits)
		if b.passed.Load() { // probes, written out: no call but when the probe is due
			if last := b.lastPass.Load(); b.due(now, last) && b.probeAt(now, last) {
				return Promise{b: b}, nil
			}
		}
		if bits == 0 { // scaled to 0 by the recovery: every draw admits
			b.let(now)
			return Promise{b: b}, nil
		}
		rows := b.counts.Current()
		p := stripe.PinRow(rows)
		if uint(p) >= uint(rows.Len()) { // GOMAXPROCS grew past the rows: the path that grows them
			stripe.Unpin()
			return b.decide(now, draw.Float64(), scaled, true)
		}
		row := rows.Row(p) // not nil: p is within the rows (checked as the index, so Row's check goes)
		roll := draw.Split((*int64)(unsafe.Add(row, wRand*8)))
		if roll >= scaled {
			stripe.Unpin()
			b.let(now)
			return Promise{b: b}, nil
		}
		if clock.Count(unsafe.Add(row, wRef*8), now) { // refreshing on a clock (every > 0): see allow
			// ward's clock, which cannot panic, read in the pin: when time has not moved, the Drop
			// is written in this pin too, where again would pin a second time. A clock given
			// WithClock is the caller's code, never called pinned: read after.
			var fresh int64
			if b.clock == nil {
				fresh = clock.Now()
			}
			if b.clock != nil || b.moved(now, fresh) {
				stripe.Unpin()
				if b.clock != nil {
					fresh = b.clock()
				}
				return b.again(now, fresh, roll, scaled, true)
			}
		}
		// the Drop: the window's memo (At) inlined, AddPinned past it
		if wrows, h := b.win.Rows(); uint(p) < uint(wrows.Len()) && b.win.At(wrows.Row(p), h, now) {
			stripe.Add(b.win.Counter(wrows.Row(p), fDrop), 1)
		} else if !b.win.AddPinned(p, now, fDrop, 1) {
			stripe.Unpin()
			b.win.Add(now, fDrop, 1)
			return Promise{}, ErrUnavailable
		}
		stripe.Unpin()
		return Promise{}, ErrUnavailable
	}
}

// allow is Allow past its short paths, deciding at the reading now: it reports done with the
// call's answer, or not done with the instant and the cached ratio's bits for Allow's
// throttling tail. With WithRefresh(0), which reads the clock on every call, it decides every
// call itself (decide), so the tail's paced clock reads never apply there.
func (b *Breaker) allow(now int64) (at int64, bits uint64, p Promise, err error, done bool) {
	if b.nop {
		return now, 0, Promise{}, nil, true
	}
	if b.every == 0 {
		now = b.Now()
		b.refresh(now)
	} else if now >= b.next.Load() {
		b.refresh(now)
	}
	if math.Float64frombits(b.raw.Load()) <= 0 {
		return now, 0, Promise{b: b}, nil, true
	}
	scaled := math.Float64frombits(b.scaled.Load())
	if b.roll == nil && scaled < 1 && b.every != 0 { // the tail paces its clock reads by its count
		return now, math.Float64bits(scaled), Promise{}, nil, false
	}
	roll, drawn := b.draw(scaled)
	p, err = b.decide(now, roll, scaled, drawn)
	return now, 0, p, err, true
}

// decide ends a call at the reading now, the cached ratio scaled positive, with the draw roll
// (drawn false: the default source at ratio 1, which draws nothing).
func (b *Breaker) decide(now int64, roll, scaled float64, drawn bool) (Promise, error) {
	if b.admits(now, roll, scaled) {
		return Promise{b: b}, nil
	}
	if !drawn && b.every != 0 {
		b.hold(now)
	}
	if b.refuse(now) && b.every != 0 {
		return b.again(now, b.Now(), roll, scaled, drawn)
	}
	if scaled < 1 { // a refusal while tripped is not a Drop (Policy.Trip)
		b.win.Add(now, fDrop, 1)
	}
	return Promise{}, ErrUnavailable
}

// again ends a refusal decided at the reading now whose count asked for a clock read (see the
// type's doc), fresh the clock's reading: if time has moved since that reading (or jumped far
// back), it decides again at the fresh instant with the same draw, so the probe fires and the ratio decays even when nothing gets
// through. Time that moved less than the granularity changes nothing the coarse reading could
// not; deciding again would only write shared words every core fights over under a flood.
func (b *Breaker) again(now, fresh int64, roll, scaled float64, drawn bool) (Promise, error) {
	if fresh-now >= b.gran || b.pullBack(fresh) { // moved, pulling back
		b.seen.Observe(fresh, b.gran)
		if fresh >= b.next.Load() {
			b.refresh(fresh)
		}
		scaled = math.Float64frombits(b.scaled.Load())
		if !drawn { // refused while tripped without a draw: the ratio may have fallen since
			roll, _ = b.draw(scaled)
		}
		if math.Float64frombits(b.raw.Load()) <= 0 || b.admits(fresh, roll, scaled) {
			b.unrefuse()
			return Promise{b: b}, nil
		}
		if !drawn && b.roll == nil && scaled >= 1 {
			b.hold(fresh)
		}
		now = fresh
	}
	if scaled < 1 { // a refusal while tripped is not a Drop (Policy.Trip)
		b.win.Add(now, fDrop, 1)
	}
	return Promise{}, ErrUnavailable
}

// hold is told of a refusal at the reading now while tripped, without a draw (the default source
// draws nothing at ratio 1): until the next probe instant or the next refresh, whichever comes
// first, every call would be refused the same way and change nothing but the refusal count, so
// it stores that instant in until for Allow's short path. Whatever changes what a refusal decides
// (a refresh, the last pass or its flag, a reading pulled back) resets until to math.MinInt64
// after its own write; hold reads those words again after storing until, and resets it if any
// moved meanwhile, so a concurrent change is never lost.
func (b *Breaker) hold(now int64) {
	next, last, raw, scaled := b.next.Load(), b.lastPass.Load(), b.raw.Load(), b.scaled.Load()
	if !b.passed.Load() || math.Float64frombits(scaled) < 1 || math.Float64frombits(raw) <= 0 || last > now {
		return
	}
	until := next
	if p := int64(b.p.ProbeAfter); p > 0 && last <= math.MaxInt64-p-1 {
		until = min(until, last+p+1) // the probe passes once now - last > ProbeAfter
	}
	if now >= until {
		return
	}
	b.until.Store(until)
	if b.next.Load() != next || b.lastPass.Load() != last || b.raw.Load() != raw || b.scaled.Load() != scaled {
		b.until.Store(math.MinInt64)
	}
}

// changed resets until after a write to the last pass or its flag (see hold), writing the shared
// word only when it is set.
func (b *Breaker) changed() {
	if b.until.Load() != math.MinInt64 {
		b.until.Store(math.MinInt64)
	}
}

// admits decides a call at now with the draw roll while the drop ratio is positive: the probe, or
// a draw at or over the cached ratio scaled.
func (b *Breaker) admits(now int64, roll, scaled float64) bool {
	if b.probes(now) {
		return true
	}
	if roll < scaled {
		if scaled >= 1 && !b.passed.Load() { // tripped before any call passed: the probe counts from now
			b.lastPass.Store(now)
			b.passed.Store(true)
			b.changed()
		}
		return false
	}
	b.let(now)
	return true
}

// probes reports whether a call at now passes as the probe, taking the last pass for it.
func (b *Breaker) probes(now int64) bool {
	if !b.passed.Load() {
		return false
	}
	last := b.lastPass.Load()
	return b.due(now, last) && b.probeAt(now, last)
}

// due is the probe's common case in one compare: false while now lies ProbeAfter or less after
// the last pass, always with the probe off (probeAfter math.MaxUint64); true, for probeAt to
// decide, past it or with the last pass after now.
func (b *Breaker) due(now, last int64) bool {
	return uint64(now)-uint64(last) > b.probeAfter || now < last
}

// probeAt is probes past its common case, the last pass read as last.
func (b *Breaker) probeAt(now, last int64) bool {
	if last > now && b.lastPass.CompareAndSwap(last, now) { // the clock jumped back: pull it back too
		b.changed()
		last = now
	}
	if b.p.probe(now, last) && b.lastPass.CompareAndSwap(last, now) {
		b.changed()
		return true
	}
	return false
}

// let records a call at now let through by the draw.
func (b *Breaker) let(now int64) {
	b.lastPass.Store(now)
	b.passed.Store(true)
	b.changed()
}

// Do runs fn if the breaker allows it, settles the call by fn's error and returns that error
// unchanged. A refusal returns [ErrUnavailable] without calling fn; a caller with a fallback
// serves it on errors.Is(err, ErrUnavailable).
//
// fn's error settles as ward's one classification says ([contract.Classify]): nil passes; the
// caller's own cancellation (context.Canceled while ctx is done) is ignored, since the backend
// never answered; context.DeadlineExceeded and errors [WithFailure] accepts fail; errors
// [WithOwnError] accepts pass (the backend answered: a not found is a working backend); any other
// error fails. A panicking fn settles as a failure and the panic continues. A ctx already done
// returns its error (context.Canceled or context.DeadlineExceeded) and records nothing.
func (b *Breaker) Do(ctx context.Context, fn func(context.Context) error) error {
	if err := contract.Dead(ctx); err != nil {
		return err
	}
	p, err := b.Allow()
	if err != nil {
		return err
	}
	defer p.Fail() // a no-op once settled; a failure if fn panics
	err = fn(ctx)
	contract.Settle(contract.Classify(ctx, err, b.own, b.fail, contract.Pass, contract.Fail), p.Pass, p.Fail, p.Ignore)
	return err
}

// Ratio returns the standing refusal fraction now, folded afresh from the window: 0 while healthy.
// The probe is left out.
func (b *Breaker) Ratio() float64 {
	if b.nop {
		return 0
	}
	_, scaled := b.p.ratio(b.history(b.Now()))
	return scaled
}

// Snapshot is a breaker's state for dashboards.
type Snapshot struct {
	Ratio     float64 // the standing refusal fraction (see Ratio)
	Successes int64   // in the window
	Failures  int64   // in the window
	Drops     int64   // refusals in the window
	Refused   int64   // refusals since New
}

// Snapshot folds the window afresh. Its fields are read one by one and may be from slightly
// different instants.
func (b *Breaker) Snapshot() Snapshot {
	if b.nop {
		return Snapshot{}
	}
	now := b.Now()
	_, scaled := b.p.ratio(b.history(now))
	sum := b.win.Sum(now, true)
	return Snapshot{Ratio: scaled, Successes: sum[fSuccess], Failures: sum[fFailure], Drops: sum[fDrop], Refused: b.refused()}
}

// Counts returns the breaker's counts since New ([ward.Counts]): calls admitted and refused, and
// the admitted calls settled by outcome. A breaker holds nothing for a call in flight, so it
// counts an admission when the call settles, with its outcome (one plain add on the calling P's
// own line): Admitted is always Passed + Failed + Ignored, and a call not yet settled is not yet
// in it. Refusals are counted in the per-P rows that already pace the clock reads. Counts folds
// them. A [Nop] breaker counts nothing.
func (b *Breaker) Counts() ward.Counts {
	c := tally.CountsOf(b.counts.All(), 0)
	c.Admitted = c.Passed + c.Failed + c.Ignored // counted when settled: see record
	c.Refused = b.mono.Of(tally.Pos(b.refused()))
	return c
}
