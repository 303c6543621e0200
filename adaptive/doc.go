// Package adaptive is a concurrency limit that finds itself: it rises while calls come back as
// fast as ever and falls once they queue, so a server refuses the excess at once instead of
// stacking it behind slow calls.
//
// # Two layers
//
// The rules are the pure arithmetic: a [Rule] sees one [Sample] (a response time, the calls in
// flight, whether the call dropped) and moves a limit. They are deterministic, allocation-free and
// not safe for concurrent use; the draws the probing rules need are passed in. The [Limiter] is the
// concurrent layer: a compare-and-set on the in-flight count against the limit, samples gathered in
// per-P stripes, and the rule applied once per window by whichever call closes it.
//
//	rule, _ := adaptive.NewGradient(adaptive.DefaultGradient())
//	limiter, _ := adaptive.New(rule)
//	lease, ok := limiter.Acquire()
//	if !ok {
//		return adaptive.ErrLimitExceeded // refuse at once: a few ns, no clock read
//	}
//	err := call()
//	switch {
//	case err == nil:
//		lease.Pass() // the response time is a sample
//	case isTimeoutOrOverload(err):
//		lease.Drop() // a sample marked dropped
//	default:
//		lease.Ignore() // a bad request: frees the slot, says nothing about load
//	}
//
// [Limiter.Do] does the same around a func(context.Context) error.
//
// # Which rule
//
//   - [GradientRule] (Netflix Gradient2, the recommended rule): compares each window's latency with
//     a long-run average. Use it when latency is the overload signal. Within 1.5× the average the
//     limit grows by about 0.8 a window; beyond it, it shrinks in proportion. It learns a new
//     normal: latency that stays high for hundreds of windows becomes the average and the limit
//     grows again from there (in this package's simulated run, a backend that queued at 40 for
//     100 s left the limit 156 at the end of the next 100 s at C = 80, against 99 in the first
//     phase; with 120 s phases it reached 173, over 2C). It does not read drops. A backend that
//     merely gets slower looks to it like queueing: in wardsim's spike scenario (service time ×3
//     for 30 s) it fell to its minimum of 20 and took 76 s to climb back, where Vegas took 7 s.
//   - [AIMDRule]: ignores latency; one up per window while half the limit is used, ×0.9 on a window
//     with a drop. Use it when latency is too noisy to mean anything, or when the overload signal
//     is a timeout or a full bulkhead further in.
//   - [VegasRule]: TCP Vegas, the queue estimated from the shortest response time seen, which it
//     re-measures now and then. Good when the no-load latency is stable and known to be the floor.
//   - [MinRTTRule] (Netflix's first Gradient): kept for services tuned to it; a minimum never
//     forgets a lucky call, and its probes cost a dip in throughput.
//   - [Fixed]: when you know the right number (a pool of 10 connections, a licence for 4
//     sessions) a fixed limit is simpler and more predictable than any adaptive rule. If you need
//     calls per second, use a rate limiter instead.
//
// Every preset is Netflix concurrency-limits 0.5.4 (the Java original) field by field; each field's
// doc names its source.
//
// # Behaviour at the edges
//
//   - Windows last at least 1 s and at least 10 timed samples. A window that has run
//     its time with fewer is extended: its end moves one window past the call that found it short,
//     and it keeps its samples.
//   - By default one admitted call in [DefaultSampleEvery] is timed (two clock reads); the others
//     settle without reading the clock. The window's latency is the average of the timed calls. At
//     low traffic this makes windows longer; [WithSampleEvery](1) times every call.
//   - A sample with no latency (RTT <= 0) is ignored by the latency rules (Netflix's Vegas throws
//     on one); AIMD still reads its drop flag.
//   - A draw outside [0, 1), NaN included, is held into [0, 1).
//   - A Lease is a value: settling the variable twice is a no-op; settling two copies of one lease
//     is a caller's bug this package cannot see (it would free two slots).
//   - The limit a Limiter enforces is the rule's Limit(), with anything under 1 raised to 1.
package adaptive
