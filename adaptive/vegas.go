package adaptive

import (
	"fmt"
	"math"
	"time"

	"github.com/wardgo/ward/internal/contract"
	"github.com/wardgo/ward/internal/draw"
)

// Vegas is TCP Vegas carried over to requests: the shortest response time seen is the time with
// no queue, and how far a sample is over it says how many calls are queued. The thresholds scale
// with the limit: each is a multiple of max(1, floor(log10(limit))). The numbers are Netflix
// concurrency-limits 0.5.4's VegasLimit.
type Vegas struct {
	Initial   int     // the limit before any sample; 20 (Netflix initialLimit)
	Max       int     // the most the limit goes to; 1000 (Netflix maxConcurrency)
	Smoothing float64 // how far towards each new estimate the limit moves, in (0, 1]; 1.0
	Alpha     int     // queue under which the limit grows a step, × log10; 3 (Netflix alpha 3·log10)
	Beta      int     // queue over which the limit shrinks a step, × log10; 6 (Netflix beta 6·log10)
	Threshold int     // queue at or under which the limit jumps by beta, × log10; 1 (Netflix threshold log10)
	Step      int     // one step, × log10; 1 (Netflix increase/decrease limit ± log10)
	// ProbeMultiplier is how many samples per unit of limit pass between re-measurements of the
	// no-load time: the rule takes the no-load time afresh every ProbeMultiplier × limit × a
	// jitter in [0.5, 1) samples; 30 (Netflix probeMultiplier). >= 1.
	ProbeMultiplier int
}

// DefaultVegas returns the preset: start at 20, at most 1000, no smoothing, alpha 3, beta 6,
// threshold and step 1, the no-load time re-measured every 30 × limit samples (jittered).
func DefaultVegas() Vegas {
	return Vegas{Initial: 20, Max: 1000, Smoothing: 1.0, Alpha: 3, Beta: 6, Threshold: 1, Step: 1, ProbeMultiplier: 30}
}

// nilRoll is the error of a rule constructor given no draw source.
var nilRoll = contract.Field(ErrInvalid, "roll", "nil", "a draw function (math/rand/v2's rand.Float64)")

// VegasRule is the rule a [Vegas] policy builds.
type VegasRule struct {
	p        Vegas
	roll     func() float64
	estimate float64
	noLoad   time.Duration
	probes   int     // samples since the last probe
	jitter   float64 // in [0.5, 1)
}

// NewVegas validates p and returns its rule. roll supplies the draws in [0, 1) that jitter the
// probe of the no-load time, so a fleet does not probe in step: math/rand/v2's rand.Float64 in
// production, a fixed draw in tests. A nil roll is an error naming it, as every WithRand's is. A
// draw outside [0, 1) (NaN included) is held into it.
func NewVegas(p Vegas, roll func() float64) (*VegasRule, error) {
	if roll == nil {
		return nil, nilRoll
	}
	if err := checkBounds("Vegas", p.Initial, 1, p.Max); err != nil {
		return nil, err
	}
	if err := checkFraction("Vegas.Smoothing", p.Smoothing); err != nil {
		return nil, err
	}
	switch {
	case p.Alpha < 0:
		return nil, contract.Field(ErrInvalid, "Vegas.Alpha", p.Alpha, ">= 0")
	case p.Beta < p.Alpha:
		return nil, contract.Field(ErrInvalid, "Vegas.Beta", p.Beta, fmt.Sprintf(">= Alpha (%d)", p.Alpha))
	case p.Threshold < 0:
		return nil, contract.Field(ErrInvalid, "Vegas.Threshold", p.Threshold, ">= 0")
	case p.Step < 1:
		return nil, contract.Field(ErrInvalid, "Vegas.Step", p.Step, ">= 1")
	case p.ProbeMultiplier < 1:
		return nil, contract.Field(ErrInvalid, "Vegas.ProbeMultiplier", p.ProbeMultiplier, ">= 1")
	}
	r := &VegasRule{p: p, roll: draw.Func(roll), estimate: float64(p.Initial)}
	r.resetJitter()
	return r, nil
}

func (r *VegasRule) resetJitter() { r.jitter = min(0.5+0.5*r.roll(), math.Nextafter(1, 0)) }

// Limit returns the current limit: the estimate truncated, as VegasLimit's getLimit returns its
// double estimate cast to an int.
func (r *VegasRule) Limit() int { return limitOf(r.estimate, 1, r.p.Max) }

func (r *VegasRule) bounds() (lo, hi int) { return 1, r.p.Max }

// NoLoad returns the no-load response time the rule measures against (0 before any sample).
func (r *VegasRule) NoLoad() time.Duration { return r.noLoad }

// log10 is Netflix's Log10RootFunction: max(1, floor(log10(n))).
func log10(n int) int {
	if n < 10 {
		return 1
	}
	return max(1, int(math.Log10(float64(n))))
}

// Sample moves the limit by one sample, as VegasLimit._update does: every ProbeMultiplier × limit ×
// jitter samples the no-load time is taken afresh from this sample; a sample faster than the no-load time
// becomes it; otherwise the queue, ceil(estimate × (1 − noLoad/rtt)), moves the limit. A drop takes
// a step off; while fewer than half the limit are in flight nothing grows.
//
// The estimate is a float64 kept between samples, fraction and all, as VegasLimit keeps a double:
// each step is taken from the unrounded estimate (the thresholds and the step scale with log10 of
// the truncated one, as Netflix's Log10RootFunction of (int) limit does), then moved Smoothing of
// the way there. With Smoothing 0.5, four decreases from 100 give 99, 98, 98, 97. Thresholds and
// steps are multiplied in float64, so values up to math.MaxInt never wrap.
func (r *VegasRule) Sample(s Sample) {
	if s.RTT <= 0 {
		return
	}
	r.probes++
	if r.jitter*float64(r.p.ProbeMultiplier)*r.estimate <= float64(r.probes) {
		r.resetJitter()
		r.probes = 0
		r.noLoad = s.RTT
		return
	}
	if r.noLoad == 0 || s.RTT < r.noLoad {
		r.noLoad = s.RTT
		return
	}
	lg := float64(log10(r.Limit()))
	step := float64(r.p.Step) * lg
	var next float64
	switch queue := math.Ceil(r.estimate * (1 - float64(r.noLoad)/float64(s.RTT))); {
	case s.Dropped:
		next = r.estimate - step
	case float64(s.InFlight)*2 < r.estimate:
		return // application-limited: the latency says nothing about the limit
	case queue <= float64(r.p.Threshold)*lg:
		next = r.estimate + float64(r.p.Beta)*lg
	case queue < float64(r.p.Alpha)*lg:
		next = r.estimate + step
	case queue > float64(r.p.Beta)*lg:
		next = r.estimate - step
	default:
		return
	}
	next = max(1, min(float64(r.p.Max), next))
	r.estimate = (1-r.p.Smoothing)*r.estimate + r.p.Smoothing*next
}
