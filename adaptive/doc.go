// Package adaptive is a concurrency limit that finds itself: it rises while calls come back as
// fast as ever and falls once they queue, so a server refuses the excess at once instead of
// stacking it behind slow calls.
//
// # Two layers
//
// The pure arithmetic is a [Core]: a count of calls in flight held under a limit that a [Rule]
// moves once per [Window]. Its instants are arguments; it is deterministic, allocation-free and not
// safe for concurrent use. The rules themselves are pure too: a Rule sees one [Sample] (a response
// time, the calls in flight, whether a call failed) and moves a limit; the draws the probing rules
// need are passed in. The [Limiter] is the concurrent layer of the Core's arithmetic: a
// compare-and-set on the in-flight count against the limit, samples gathered in per-P stripes, and
// the rule applied once per window by whichever call closes it. Driven from one goroutine with an
// injected clock and WithSampleEvery(1), a Limiter gives exactly a Core's decisions and limits.
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
//		lease.Fail() // a sample marked dropped
//	default:
//		lease.Ignore() // a bad request: frees the slot, says nothing about load
//	}
//
// [Limiter.Do] does the same around a func(context.Context) error, with ward's one
// classification: nil is a Pass; context.DeadlineExceeded and the errors [WithFailure] names are
// a Fail; the errors [WithOwnError] names (not found, validation: the backend answered) are a
// Pass, their response time a sample; the caller's own cancellation and every other error are an
// Ignore (they say nothing sure about load); a panic is a Fail and continues. A refusal is [ErrLimitExceeded], which matches ward.ErrRefused and carries no wait.
//
// # Which rule
//
//   - [KneeRule] (ward's own, the recommended rule): slow start from a cold limit, a latency
//     baseline it checks before trusting, a cut to what the baseline says the backend carries when
//     it queues, and held probing above the knee; see "A limit that settles" below. In the simulator's
//     scores table it is the only rule that meets every settling bar, and its minimum of 1 protects
//     backends of any size.
//   - [GradientRule] (Netflix Gradient2, kept exactly): compares each window's latency with
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
//   - [FixedRule] ([NewFixed]): when you know the right number (a pool of 10 connections, a licence for 4
//     sessions) a fixed limit is simpler and more predictable than any adaptive rule. If you need
//     calls per second, use a rate limiter instead.
//
// Every preset is Netflix concurrency-limits 0.5.4 (the Java original) field by field; each field's
// doc names its source.
//
// # Names
//
// [MinRTT.ProbeEvery] is a count of samples between probes, and [Vegas.ProbeMultiplier] a
// multiplier of the limit (Netflix's probeInterval and probeMultiplier): a bare "Probe" would not
// say which. The calls in flight are InFlight everywhere. Every configuration error matches
// [ErrInvalid] and names its field.
//
// # Edge cases
//
//   - Windows last at least [Window.Duration] (1 s) and at least [Window.MinSamples] (10) timed
//     calls. A window that has run its time with fewer is extended: its end moves one Duration past
//     the call that found it short, and it keeps its samples.
//   - The clock: [Limiter.Now] is the clock the Limiter times calls on (ward's monotonic clock, or
//     WithClock's). A Core takes instants of any one origin. A window's end more than one Duration
//     after the instant a call settles at cannot come from a clock that only moves forward: it is
//     read as the clock having jumped back (or an instant of another origin) and the window is due
//     at once, so mixing origins never wedges the limit. A call that settles at an instant before
//     the one it started at has a response time of 0; one whose start is of an earlier origin has
//     a huge one, which the latency rules read as overload (the limit falls, never rises past Max).
//     A window's sum of response times past 2⁶³ ns (only instants of two origins reach it) wraps.
//   - By default one admitted call in [DefaultSampleEvery] is timed (two clock reads); the others
//     settle without reading the clock. The window's latency is the average of the timed calls. At
//     low traffic this makes windows longer; [WithSampleEvery](1) times every call. A Core times
//     every call.
//   - A sample with no latency (RTT <= 0) is ignored by the latency rules (Netflix's Vegas throws
//     on one); AIMD still reads its drop flag.
//   - A draw outside [0, 1), NaN included, is held into [0, 1).
//   - A Lease and a Ticket are values: settling the variable twice is a no-op; settling two copies
//     of one lease is a caller's bug this package cannot see (it would free two slots).
//   - The limit enforced is the rule's Limit(), with anything under 1 raised to 1: a rule of your
//     own may return 0, and a limit of 0 would refuse every call forever. The rules that ship never
//     go under their Min (at least 1); [NewFixed] of less than 1 is an error, not a limit of 1.
//   - A nil rule, a nil option, a nil clock and a nil predicate are configuration errors.
//
// # A limit that settles: Knee
//
// The Netflix rules above are Netflix's arithmetic exactly, weaknesses included. [KneeRule] is
// ward's own: slow start from a cold start, a baseline that is the lowest window average (checked
// by a window with half as many calls again in flight), a cut straight to InFlight × baseline /
// RTT when a window queues, and a test in the next window that tells a queue (the cut brought the
// latency down) from a slower backend (it did not: the slower latency becomes the baseline and the
// limit returns). [Knee]'s doc says where each idea comes from. In wardsim (`make demo`, seed 1),
// against Gradient: from a cold start at capacity 80 it settles in 3 s (Gradient: not within
// 30 s); a tripled service time for 30 s keeps 95% goodput (Gradient 49%) and needs no recovery
// (Gradient 76 s); 80 clients on 20 slots for 90 s hold its limit at 1.15 × the capacity (Gradient
// drifts to 2.2 ×); the settled p99 stays within 1.31 × the unloaded response time in every phase
// of every scenario (Gradient 4.99 ×); an 8-slot backend keeps 97% goodput at 1.12 × (Gradient
// 27% at 4.99 ×).
//
// A cold start whose initial limit is the backend's own size (Initial 20 on 20 slots) cannot
// tell, from the window that doubles the limit, whether the start was at the knee or already
// past it; Knee holds three quarters of its start for two windows to find out, then settles at
// the knee: under 4× overload, the limit reads 40, 15, 15, 20 and then probes within the
// tolerance (four windows, about 4 s; the two windows at 15 keep about 75% goodput), and it
// never returns to 40.
//
// # Small backends
//
// The Netflix presets never go under their Min of 20 (AIMD, Gradient) or hold the limit at
// max(4, sqrt(limit)) (MinRTT): they cannot protect a backend that carries fewer than 20 calls at
// once, which queues under them instead (wardsim's 8-slot scenario: Gradient ends at 44 with p99
// five times the unloaded time). For such a backend use [DefaultKnee] (Min 1), set the preset's
// Min to 1, or use [NewFixed] with the backend's size.
//
// # Waiting and partitions
//
// [Queue] lets callers wait for a slot, in a bounded line, for at most a MaxWait, served [FIFO] or
// [LIFO]; its path that does not wait is the Limiter's. [Partitions] splits one limit into named
// shares that borrow each other's idle capacity without ever exceeding the limit together. Both
// hand out their own handles ([Slot], [PartitionLease]) that settle a Lease. A Queue is woken by
// every slot its Limiter frees, whoever frees it (a Lease taken directly, a partition's call, a
// window that raises the limit); take every call through a Partition when partitions are in use,
// since a call taken from the Limiter directly uses a slot no partition accounts for.
package adaptive
