package breaker

import (
	"errors"
	"math"
	"sync/atomic"
	"time"

	"github.com/wardgo/ward/atomicwindow"
	"github.com/wardgo/ward/internal/clock"
	"github.com/wardgo/ward/internal/draw"
	"github.com/wardgo/ward/internal/stripe"
)

// ErrUnavailable is a breaker's refusal: allocation-free, matched with errors.Is.
var ErrUnavailable = errors.New("breaker: service unavailable")

// Striped window fields.
const (
	fSuccess = iota
	fFailure
	fDrop
)

// Breaker is the SRE breaker of [Core], safe for any number of goroutines. There is no open,
// half-open and closed: it keeps ten seconds of outcomes and refuses each call with a probability
// that grows with the failures, so a struggling backend keeps receiving what it can still serve.
//
// Outcomes go into a per-P striped window ([atomicwindow.Striped]) with no lock and no atomic
// read-modify-write. The drop ratio is folded from the window and cached, refreshed at most once
// per refresh interval (a quarter of a bucket by default, [WithRefresh]) by one goroutine while
// the others read the cached value. A healthy call reads the cached ratio and, at settle, the
// clock once and one stripe: no draw, no lock, no allocation. A refusal draws once and writes one
// stripe, and reads no clock.
//
// Time: settling a call reads the clock (its outcome belongs to the instant it finished). Allow
// does not: it uses the latest reading any settle made, so a refusal costs a few nanoseconds. While
// calls settle that reading is fresh to within a millisecond (or a quarter bucket, if smaller). A
// refusal reads the clock only when its P has refused the 1st, 2nd, 4th or a multiple of 8th call since that
// reading last moved, and then decides again, with the same draw, if time has moved: at low
// traffic every refusal sees the time, so the probe fires and the ratio decays as the [Core]'s
// do however rarely calls come, while a flood of refusals costs a clock read once in many.
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
	_ [stripe.CacheLine]byte

	raw    atomic.Uint64 // cached drop ratio before the recovery scaling (float64 bits); hot
	scaled atomic.Uint64 // cached drop ratio after it
	next   atomic.Int64  // when the cache is due a refresh
	seen   clock.Coarse  // the latest clock reading a settle made
	_      [stripe.CacheLine - 32]byte

	lastPass   atomic.Int64 // the last call let through while the ratio was positive
	passed     atomic.Bool
	refreshing atomic.Int32
	_          [stripe.CacheLine - 16]byte

	p       Policy
	win     *atomicwindow.Striped
	clock   func() int64
	roll    func() float64
	every   int64 // refresh interval, ns; 0 refreshes on every call
	gran    int64 // how stale seen may grow before a settle stores its reading
	refused clock.Refusals
	nop     bool
}

// Option configures a [Breaker].
type Option func(*config) error

type config struct {
	policy  Policy
	clock   func() int64
	roll    func() float64
	refresh time.Duration
	set     bool // refresh given
}

// WithPolicy sets the policy (default [DefaultPolicy]).
func WithPolicy(p Policy) Option { return func(c *config) error { c.policy = p; return nil } }

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

// WithRand replaces the draw source (default: math/rand/v2's lock-free per-thread generator). A
// draw outside [0, 1), NaN included, is held into it (NaN counts as 0).
func WithRand(roll func() float64) Option { return func(c *config) error { c.roll = roll; return nil } }

// WithRefresh sets how often the cached drop ratio is folded afresh from the window; the default
// is a quarter of a bucket (62.5 ms with the preset). Zero refreshes on every call and makes Allow
// read the clock: exact, and slower.
func WithRefresh(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return invalid("WithRefresh", d, ">= 0")
		}
		c.refresh, c.set = d, true
		return nil
	}
}

// New returns a breaker with an empty window.
func New(opts ...Option) (*Breaker, error) {
	c := config{policy: DefaultPolicy(), clock: clock.Now}
	for _, o := range opts {
		if err := o(&c); err != nil {
			return nil, err
		}
	}
	if err := c.policy.Validate(); err != nil {
		return nil, err
	}
	width := int64(c.policy.Window) / int64(c.policy.Buckets)
	if !c.set {
		c.refresh = clock.Refresh(width)
	}
	now := c.clock()
	b := &Breaker{
		p:     c.policy,
		win:   atomicwindow.NewStriped(c.policy.Buckets, c.policy.Window, 3, now),
		clock: c.clock,
		roll:  draw.Func(c.roll),
		every: int64(c.refresh),
		gran:  clock.Granularity(width),
	}
	b.refused.Init()
	b.seen.Store(now)
	b.next.Store(now)
	return b, nil
}

// Nop returns a breaker that never refuses and records nothing: the feature turned off behind
// the same type.
func Nop() *Breaker { return &Breaker{nop: true, p: DefaultPolicy()} }

// Promise is a call the breaker let through. Settle it once with Pass or Fail, through the
// variable Allow returned: the methods clear it, so settling it again is a no-op. The zero Promise
// is settled already.
type Promise struct{ b *Breaker }

// Pass records that the call succeeded.
func (p *Promise) Pass() {
	if b := p.b; b != nil {
		p.b = nil
		b.record(fSuccess)
	}
}

// Fail records that the call failed.
func (p *Promise) Fail() {
	if b := p.b; b != nil {
		p.b = nil
		b.record(fFailure)
	}
}

func (b *Breaker) record(field int) {
	now := b.clock()
	b.win.Add(now, field, 1)
	if b.every == 0 {
		return
	}
	b.seen.Observe(now, b.gran)
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
	raw, scaled := b.p.ratio(b.history(now))
	b.raw.Store(math.Float64bits(raw))
	b.scaled.Store(math.Float64bits(scaled))
	b.next.Store(now + b.every)
	b.refreshing.Store(0)
}

func (b *Breaker) history(now int64) history {
	var h history
	b.win.Each(now, true, func(t atomicwindow.Bucket) { h.add(t[fSuccess], t[fFailure], t[fDrop]) })
	return h
}

// Allow asks to make one call. It returns a promise to settle once the call has finished, or
// [ErrUnavailable], recorded as a Drop.
func (b *Breaker) Allow() (Promise, error) {
	if b.nop {
		return Promise{}, nil
	}
	var now int64
	if b.every == 0 {
		now = b.clock()
		b.refresh(now)
	} else if now = b.seen.Load(); now >= b.next.Load() {
		b.refresh(now)
	}
	if math.Float64frombits(b.raw.Load()) <= 0 {
		return Promise{b: b}, nil
	}
	roll := b.roll()
	if b.admits(now, roll) {
		return Promise{b: b}, nil
	}
	if b.refused.Refuse(now) && b.every != 0 {
		// A paced clock read (see the type's doc): if time has moved since the reading this
		// refusal was decided on, decide again at the fresh instant with the same draw, so the
		// probe fires and the ratio decays even when nothing gets through.
		if fresh := b.clock(); fresh > now {
			b.seen.Observe(fresh, b.gran)
			if fresh >= b.next.Load() {
				b.refresh(fresh)
			}
			if math.Float64frombits(b.raw.Load()) <= 0 || b.admits(fresh, roll) {
				b.refused.Undo()
				return Promise{b: b}, nil
			}
			now = fresh
		}
	}
	b.win.Add(now, fDrop, 1)
	return Promise{}, ErrUnavailable
}

// admits decides a call at now with the draw roll while the drop ratio is positive: the probe, or
// a draw at or over the ratio.
func (b *Breaker) admits(now int64, roll float64) bool {
	if b.p.Probe > 0 && b.passed.Load() {
		if last := b.lastPass.Load(); now-last > int64(b.p.Probe) && b.lastPass.CompareAndSwap(last, now) {
			return true
		}
	}
	if roll < math.Float64frombits(b.scaled.Load()) {
		return false
	}
	b.lastPass.Store(now)
	b.passed.Store(true)
	return true
}

// Do runs fn if the breaker allows it: a nil error is a success, any other a failure. A refusal
// returns [ErrUnavailable] without calling fn. A panicking fn counts as a failure and the panic
// continues.
func (b *Breaker) Do(fn func() error) error { return b.DoWith(fn, nil, nil) }

// DoWith is Do with two hooks, either may be nil: acceptable says which errors are the caller's
// own (a not found, a validation error) and count as success; fallback is called only on a
// refusal, with [ErrUnavailable], and its result is returned.
func (b *Breaker) DoWith(fn func() error, acceptable func(error) bool, fallback func(error) error) error {
	p, err := b.Allow()
	if err != nil {
		if fallback != nil {
			return fallback(err)
		}
		return err
	}
	defer p.Fail() // a no-op once settled; a failure if fn panics
	err = fn()
	if err == nil || (acceptable != nil && acceptable(err)) {
		p.Pass()
	}
	return err
}

// Ratio returns the standing refusal fraction now, folded afresh from the window: 0 while healthy.
// The probe is left out.
func (b *Breaker) Ratio() float64 {
	if b.nop {
		return 0
	}
	_, scaled := b.p.ratio(b.history(b.clock()))
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
	now := b.clock()
	_, scaled := b.p.ratio(b.history(now))
	sum := b.win.Sum(now, true)
	return Snapshot{Ratio: scaled, Successes: sum[fSuccess], Failures: sum[fFailure], Drops: sum[fDrop], Refused: b.refused.Load()}
}
