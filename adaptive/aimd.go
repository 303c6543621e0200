package adaptive

import (
	"time"

	"github.com/wardgo/ward/internal/contract"
)

// AIMD is the policy of additive increase, multiplicative decrease: one more while at least half
// the limit is used, a fixed share less on a drop or a call slower than Timeout. The numbers are
// Netflix concurrency-limits 0.5.4's AIMDLimit.
type AIMD struct {
	Initial int           // the limit before any sample; 20 (Netflix AIMDLimit initialLimit)
	Min     int           // the least the limit goes to; 20 (Netflix minLimit)
	Max     int           // the most the limit goes to; 200 (Netflix maxLimit)
	Backoff float64       // the share kept after a drop, in (0, 1]; 0.9 (Netflix backoffRatio)
	Timeout time.Duration // a sample slower than this counts as a drop; 5 s (Netflix timeout)
}

// DefaultAIMD returns the preset: start at 20 within [20, 200], keep 0.9 on a drop, a call over
// 5 s is a drop.
func DefaultAIMD() AIMD {
	return AIMD{Initial: 20, Min: 20, Max: 200, Backoff: 0.9, Timeout: 5 * time.Second}
}

// AIMDRule is the rule an [AIMD] policy builds.
type AIMDRule struct {
	p     AIMD
	limit int
}

// NewAIMD validates p and returns its rule.
func NewAIMD(p AIMD) (*AIMDRule, error) {
	if err := checkBounds("AIMD", p.Initial, p.Min, p.Max); err != nil {
		return nil, err
	}
	if err := checkFraction("AIMD.Backoff", p.Backoff); err != nil {
		return nil, err
	}
	if p.Timeout <= 0 {
		return nil, contract.Field(ErrInvalid, "AIMD.Timeout", p.Timeout, "> 0")
	}
	return &AIMDRule{p: p, limit: p.Initial}, nil
}

// Limit returns the current limit.
func (r *AIMDRule) Limit() int { return r.limit }

func (r *AIMDRule) bounds() (lo, hi int) { return r.p.Min, r.p.Max }

// Sample multiplies the limit by Backoff on a drop (or an RTT over Timeout), truncating, adds one
// when InFlight × 2 ≥ limit, and holds it within [Min, Max]. The arithmetic holds at any bounds up
// to math.MaxInt: nothing wraps.
func (r *AIMDRule) Sample(s Sample) {
	limit := r.limit
	if s.Dropped || s.RTT > r.p.Timeout {
		limit = limitOf(float64(limit)*r.p.Backoff, r.p.Min, r.p.Max)
	} else if s.InFlight >= limit-limit/2 { // InFlight × 2 ≥ limit, without the product
		limit = min(limit, r.p.Max-1) + 1
	}
	r.limit = min(r.p.Max, max(r.p.Min, limit))
}
