package adaptive

import (
	"math"

	"github.com/wardgo/ward/internal/contract"
)

// Gradient is Netflix's Gradient2, the rule Netflix's library recommends: it compares each sample with a long-run
// exponential average of response times. Within Tolerance × the average the limit grows by a
// smoothed Queue slots per sample; beyond it, it shrinks in proportion, at most by half at once.
// The numbers are Netflix concurrency-limits 0.5.4's Gradient2Limit.
type Gradient struct {
	Initial   int     // the limit before any sample; 20 (Netflix initialLimit)
	Min       int     // the least the limit goes to; 20 (Netflix minLimit)
	Max       int     // the most the limit goes to; 200 (Netflix maxConcurrency)
	Smoothing float64 // how far towards each new estimate the limit moves, in (0, 1]; 0.2
	Queue     int     // slots added to every estimate; 4 (Netflix queueSize)
	Window    int     // samples the long-run average spans (its first 10 a plain mean); 600 (Netflix longWindow)
	Tolerance float64 // how much slower than the average a sample may be, >= 1; 1.5 (Netflix rttTolerance)
}

// DefaultGradient returns the preset: start at 20 within [20, 200], smoothing 0.2, 4 slots on top,
// a 600-sample average, tolerance 1.5.
func DefaultGradient() Gradient {
	return Gradient{Initial: 20, Min: 20, Max: 200, Smoothing: 0.2, Queue: 4, Window: 600, Tolerance: 1.5}
}

// GradientRule is the rule a [Gradient] policy builds.
type GradientRule struct {
	p        Gradient
	estimate float64
	long     expAvg
}

// NewGradient validates p and returns its rule.
func NewGradient(p Gradient) (*GradientRule, error) {
	if err := checkBounds("Gradient", p.Initial, p.Min, p.Max); err != nil {
		return nil, err
	}
	if err := checkFraction("Gradient.Smoothing", p.Smoothing); err != nil {
		return nil, err
	}
	switch {
	case p.Queue < 0:
		return nil, contract.Field(ErrInvalid, "Gradient.Queue", p.Queue, ">= 0")
	case p.Window < 1:
		return nil, contract.Field(ErrInvalid, "Gradient.Window", p.Window, ">= 1")
	case !(p.Tolerance >= 1) || math.IsInf(p.Tolerance, 0):
		return nil, contract.Field(ErrInvalid, "Gradient.Tolerance", p.Tolerance, "finite and >= 1")
	}
	return &GradientRule{p: p, estimate: float64(p.Initial), long: expAvg{window: p.Window, warmup: 10}}, nil
}

// Limit returns the current limit: the estimate truncated, within [Min, Max].
func (r *GradientRule) Limit() int { return limitOf(r.estimate, r.p.Min, r.p.Max) }

func (r *GradientRule) bounds() (lo, hi int) { return r.p.Min, r.p.Max }

// LongRTT returns the long-run average response time, in nanoseconds.
func (r *GradientRule) LongRTT() float64 { return r.long.value }

// Sample moves the limit by one sample, as Gradient2Limit._update does: the long average takes the
// sample (and is cut by 5% when it is over twice the sample, to recover after a long overload);
// while fewer than half the limit are in flight nothing moves; otherwise the gradient
// clamp(Tolerance × long / rtt, 0.5, 1) scales the limit, Queue is added, and the result is
// smoothed and held within [Min, Max]. Gradient2 reads no drops: latency is its whole signal.
func (r *GradientRule) Sample(s Sample) {
	if s.RTT <= 0 {
		return
	}
	short := float64(s.RTT)
	long := r.long.add(short)
	if long/short > 2 {
		r.long.value *= 0.95
	}
	if float64(s.InFlight) < r.estimate/2 {
		return
	}
	gradient := max(0.5, min(1.0, r.p.Tolerance*long/short))
	next := r.estimate*gradient + float64(r.p.Queue)
	next = r.estimate*(1-r.p.Smoothing) + next*r.p.Smoothing
	r.estimate = max(float64(r.p.Min), min(float64(r.p.Max), next))
}

// expAvg is Netflix's ExpAvgMeasurement: a plain mean over the first warmup samples, then an
// exponential average with factor 2/(window+1).
type expAvg struct {
	window, warmup, count int
	sum, value            float64
}

func (m *expAvg) add(v float64) float64 {
	if m.count < m.warmup {
		m.count++
		m.sum += v
		m.value = m.sum / float64(m.count)
	} else {
		f := 2 / (float64(m.window) + 1) // window+1 in float64: an int window of MaxInt would wrap
		m.value = m.value*(1-f) + v*f
	}
	return m.value
}
