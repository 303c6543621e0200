package adaptive

import (
	"fmt"
	"math"
	"time"

	"github.com/wardgo/ward/internal/contract"
	"github.com/wardgo/ward/internal/draw"
)

// MinRTT is Netflix's first gradient rule (GradientLimit): the gradient between the fastest
// response time since the last probe and each sample. Every ProbeEvery to 2 × ProbeEvery samples
// the limit falls to the queue size and the fastest time is measured afresh, so a baseline taken
// when the service was idle does not hold forever. [Gradient] replaced it as the recommended rule: a
// minimum never forgets a lucky call, and the probes cost a dip in throughput. The numbers are
// Netflix concurrency-limits 0.5.4's GradientLimit.
type MinRTT struct {
	Initial   int     // the limit before any sample; 50 (Netflix initialLimit)
	Min       int     // the least the limit goes to; 1 (Netflix minLimit)
	Max       int     // the most the limit goes to; 1000 (Netflix maxConcurrency)
	Smoothing float64 // how far towards a lower estimate the limit moves, in (0, 1]; 0.2
	Queue     int     // slots added to every estimate, and the least the limit falls to: max(Queue, floor(sqrt(limit))), <= Max; 4 (Netflix SquareRootFunction(4))
	Tolerance float64 // how much slower than the fastest a sample may be, >= 1; 2.0 (Netflix rttTolerance)
	Backoff   float64 // the share of the limit kept after a drop, in (0, 1]; 0.9 (Netflix backoffRatio)
	// ProbeEvery is how many samples pass between probes, plus a draw of up to as many again:
	// 1000 (Netflix probeInterval). At a probe the limit falls to the queue size and the fastest
	// time is forgotten. 0 never probes; >= 0.
	ProbeEvery int
}

// DefaultMinRTT returns the preset: start at 50 within [1, 1000], smoothing 0.2 on decreases,
// max(4, sqrt(limit)) slots on top, tolerance 2, a probe every 1000-2000 samples, backoff 0.9.
func DefaultMinRTT() MinRTT {
	return MinRTT{Initial: 50, Min: 1, Max: 1000, Smoothing: 0.2, Queue: 4, Tolerance: 2, Backoff: 0.9, ProbeEvery: 1000}
}

// MinRTTRule is the rule a [MinRTT] policy builds.
type MinRTTRule struct {
	p         MinRTT
	roll      func() float64
	estimate  float64
	noLoad    time.Duration // 0: not measured since the last probe
	countdown int
}

// NewMinRTT validates p and returns its rule. roll supplies the draws in [0, 1) that spread the
// probes (ProbeEvery + floor(roll × ProbeEvery) samples apart): math/rand/v2's rand.Float64 in
// production, a fixed draw in tests. A nil roll is an error naming it, as every WithRand's is. A
// draw outside [0, 1) (NaN included) is held into it.
func NewMinRTT(p MinRTT, roll func() float64) (*MinRTTRule, error) {
	if roll == nil {
		return nil, nilRoll
	}
	if err := checkBounds("MinRTT", p.Initial, p.Min, p.Max); err != nil {
		return nil, err
	}
	if err := checkFraction("MinRTT.Smoothing", p.Smoothing); err != nil {
		return nil, err
	}
	if err := checkFraction("MinRTT.Backoff", p.Backoff); err != nil {
		return nil, err
	}
	switch {
	case p.Queue < 0 || p.Queue > p.Max:
		return nil, contract.Field(ErrInvalid, "MinRTT.Queue", p.Queue, fmt.Sprintf("within [0, Max] = [0, %d]", p.Max))
	case !(p.Tolerance >= 1) || math.IsInf(p.Tolerance, 0):
		return nil, contract.Field(ErrInvalid, "MinRTT.Tolerance", p.Tolerance, "finite and >= 1")
	case p.ProbeEvery < 0:
		return nil, contract.Field(ErrInvalid, "MinRTT.ProbeEvery", p.ProbeEvery, ">= 0 (0 never probes)")
	}
	r := &MinRTTRule{p: p, roll: draw.Func(roll), estimate: float64(p.Initial)}
	r.countdown = r.nextProbe()
	return r, nil
}

// nextProbe is ProbeEvery plus a draw of up to ProbeEvery again, at most math.MaxInt (a countdown
// that wrapped negative would probe on every sample).
func (r *MinRTTRule) nextProbe() int {
	if r.p.ProbeEvery == 0 {
		return 0
	}
	return r.p.ProbeEvery + min(int(r.roll()*float64(r.p.ProbeEvery)), math.MaxInt-r.p.ProbeEvery)
}

// Limit returns the current limit: the estimate truncated, within [Min, Max].
func (r *MinRTTRule) Limit() int { return limitOf(r.estimate, r.p.Min, r.p.Max) }

func (r *MinRTTRule) bounds() (lo, hi int) { return r.p.Min, r.p.Max }

// NoLoad returns the fastest response time since the last probe (0 right after one).
func (r *MinRTTRule) NoLoad() time.Duration { return r.noLoad }

func (r *MinRTTRule) queue() float64 {
	return float64(max(r.p.Queue, int(math.Sqrt(r.estimate))))
}

// Sample moves the limit by one sample, as GradientLimit._update does: when the probe countdown
// runs out the limit falls to max(Min, queue) and the fastest time is forgotten; otherwise the
// gradient clamp(Tolerance × fastest / rtt, 0.5, 1) scales the limit and the queue is added (a drop
// multiplies it by Backoff instead), a decrease is smoothed, and the result is held within
// [queue, Max]. While fewer than half the limit are in flight and nothing dropped, nothing moves.
func (r *MinRTTRule) Sample(s Sample) {
	if s.RTT <= 0 {
		return
	}
	queue := r.queue()
	if r.p.ProbeEvery != 0 {
		r.countdown--
		if r.countdown < 0 {
			r.countdown = r.nextProbe()
			r.estimate = max(float64(r.p.Min), queue)
			r.noLoad = 0
			return
		}
	}
	if r.noLoad == 0 || s.RTT < r.noLoad {
		r.noLoad = s.RTT
	}
	gradient := max(0.5, min(1.0, r.p.Tolerance*float64(r.noLoad)/float64(s.RTT)))
	var next float64
	switch {
	case s.Dropped:
		next = r.estimate * r.p.Backoff
	case float64(s.InFlight) < r.estimate/2:
		return
	default:
		next = r.estimate*gradient + queue
	}
	if next < r.estimate {
		next = max(float64(r.p.Min), r.estimate*(1-r.p.Smoothing)+r.p.Smoothing*next)
	}
	r.estimate = max(queue, min(float64(r.p.Max), next))
}
