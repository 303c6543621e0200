package adaptive

import (
	"math"
	"time"

	"github.com/wardgo/ward/atomicwindow"
	"github.com/wardgo/ward/internal/contract"
)

// Window says when the samples a limit gathers are handed to its rule: a window closes once at
// least Duration has passed and it holds at least MinSamples timed calls, and the rule is fed one
// [Sample] per window. A window that has run its time with fewer is extended: its end moves one
// Duration past the call that found it short, and it keeps its samples. Build one from
// [DefaultWindow] and change fields; [NewCore] and [WithWindow] validate it.
type Window struct {
	// Duration is the least time a window lasts: 1 s (Netflix concurrency-limits 0.5.4
	// WindowedLimit minWindowTime). Must be > 0; math.MaxInt64 makes windows that close only at
	// the clock's largest instant, which in practice is never.
	Duration time.Duration
	// MinSamples is the least number of timed calls a window needs to close: 10 (WindowedLimit
	// windowSize). Must be >= 1.
	MinSamples int
}

// DefaultWindow returns the preset: windows of at least 1 s and at least 10 timed calls, as
// Netflix's WindowedLimit has them.
func DefaultWindow() Window { return Window{Duration: time.Second, MinSamples: 10} }

// Validate reports the first field of w that is out of range, by name.
func (w Window) Validate() error {
	switch {
	case w.Duration <= 0:
		return contract.Field(ErrInvalid, "Window.Duration", w.Duration, "> 0")
	case w.MinSamples < 1:
		return contract.Field(ErrInvalid, "Window.MinSamples", w.MinSamples, ">= 1")
	}
	return nil
}

// endOf is when a window opened at now may close: now + Duration, at most the largest instant (a
// sum that wrapped negative would close a window on every call).
func (w *Window) endOf(now int64) int64 {
	if now > math.MaxInt64-int64(w.Duration) {
		return math.MaxInt64
	}
	return now + int64(w.Duration)
}

// due reports whether the window ending at end has run its time at now. An end more than one
// Duration after now cannot come from a clock that only moves forward: the clock jumped back (or
// now is an instant of another origin), and the end is pulled back to now.
func (w *Window) due(now, end int64) bool { return now >= end || end > w.endOf(now) }

// Fields of a window's sums, as a [Core] and a [Limiter] keep them.
const (
	fRTT      = iota // sum of the timed calls' response times, nanoseconds
	fTimed           // how many calls were timed
	fInFlight        // the most calls in flight a settled call saw (Max)
	fDropped         // 1 if any call failed (Max)
)

// entry is what one settled call adds to its window: its response time, now minus its start, held
// at 0 from below (a start after now, from a clock that jumped back, counts as 0).
func entry(start, now, inFlight int64, failed bool) atomicwindow.Bucket {
	var drop int64
	if failed {
		drop = 1
	}
	return atomicwindow.Bucket{fRTT: max(now-start, 0), fTimed: 1, fInFlight: inFlight, fDropped: drop}
}

// learn feeds rule the Sample of one closed window, sums w (w[fTimed] > 0): the average response
// time, the largest in-flight count, whether any call failed. It returns the limit the rule gives
// then, and the average.
func learn(rule Rule, w atomicwindow.Bucket) (limit, rtt int64) {
	rtt = w[fRTT] / w[fTimed]
	rule.Sample(Sample{RTT: time.Duration(rtt), InFlight: int(w[fInFlight]), Dropped: w[fDropped] != 0})
	return limitOfRule(rule), rtt
}

// limitOfRule is the limit a rule gives, anything under 1 raised to 1: a rule of your own may
// return 0 or less, and a limit of 0 would refuse every call forever.
func limitOfRule(rule Rule) int64 { return int64(max(rule.Limit(), 1)) }

// Core is the pure adaptive limit: a count of calls in flight held under a limit that a [Rule]
// moves once per [Window]. It is deterministic, allocation-free after construction and not safe
// for concurrent use; instants are arguments, nanoseconds from any monotonic origin. Every call
// is timed. [Limiter] is its concurrent counterpart: driven from one goroutine with an injected
// clock and WithSampleEvery(1), it gives exactly a Core's decisions and limits.
//
// Each call settled with Pass or Fail is a sample of its window: its response time, the calls in
// flight when it started (itself included), and whether it failed. After each, once the window
// is due (its Duration has run from its start, or its end lies more than a Duration after now: a
// clock that jumped back), it closes if it holds MinSamples and is extended otherwise. A closed
// window feeds the rule one Sample, and the limit becomes the rule's Limit(), at least 1. A limit
// lowered below the calls in flight interrupts nothing: calls are refused until enough settle.
type Core struct {
	rule     Rule
	w        Window
	limit    int64
	inFlight int64
	end      int64 // when the open window may close
	sums     atomicwindow.Bucket
	windows  int64
	latency  int64
	refused  int64
}

// NewCore returns a limit moved by rule over windows w, the first opening at now.
func NewCore(rule Rule, w Window, now int64) (*Core, error) {
	if rule == nil {
		return nil, contract.Field(ErrInvalid, "rule", "nil", "a Rule")
	}
	if err := w.Validate(); err != nil {
		return nil, err
	}
	return &Core{rule: rule, w: w, limit: limitOfRule(rule), end: w.endOf(now)}, nil
}

// Ticket is a call a [Core] admitted. Settle it once with Pass, Fail or Ignore; the methods clear
// it, so settling the same variable again is a no-op. The zero Ticket is settled already.
type Ticket struct {
	c        *Core
	start    int64
	inFlight int64
}

// Acquire admits a call at now if fewer than the limit are in flight.
func (c *Core) Acquire(now int64) (Ticket, bool) {
	if c.inFlight >= c.limit {
		c.refused++
		return Ticket{}, false
	}
	c.inFlight++
	return Ticket{c: c, start: now, inFlight: c.inFlight}, true
}

// Pass settles, at now, a call that succeeded: its response time is a sample.
func (t *Ticket) Pass(now int64) { t.settle(now, false) }

// Fail settles, at now, a call that timed out or met an overload answer: a sample marked
// dropped.
func (t *Ticket) Fail(now int64) { t.settle(now, true) }

// Ignore settles a call whose outcome says nothing about load (the caller's own error or
// cancellation): it frees the slot and is no sample.
func (t *Ticket) Ignore() {
	if c := t.c; c != nil {
		t.c = nil
		c.inFlight--
	}
}

func (t *Ticket) settle(now int64, failed bool) {
	c := t.c
	if c == nil {
		return
	}
	t.c = nil
	c.inFlight--
	e := entry(t.start, now, t.inFlight, failed)
	c.sums[fRTT] += e[fRTT]
	c.sums[fTimed] += e[fTimed]
	c.sums[fInFlight] = max(c.sums[fInFlight], e[fInFlight])
	c.sums[fDropped] = max(c.sums[fDropped], e[fDropped])
	if !c.w.due(now, c.end) {
		return
	}
	c.end = c.w.endOf(now)
	if c.sums[fTimed] < int64(c.w.MinSamples) {
		return // too few: extended, keeping the samples
	}
	c.limit, c.latency = learn(c.rule, c.sums)
	c.sums = atomicwindow.Bucket{}
	c.windows++
}

// Limit returns the current limit.
func (c *Core) Limit() int { return int(c.limit) }

// InFlight returns how many admitted calls have not settled.
func (c *Core) InFlight() int { return int(c.inFlight) }

// Snapshot returns the core's state, as [Limiter.Snapshot] does.
func (c *Core) Snapshot() Snapshot {
	return snapshot(c.rule, Snapshot{
		Limit:    c.Limit(),
		InFlight: c.InFlight(),
		Windows:  c.windows,
		Latency:  time.Duration(c.latency),
		Refused:  c.refused,
	})
}

// Snapshot is a limit's state for metrics, read without touching the hot path.
type Snapshot struct {
	Limit    int           // the current limit
	InFlight int           // admitted calls not yet settled
	Min, Max int           // the rule's bounds (for a rule of your own: 1 and 0, unknown)
	Windows  int64         // windows closed (each applied to the rule once)
	Latency  time.Duration // the last closed window's average response time
	Refused  int64         // calls refused since construction
}

// snapshot fills in the rule's bounds.
func snapshot(rule Rule, s Snapshot) Snapshot {
	s.Min = 1
	if b, ok := rule.(bounded); ok {
		s.Min, s.Max = b.bounds()
	}
	return s
}
