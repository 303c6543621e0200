package adaptive

import (
	"fmt"
	"math"
	"time"

	"github.com/wardgo/ward/internal/contract"
	"github.com/wardgo/ward/internal/draw"
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
// after it. Implement Rule to bring your own; the rules that ship are [AIMDRule], [VegasRule],
// [GradientRule], [MinRTTRule] and [FixedRule].
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

func checkFraction(field string, v float64, loOpen bool) error {
	if math.IsNaN(v) || v > 1 || v < 0 || (loOpen && v == 0) {
		if loOpen {
			return contract.Field(ErrInvalid, field, v, "in (0, 1]")
		}
		return contract.Field(ErrInvalid, field, v, "in [0, 1]")
	}
	return nil
}

// ---------------------------------------------------------------------------------------------
// Fixed

// FixedRule is a rule that never moves: a plain bulkhead. Build one with [NewFixed].
type FixedRule struct{ n int }

// NewFixed returns a rule that holds the limit at n calls, n >= 1. When you know the right number
// (a pool of 10 connections, a licence for 4 sessions), a fixed limit is simpler and more
// predictable than any adaptive rule.
func NewFixed(n int) (*FixedRule, error) {
	if n < 1 {
		return nil, contract.Field(ErrInvalid, "Fixed.n", n, ">= 1")
	}
	return &FixedRule{n}, nil
}

// Limit returns n.
func (f *FixedRule) Limit() int { return f.n }

// Sample does nothing: the limit never moves.
func (f *FixedRule) Sample(Sample) {}

func (f *FixedRule) bounds() (lo, hi int) { return f.n, f.n }

// ---------------------------------------------------------------------------------------------
// AIMD

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
	if err := checkFraction("AIMD.Backoff", p.Backoff, true); err != nil {
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

// ---------------------------------------------------------------------------------------------
// Vegas

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
	if err := checkFraction("Vegas.Smoothing", p.Smoothing, true); err != nil {
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

// ---------------------------------------------------------------------------------------------
// Gradient (Netflix Gradient2)

// Gradient is Netflix's Gradient2, the recommended rule: it compares each sample with a long-run
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
	if err := checkFraction("Gradient.Smoothing", p.Smoothing, true); err != nil {
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

// ---------------------------------------------------------------------------------------------
// MinRTT (Netflix's first Gradient)

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
	if err := checkFraction("MinRTT.Smoothing", p.Smoothing, true); err != nil {
		return nil, err
	}
	if err := checkFraction("MinRTT.Backoff", p.Backoff, true); err != nil {
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
