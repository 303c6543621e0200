package breaker

import (
	"fmt"
	"math"
	"time"

	"github.com/wardgo/ward/atomicwindow"
	"github.com/wardgo/ward/internal/contract"
	"github.com/wardgo/ward/internal/draw"
)

// Outcome is how a call ended, as a breaker records it.
type Outcome uint8

const (
	// Success is a call the backend served.
	Success Outcome = iota
	// Failure is a call the backend failed.
	Failure
	// Drop is a call the breaker refused before it ran: traffic, but neither a success nor a
	// failure of the backend. [Core.Allow] records its own refusals; recording one by hand counts
	// a refusal made elsewhere.
	Drop
)

// Policy holds the constants of the breaker: Google SRE client-side throttling with go-zero's
// additions, and a trip for a backend that answers nothing. [GoZeroPolicy] is go-zero's
// core/breaker/googlebreaker.go (v1.10.3) exactly; [DefaultPolicy] adds the trip, a tolerant and
// quick recovery and faster probes. Build one from a preset and change fields; [NewCore] and [New]
// validate it.
type Policy struct {
	// K is how many calls a success pays for, at the start of a failing stretch: 1.5 in
	// [GoZeroPolicy] (go-zero k), 2 in [DefaultPolicy] (the SRE book's K). A backend is left
	// alone until more than 1 − 1/K of its calls fail: a third with 1.5, half with 2. Must be
	// finite and >= KFloor.
	K float64
	// KFloor is what K decays to, linearly over the window's buckets of uninterrupted failure:
	// 1.1 (go-zero minK). Must be finite and > 0.
	KFloor float64
	// Protection is the calls let through before any refusal: 5 (go-zero protection). Must be
	// finite and >= 0.
	Protection float64
	// ProbeAfter is how long after the last call let through, while refusing, one call passes
	// regardless of the draw: 1 s in [GoZeroPolicy] (go-zero forcePassDuration), 500 ms in
	// [DefaultPolicy]. Zero disables the probe; must be >= 0.
	ProbeAfter time.Duration
	// Buckets is how many buckets the window has: 40 (go-zero buckets). In [1,
	// atomicwindow.MaxBuckets]: every read visits every bucket, so more would cost memory and
	// time for no resolution anyone needs.
	Buckets int
	// Window is the time the buckets cover together: 10 s (go-zero window). Must be at least
	// Buckets nanoseconds (a bucket at least 1 ns wide).
	Window time.Duration
	// Recovery is how long a stretch of working buckets (see Tolerance) takes to bring the drop
	// ratio to zero: 0, which means the whole Window, in [GoZeroPolicy] (the SRE arithmetic as
	// go-zero has it: the ratio is scaled by (Buckets − working) / Buckets); 250 ms, one
	// bucket, in [DefaultPolicy]. After an outage the window is full of failures and refusals, so
	// with the whole Window a recovered backend is still refused many calls for most of it. A
	// shorter Recovery scales by (R − working) / R, R the buckets Recovery spans (at least 1), so
	// the ratio falls to zero R buckets after the first working one. A dead backend answers no
	// call with a success, so its working run stays 0 and recovery never starts. Must be >= 0 and
	// <= Window.
	Recovery time.Duration
	// Tolerance is the share of a bucket's outcomes that may be failures while the bucket still
	// counts as working for the recovery scaling: 0 in [GoZeroPolicy] (a bucket with any failure
	// breaks the run, so a healthy backend's ordinary errors hold recovery back), 0.25 in
	// [DefaultPolicy] (a backend failing 2% of calls, as healthy ones do, recovers as if it failed
	// none; a bucket must still be three quarters successes). Must be in [0, 1).
	Tolerance float64
	// Trip is how many failures, in buckets that held failures and no success (the newest
	// stretch of them, quiet buckets not breaking it), make the breaker refuse every call but
	// the probes: 0 (off) in [GoZeroPolicy], 10 in [DefaultPolicy]. While tripped the drop ratio
	// reads 1; the first success a probe brings back ends the trip. Must be >= 0.
	Trip int
}

// DefaultPolicy returns the policy [New] uses: the SRE arithmetic for partial failure (the SRE
// book's K 2, go-zero's decay to 1.1, protection 5 and 40 buckets over 10 s), a trip after 10 failures with no
// success between them, a probe every 500 ms while refusing, and a recovery of one bucket
// (250 ms) in which a quarter of the outcomes may fail. See the package doc for how it reasons.
func DefaultPolicy() Policy {
	return Policy{K: 2, KFloor: 1.1, Protection: 5, ProbeAfter: 500 * time.Millisecond, Buckets: 40,
		Window: 10 * time.Second, Recovery: 250 * time.Millisecond, Tolerance: 0.25, Trip: 10}
}

// GoZeroPolicy returns go-zero's breaker exactly: k 1.5 decaying to 1.1, protection 5, a probe
// after 1 s, 40 buckets over 10 s, the recovery scaling over the whole window, no trip — the
// constants of go-zero's core/breaker/googlebreaker.go (v1.10.3). A [Core] built with it makes
// go-zero's decisions for the same instants and draws.
func GoZeroPolicy() Policy {
	return Policy{K: 1.5, KFloor: 1.1, Protection: 5, ProbeAfter: time.Second, Buckets: 40, Window: 10 * time.Second}
}

// RecoveryPolicy returns [GoZeroPolicy] with Recovery 1 s: the drop ratio falls to zero within
// 1 s of buckets with no failure after an outage, rather than over the 10 s window. A backend
// with a background error rate rarely has such buckets, so its recovery is slower than that;
// [DefaultPolicy] tolerates those errors.
func RecoveryPolicy() Policy {
	p := GoZeroPolicy()
	p.Recovery = time.Second
	return p
}

// ErrInvalid is matched, with errors.Is, by every configuration error of this package (and by
// ward.ErrInvalid); the message names the field.
var ErrInvalid = contract.Invalid("breaker: invalid configuration")

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// Validate reports the first field of p that is out of range, by name.
func (p Policy) Validate() error {
	switch {
	case !finite(p.KFloor) || p.KFloor <= 0:
		return contract.Field(ErrInvalid, "Policy.KFloor", p.KFloor, "finite and > 0")
	case !finite(p.K) || p.K < p.KFloor:
		return contract.Field(ErrInvalid, "Policy.K", p.K, fmt.Sprintf("finite and >= KFloor (%v)", p.KFloor))
	case !finite(p.Protection) || p.Protection < 0:
		return contract.Field(ErrInvalid, "Policy.Protection", p.Protection, "finite and >= 0")
	case p.ProbeAfter < 0:
		return contract.Field(ErrInvalid, "Policy.ProbeAfter", p.ProbeAfter, ">= 0 (0 disables the probe)")
	case p.Buckets < 1 || p.Buckets > atomicwindow.MaxBuckets:
		return contract.Field(ErrInvalid, "Policy.Buckets", p.Buckets, fmt.Sprintf("in [1, %d] (atomicwindow.MaxBuckets)", atomicwindow.MaxBuckets))
	case p.Window < time.Duration(p.Buckets):
		return contract.Field(ErrInvalid, "Policy.Window", p.Window, fmt.Sprintf(">= 1ns per bucket (%d ns)", p.Buckets))
	case p.Recovery < 0 || p.Recovery > p.Window:
		return contract.Field(ErrInvalid, "Policy.Recovery", p.Recovery, fmt.Sprintf("in [0, Window (%v)] (0 means Window)", p.Window))
	case !(p.Tolerance >= 0 && p.Tolerance < 1): // NaN fails too
		return contract.Field(ErrInvalid, "Policy.Tolerance", p.Tolerance, "in [0, 1)")
	case p.Trip < 0:
		return contract.Field(ErrInvalid, "Policy.Trip", p.Trip, ">= 0 (0 disables the trip)")
	}
	return nil
}

// Window fields, in the pure and the striped window alike: one per Outcome.
const (
	fSuccess = int(Success)
	fFailure = int(Failure)
	fDrop    = int(Drop)
	fields   = fDrop + 1
)

// history is what the arithmetic reads from a window.
type history struct {
	accepts, total   int64
	failing, working int   // runs at the head of the window, newest first
	failed           int64 // failures in the failing run
}

// add folds one bucket, oldest first, into the totals and the runs: a bucket with failures and
// no successes extends the failing run and breaks the working one; a bucket with successes and
// failures at most p.Tolerance of its outcomes extends the working run and breaks the failing one
// (with Tolerance 0, only a bucket without failures); a bucket with neither (empty, or refusals
// only) neither extends nor breaks a run. A bucket with successes that ends a failing run of
// p.Trip failures or more (a trip) takes that run's failures out of the totals. Core and Breaker
// both read their windows through it.
func (h *history) add(b *atomicwindow.Bucket, p *Policy) {
	success, failure := b[fSuccess], b[fFailure]
	h.accepts += success
	h.total += success + failure + b[fDrop]
	if success > 0 && (failure == 0 || float64(failure) <= p.Tolerance*float64(success+failure)) {
		h.working++
	} else if failure > 0 {
		h.working = 0
	}
	if success > 0 {
		if p.tripped(*h) {
			h.total -= h.failed
		}
		h.failing, h.failed = 0, 0
	} else if failure > 0 {
		h.failing++
		h.failed += failure
	}
}

// probe reports whether a call at now passes as a probe, the last call having passed at last:
// more than ProbeAfter later. A last pass after now (the clock jumped back) counts as made at
// now, so a far-future instant never holds the probe off; the caller pulls its state back.
func (p *Policy) probe(now, last int64) bool {
	return p.ProbeAfter > 0 && now >= last && uint64(now)-uint64(last) > uint64(p.ProbeAfter)
}

// ratio returns the drop ratio before the recovery scaling (raw) and after it (scaled).
func (p *Policy) ratio(h history) (raw, scaled float64) {
	if p.tripped(h) {
		return 1, 1
	}
	size := float64(p.Buckets)
	w := max(p.K-(p.K-p.KFloor)*(float64(h.failing)/size), p.KFloor) // the fraction first: no overflow for any finite K
	raw = (float64(h.total) - p.Protection - w*float64(h.accepts)) / float64(h.total+1)
	if raw <= 0 {
		return raw, 0
	}
	r := p.recovery()
	return raw, raw * max(r-float64(h.working), 0) / r
}

// tripped reports whether the failing run holds Trip failures or more.
func (p *Policy) tripped(h history) bool { return p.Trip > 0 && h.failed >= int64(p.Trip) }

// recovery is how many buckets of uninterrupted success bring the ratio to zero: Recovery in
// buckets, rounded up, at least 1; Buckets when Recovery is 0.
func (p *Policy) recovery() float64 {
	if p.Recovery == 0 {
		return float64(p.Buckets)
	}
	width := int64(p.Window) / int64(p.Buckets)
	return float64(max((int64(p.Recovery)+width-1)/width, 1))
}

// Core is the pure breaker (SRE throttling and the trip, as the [Policy] sets them):
// deterministic, allocation-free after construction, not safe for concurrent use. The clock and the draw are arguments: now in nanoseconds from any monotonic
// origin, roll a draw from [0, 1). [Breaker] is its concurrent counterpart.
//
// With accepts successes out of total calls in the window (refusals included), failing and working
// the runs at its head of buckets with only failures and only successes:
//
//	w     = max(K − (K − KFloor) · failing / Buckets, KFloor)
//	drop  = (total − Protection − w · accepts) / (total + 1)
//	drop ×= max(R − working, 0) / R       R = Buckets, or Recovery in buckets when set
//
// While tripped (Policy.Trip) drop is 1. A call is refused when roll < drop. Before the scaling
// and the draw, the probe: once the breaker has let a call through while refusing (or refused a
// call while tripped), a call more than ProbeAfter after the last one let through passes
// regardless.
type Core struct {
	p        Policy
	win      *atomicwindow.Window[atomicwindow.Bucket]
	lastPass int64
	passed   bool // a call was let through while the ratio was positive
}

// NewCore returns a breaker with an empty window opening at now.
func NewCore(p Policy, now int64) (*Core, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	win, err := atomicwindow.NewWindow[atomicwindow.Bucket](p.Buckets, p.Window, now)
	if err != nil {
		return nil, err
	}
	return &Core{p: p, win: win}, nil
}

// Policy returns the policy the core was built with.
func (c *Core) Policy() Policy { return c.p }

func (c *Core) history(now int64) history {
	var h history
	c.win.Each(now, true, func(b atomicwindow.Bucket) { h.add(&b, &c.p) })
	return h
}

// Allow asks to make one call at now with the draw roll; a draw outside [0, 1) (NaN included) is
// held into it (NaN counts as 0). A refusal is recorded as a Drop. Settle an allowed call with
// [Core.Record].
func (c *Core) Allow(now int64, roll float64) bool {
	raw, scaled := c.p.ratio(c.history(now))
	if raw <= 0 {
		return true
	}
	if c.passed && c.lastPass > now { // the clock jumped back: pull the last pass back with it
		c.lastPass = now
	}
	if c.passed && c.p.probe(now, c.lastPass) {
		c.lastPass = now
		return true
	}
	if draw.Clean(roll) < scaled {
		if scaled >= 1 { // tripped: not a Drop (see Policy.Trip)
			if !c.passed { // tripped before any call passed: the probe counts from now
				c.lastPass, c.passed = now, true
			}
			return false
		}
		c.win.Slot(now)[fDrop]++
		return false
	}
	c.lastPass, c.passed = now, true
	return true
}

// Record counts one outcome at now. An outcome that is neither Success, Failure nor Drop is
// ignored.
func (c *Core) Record(now int64, o Outcome) {
	if o <= Drop {
		c.win.Slot(now)[o]++ // Success, Failure and Drop are the window's fields, in order
	}
}

// Ratio returns the standing refusal fraction at now: 0 while healthy, never negative. The probe
// is left out: this is the throttle a dashboard or an alert wants.
func (c *Core) Ratio(now int64) float64 {
	_, scaled := c.p.ratio(c.history(now))
	return scaled
}
