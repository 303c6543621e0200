package adaptive

import (
	"math"
	"time"

	"github.com/wardgo/ward/internal/contract"
)

// Knee is ward's own rule, not Netflix's: it looks for the knee of the backend's latency curve
// (the most calls in flight it carries before it queues), gets there in a few windows, and stays
// there. Where each idea comes from:
//
//   - Slow start (TCP, RFC 5681): from a cold start the limit doubles every window until the first
//     window that shows queueing, so a limit of 20 reaches a capacity of 80 in two windows, not
//     in the 70 windows Gradient's additive growth takes.
//   - The baseline is the lowest window average seen (TCP Vegas's base RTT, Brakmo and Peterson
//     1994), a window average rather than one call, so one lucky call is not remembered; a window
//     faster than the baseline becomes it at once.
//   - A window slower than Tolerance × the baseline is read through Little's law: if it is
//     queueing, the backend carries InFlight × baseline / RTT calls at no-queue speed (the
//     bandwidth-delay product BBR aims at, Cardwell et al. 2016), and the limit is cut to that at
//     once, not smoothed towards it.
//   - The next window tells queueing from a slower backend: if the cut brought the latency down,
//     it was queueing; if the latency stayed (or rose) with fewer calls in flight, the backend got
//     slower for everyone, the slower latency becomes the baseline and the limit returns to the
//     last one that showed no queueing. A backend that merely slows is not starved, and nothing
//     learns queueing as a new normal: the baseline moves only down, or up after such a test.
//   - A window with half as many calls again in flight as the baseline's, whose latency grew in
//     proportion, shows the throughput did not grow: the backend was saturated at the baseline's
//     count already, so the knee lies at or below it. The limit is held at three quarters of that
//     count for a window: if the throughput holds there too, the test goes a quarter lower again;
//     if it falls (believed only when two windows say so, since the first still holds calls queued
//     before the cut), the knee is where the saturated throughput meets the latency without a
//     queue, and the limit goes there. A window with more throughput than the saturated one (the
//     backend got faster) ends the test and becomes the baseline; so does one saturated at Min.
//     From a cold start whose initial limit is the backend's own size, the limit therefore
//     doubles once, holds three quarters of its start for two windows and settles at the knee:
//     it never returns to the doubled limit.
//   - Beyond the knee the limit probes upwards by a step that doubles every window without
//     queueing (BIC-TCP's max probing, Xu, Harfoush and Rhee 2004), held to an eighth of the
//     limit, and falls back to one after a cut.
//
// A drop on a window that shows no queueing multiplies the limit by Backoff (AIMD's answer to an
// overload error from further in). While fewer than half the limit are in flight nothing grows.
//
// # Edge cases
//
//   - Min is 1 in the preset, so the rule protects a backend of any size: a backend of 8 slots is
//     held at about 8, where the Netflix presets' minimum of 20 would let it queue 2.5 deep.
//   - A sample with no latency (RTT <= 0) moves nothing unless it is a drop.
type Knee struct {
	Initial int // the limit before any sample; 20 (as the Netflix presets)
	Min     int // the least the limit goes to; 1, so small backends are protected
	Max     int // the most the limit goes to; 1000 (as Netflix's Vegas)
	// Tolerance is how much slower than the baseline a window may be and still read as no
	// queueing, > 1; 1.2. Lower reads queueing sooner (and noise as queueing); higher lets the
	// limit sit further past the knee.
	Tolerance float64
	// Backoff is the share of the limit kept after a drop that latency does not explain, in
	// (0, 1]; 0.9 (Netflix AIMDLimit backoffRatio).
	Backoff float64
}

// DefaultKnee returns the preset: start at 20 within [1, 1000], tolerance 1.2, backoff 0.9.
func DefaultKnee() Knee {
	return Knee{Initial: 20, Min: 1, Max: 1000, Tolerance: 1.2, Backoff: 0.9}
}

// KneeRule is the rule a [Knee] policy builds.
type KneeRule struct {
	p        Knee
	limit    float64
	base     time.Duration // the baseline: lowest window average, or the latency a test adopted
	baseN    int           // the calls in flight in the window that set the baseline
	checked  bool          // a window with half as many again in flight confirmed the baseline
	step     float64       // the next increase beyond the knee
	good     float64       // the limit in force in the last window without queueing
	cutRTT   time.Duration // the latency that made the last cut; 0: no test pending
	slowDone bool          // slow start is over
	satN     int           // the saturated count a probe below it is testing; 0: no test pending
	satX     float64       // the throughput at satN, calls per nanosecond of latency
	satWait  bool          // the first window of the test read a fall: the second decides
}

// NewKnee validates p and returns its rule.
func NewKnee(p Knee) (*KneeRule, error) {
	if err := checkBounds("Knee", p.Initial, p.Min, p.Max); err != nil {
		return nil, err
	}
	if err := checkFraction("Knee.Backoff", p.Backoff); err != nil {
		return nil, err
	}
	if !(p.Tolerance > 1) || math.IsInf(p.Tolerance, 0) {
		return nil, contract.Field(ErrInvalid, "Knee.Tolerance", p.Tolerance, "finite and > 1")
	}
	return &KneeRule{p: p, limit: float64(p.Initial), good: float64(p.Initial), step: 1}, nil
}

// Limit returns the current limit: the estimate truncated, within [Min, Max].
func (r *KneeRule) Limit() int { return limitOf(r.limit, r.p.Min, r.p.Max) }

func (r *KneeRule) bounds() (lo, hi int) { return r.p.Min, r.p.Max }

// Baseline returns the response time the rule reads as no queueing (0 before any sample).
func (r *KneeRule) Baseline() time.Duration { return r.base }

// SlowStart reports whether the rule is still doubling its limit every window.
func (r *KneeRule) SlowStart() bool { return !r.slowDone }

// respond is the share of the latency that made a cut under which the next window's latency
// must fall for the cut to read as having relieved a queue.
const respond = 0.95

// probeShare is the share of a saturated count the limit is held at for one window to find out
// whether that count was past the knee: low enough that a backend saturated at it shows the
// latency falling in proportion (a quarter, against a tolerance of a fifth), high enough to cost
// little goodput for that window.
const probeShare = 0.75

// proportional is the share of a proportional rise in latency (twice the calls, twice the time)
// that reads as the baseline's window having been queued.
const proportional = 0.9

// Sample moves the limit by one sample (a window, under a Limiter); see [Knee] for the reasoning.
func (r *KneeRule) Sample(s Sample) {
	if s.RTT <= 0 {
		if s.Dropped {
			r.backoff()
		}
		return
	}
	// The calls in flight are read no higher than the limit: the first window after a cut holds
	// calls admitted before it.
	s.InFlight = int(min(float64(max(s.InFlight, 0)), r.limit))
	if n := r.satN; n > 0 {
		// A window below a saturated count: if the throughput held with fewer calls in flight,
		// the backend is saturated here too and the test goes lower; if it fell, this latency is
		// the one without a queue, and the knee is where the saturated throughput meets it. The
		// first window after the cut still holds calls admitted before it, whose queueing makes
		// the throughput read low: a fall is believed only from the second.
		x := float64(s.InFlight) / float64(s.RTT)
		switch {
		case proportional*x > r.satX:
			// More throughput with fewer calls: the backend got faster. The test says nothing;
			// this window is the new baseline.
			r.satN = 0
			r.setBase(s)
			return
		case x >= proportional*r.satX && r.clamp(float64(s.InFlight)*probeShare) < float64(s.InFlight):
			r.probe(s.RTT, s.InFlight)
			return
		case x >= proportional*r.satX:
			// Saturated at the least limit there is: the limit stays there.
			r.satN = 0
			r.base, r.baseN, r.checked = s.RTT, s.InFlight, true
			return
		}
		if !r.satWait {
			r.satWait = true
			return
		}
		r.satN = 0
		r.base, r.baseN, r.checked = s.RTT, s.InFlight, true
		r.limit = r.clamp(min(max(r.satX*float64(s.RTT), float64(s.InFlight)), float64(n)))
		r.good = r.limit
		return
	}
	switch {
	case r.base == 0 || float64(s.RTT)*r.p.Tolerance < float64(r.base):
		r.setBase(s) // a new baseline, to be checked
	case s.RTT < r.base:
		r.base = s.RTT // a little faster: the same baseline, better measured
	}
	ratio := float64(s.RTT) / float64(r.base)
	if cut := r.cutRTT; cut != 0 {
		r.cutRTT = 0
		if ratio > r.p.Tolerance && float64(s.RTT) >= respond*float64(cut) {
			// Fewer calls in flight, no faster: the backend is slower, not queued.
			r.setBase(s)
			r.limit = r.clamp(max(r.limit, r.good))
			r.step = 1
			return
		}
	}
	if !r.checked && 2*s.InFlight >= 3*r.baseN {
		// Half as many calls again in flight as when the baseline was taken: a latency that grew
		// in proportion says the throughput did not grow, so the backend was saturated at the
		// baseline's count already: the knee lies at or below it. Test below it.
		if float64(s.RTT)*float64(r.baseN) >= proportional*float64(r.base)*float64(s.InFlight) {
			r.probe(r.base, r.baseN)
			return
		}
		r.checked = true
	}
	switch {
	case ratio > r.p.Tolerance:
		knee := float64(s.InFlight) * float64(r.base) / float64(s.RTT)
		r.limit = r.clamp(min(r.limit, knee))
		r.cutRTT = s.RTT
		r.slowDone, r.step = true, 1
	case s.Dropped:
		r.backoff()
	case float64(s.InFlight)*2 < r.limit:
		// Application-limited: the latency says nothing about a higher limit.
	case ratio > 1+(r.p.Tolerance-1)/2:
		// Within tolerance but past its middle: hold, as Vegas holds between alpha and beta.
		r.good = r.limit
	case !r.slowDone:
		r.good = r.limit
		r.limit = r.clamp(r.limit * 2)
	default:
		r.good = r.limit
		r.limit = r.clamp(r.limit + r.step)
		r.step = max(1, min(2*r.step, r.limit/8))
	}
}

// probe holds the limit at probeShare of a count at which the backend showed itself saturated
// (rtt the latency there), for the next window to tell whether the knee lies at that count or
// below it. Growth after it is by probing, not doubling: the knee is known to lie at or below n.
func (r *KneeRule) probe(rtt time.Duration, n int) {
	r.base, r.baseN, r.checked = rtt, n, false
	r.satN, r.satX, r.satWait = n, float64(n)/float64(rtt), false
	r.limit = r.clamp(float64(n) * probeShare)
	r.good = r.limit
	r.slowDone, r.step, r.cutRTT = true, 1, 0
}

func (r *KneeRule) setBase(s Sample) {
	r.base, r.baseN, r.checked = s.RTT, s.InFlight, false
}

func (r *KneeRule) backoff() {
	r.limit = r.clamp(r.limit * r.p.Backoff)
	r.slowDone, r.step = true, 1
}

// clamp holds an estimate within [Min, Max]; NaN gives Min.
func (r *KneeRule) clamp(v float64) float64 {
	if !(v > float64(r.p.Min)) {
		return float64(r.p.Min)
	}
	return min(v, float64(r.p.Max))
}
