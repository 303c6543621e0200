package adaptive

import (
	"fmt"
	"time"

	"github.com/wardgo/ward/internal/contract"
)

// Sample is what a rule learns from one call (or, under a [Limiter], from one window of calls).
type Sample struct {
	// RTT is the response time. Under a Limiter it is the window's average over its timed calls.
	// Zero or less means no latency is known: the latency rules (Vegas, Gradient, MinRTT) ignore
	// such a sample; AIMD still reads Dropped and InFlight.
	RTT time.Duration
	// InFlight is the number of calls in flight when the call started, itself included. Under a
	// Limiter it is the window's largest.
	InFlight int
	// Dropped marks a call that timed out or was refused downstream for overload.
	Dropped bool
}

// Rule moves a concurrency limit as samples arrive. A Rule is not safe for concurrent use: a
// [Limiter] calls Sample from one goroutine at a time (the one closing a window), and reads Limit
// after it. Implement Rule to bring your own; the rules that ship are [KneeRule], ward's own and
// the one to start with ([NewKnee] with [DefaultKnee], or [Default] for a whole limiter), Netflix's
// rules exactly ([AIMDRule], [VegasRule], [GradientRule], [MinRTTRule]) and [FixedRule].
//
// The rules that ship keep their limit within their bounds for any bounds up to math.MaxInt and
// any sample (huge or negative response times and in-flight counts included): their arithmetic
// saturates rather than wraps. Vegas, Gradient and MinRTT hold the limit as a float64 estimate,
// as Netflix's rules hold a double, and Limit truncates it; above 2⁵³ a float64 cannot hold every
// integer, so there the estimate (Initial included) is read to the nearest one a float64 holds.
type Rule interface {
	// Limit returns the current limit; a Limiter treats anything under 1 as 1.
	Limit() int
	// Sample moves the limit by one sample.
	Sample(Sample)
}

// bounded is implemented by the rules that ship, for [Limiter.Snapshot].
type bounded interface{ bounds() (lo, hi int) }

// ErrInvalid is matched by every configuration error of a rule, a [Core] or a [Limiter] (and so
// is ward.ErrInvalid); the message names the field.
var ErrInvalid = contract.Invalid("adaptive: invalid configuration")

// checkBounds validates the Initial/Min/Max triple the rules share.
func checkBounds(kind string, initial, lo, hi int) error {
	switch {
	case lo < 1:
		return contract.Field(ErrInvalid, kind+".Min", lo, ">= 1")
	case hi < lo:
		return contract.Field(ErrInvalid, kind+".Max", hi, fmt.Sprintf(">= Min (%d)", lo))
	case initial < lo || initial > hi:
		return contract.Field(ErrInvalid, kind+".Initial", initial, fmt.Sprintf("within [Min, Max] = [%d, %d]", lo, hi))
	}
	return nil
}

// limitOf is the limit an estimate gives: truncated, as Netflix's (int) cast of its double
// estimate is, and held within [lo, hi]. The bounds are compared as integers after the float64
// comparisons: float64 rounds an int over 2⁵³, and a plain conversion of 2⁶³ (float64(MaxInt))
// gives the most negative int on amd64. NaN gives lo.
func limitOf(estimate float64, lo, hi int) int {
	switch {
	case !(estimate > float64(lo)):
		return lo
	case estimate >= float64(hi):
		return hi
	}
	return min(hi, max(lo, int(estimate)))
}

// checkFraction validates a share in (0, 1] (a Backoff, a Smoothing).
func checkFraction(field string, v float64) error {
	if !(v > 0 && v <= 1) { // NaN included
		return contract.Field(ErrInvalid, field, v, "in (0, 1]")
	}
	return nil
}
