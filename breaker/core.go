package breaker

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/wardgo/ward/atomicwindow"
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

// Policy holds the constants of Google SRE client-side throttling, with go-zero's additions.
// Build one from [DefaultPolicy] and change fields; [NewCore] and [New] validate it.
type Policy struct {
	// K is how many calls a success pays for, at the start of a failing stretch: 1.5 (go-zero
	// googlebreaker.go k; the SRE book's K). A backend is left alone until more than 1/K of its
	// calls fail. Must be >= Floor.
	K float64
	// Floor is what K decays to, linearly over the window's buckets of uninterrupted failure:
	// 1.1 (go-zero minK). Must be > 0.
	Floor float64
	// Protection is the calls let through before any refusal: 5 (go-zero protection). Must be >= 0.
	Protection float64
	// Probe is how long after the last call let through, while refusing, a call passes
	// regardless: 1 s (go-zero forcePassDuration). Zero disables the probe.
	Probe time.Duration
	// Buckets is how many buckets the window has: 40 (go-zero buckets). In [1,
	// atomicwindow.MaxBuckets]: every read visits every bucket, so more would cost memory and
	// time for no resolution anyone needs.
	Buckets int
	// Window is the time the buckets cover together: 10 s (go-zero window). Window / Buckets must
	// be at least 1 ns.
	Window time.Duration
}

// DefaultPolicy returns the preset: k 1.5 decaying to 1.1, protection 5, a probe after 1 s, 40
// buckets over 10 s — the constants of go-zero's core/breaker/googlebreaker.go (v1.10.3).
func DefaultPolicy() Policy {
	return Policy{K: 1.5, Floor: 1.1, Protection: 5, Probe: time.Second, Buckets: 40, Window: 10 * time.Second}
}

// ErrInvalidPolicy is wrapped by every construction error.
var ErrInvalidPolicy = errors.New("breaker: invalid policy")

func invalid(field string, v any, want string) error {
	return fmt.Errorf("%w: %s = %v, want %s", ErrInvalidPolicy, field, v, want)
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// Validate reports the first field of p that is out of range, by name.
func (p Policy) Validate() error {
	switch {
	case !finite(p.Floor) || p.Floor <= 0:
		return invalid("Policy.Floor", p.Floor, "finite and > 0")
	case !finite(p.K) || p.K < p.Floor:
		return invalid("Policy.K", p.K, fmt.Sprintf("finite and >= Floor (%v)", p.Floor))
	case !finite(p.Protection) || p.Protection < 0:
		return invalid("Policy.Protection", p.Protection, "finite and >= 0")
	case p.Probe < 0:
		return invalid("Policy.Probe", p.Probe, ">= 0 (0 disables the probe)")
	case p.Buckets < 1 || p.Buckets > atomicwindow.MaxBuckets:
		return invalid("Policy.Buckets", p.Buckets, fmt.Sprintf("in [1, %d] (atomicwindow.MaxBuckets)", atomicwindow.MaxBuckets))
	case p.Window < time.Duration(p.Buckets):
		return invalid("Policy.Window", p.Window, fmt.Sprintf(">= 1ns per bucket (%d ns)", p.Buckets))
	}
	return nil
}

// Tally is the outcomes counted in one bucket.
type Tally struct {
	Success, Failure, Drop int64
}

// history is what the arithmetic reads from a window.
type history struct {
	accepts, total   int64
	failing, working int // runs at the head of the window, newest first
}

// add folds one bucket, oldest first, into the totals and the runs: a bucket with failures and
// no successes extends the failing run and breaks the working one, and the reverse; a bucket with
// neither (empty, or refusals only) neither extends nor breaks a run.
func (h *history) add(success, failure, drop int64) {
	h.accepts += success
	h.total += success + failure + drop
	if failure > 0 {
		h.working = 0
	} else if success > 0 {
		h.working++
	}
	if success > 0 {
		h.failing = 0
	} else if failure > 0 {
		h.failing++
	}
}

// ratio returns the drop ratio before the recovery scaling (raw) and after it (scaled).
func (p *Policy) ratio(h history) (raw, scaled float64) {
	size := float64(p.Buckets)
	w := max(p.K-(p.K-p.Floor)*(float64(h.failing)/size), p.Floor) // the fraction first: no overflow for any finite K
	raw = (float64(h.total) - p.Protection - w*float64(h.accepts)) / float64(h.total+1)
	if raw <= 0 {
		return raw, 0
	}
	return raw, raw * (size - float64(h.working)) / size
}

// Core is the pure SRE breaker: deterministic, allocation-free after construction, not safe for
// concurrent use. The clock and the draw are arguments: now in nanoseconds from any monotonic
// origin, roll a draw from [0, 1). [Breaker] is its concurrent counterpart.
//
// With accepts successes out of total calls in the window (refusals included), failing and working
// the runs at its head of buckets with only failures and only successes:
//
//	w     = max(K − (K − Floor) · failing / Buckets, Floor)
//	drop  = (total − Protection − w · accepts) / (total + 1)
//	drop ×= (Buckets − working) / Buckets
//
// A call is refused when roll < drop. Before the scaling and the draw, the probe: once the
// breaker has let a call through while refusing, a call more than Probe after the last one let
// through passes regardless.
type Core struct {
	p        Policy
	win      *atomicwindow.Window[Tally]
	lastPass int64
	passed   bool // a call was let through while the ratio was positive
}

// NewCore returns a breaker with an empty window opening at now.
func NewCore(p Policy, now int64) (*Core, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &Core{p: p, win: atomicwindow.NewWindow[Tally](p.Buckets, p.Window, now)}, nil
}

// Policy returns the policy the core was built with.
func (c *Core) Policy() Policy { return c.p }

func (c *Core) history(now int64) history {
	var h history
	c.win.Each(now, true, func(t Tally) { h.add(t.Success, t.Failure, t.Drop) })
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
	if c.passed && c.p.Probe > 0 && now-c.lastPass > int64(c.p.Probe) {
		c.lastPass = now
		return true
	}
	if draw.Clean(roll) < scaled {
		c.win.Slot(now).Drop++
		return false
	}
	c.lastPass, c.passed = now, true
	return true
}

// Record counts one outcome at now.
func (c *Core) Record(now int64, o Outcome) {
	t := c.win.Slot(now)
	switch o {
	case Success:
		t.Success++
	case Failure:
		t.Failure++
	case Drop:
		t.Drop++
	}
}

// Ratio returns the standing refusal fraction at now: 0 while healthy, never negative. The probe
// is left out: this is the throttle a dashboard or an alert wants.
func (c *Core) Ratio(now int64) float64 {
	_, scaled := c.p.ratio(c.history(now))
	return scaled
}
