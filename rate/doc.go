// Package rate answers "is this call within a rate or a quota?": a token bucket, an exact sliding
// window, a fixed period, a gate, chains of them and one per key.
//
// Each comes as pure arithmetic (time passed in as nanoseconds from any monotonic origin, not safe
// for concurrent use: [Bucket], [Sliding], [Period]) and as a concurrent type that, driven from
// one goroutine, gives exactly its pure core's answers: [BucketLimiter] (GCRA, lock-free; under
// contention it leases tokens to Ps, so its callers stop sharing one word, and still never
// over-admits), [SlidingLimiter] (a mutex around the ring of stamps),
// [PeriodLimiter] (lock-free). The three limiters have one shape, the library's contract (package ward):
//
//   - Allow() bool: one call at Now, the short form;
//   - TakeAt(now, n) (ok, wait): n calls at an instant of the limiter's clock, and when refused how
//     long until they would pass (0 when ok, [Forever] when never);
//   - Now() int64: the instant Allow and Do decide at;
//   - Do(ctx, fn): fn runs if one call is admitted at Now, and its error comes back unchanged;
//     otherwise Do returns [ErrLimited] (matching ward.ErrRefused) with its wait, without calling
//     fn. A rate limit learns nothing from outcomes, so there is no handle to settle;
//   - Next(now, n) and Left(now): the wait and the room, without taking;
//   - Acquire(now)/Release(now): the [Permit] methods, which [Chained] and [Partitioned] build
//     on, as does the adaptive limiter through its AsPermit.
//
// The pure cores have the same shape: TakeAt(now, n) (ok, wait), Next(now, n), Left(now),
// Acquire and Release; [Taker] names TakeAt, the one method cores and limiters share, and
// [Limiter] a Taker with a clock. A [Period] also says where the quota stands after one event
// ([Period.TakeQuota]: [Under], [Hit], [Over], go-zero's PeriodLimit answers) and when it resets
// ([Period.Reset]); the limiters have both too. [Partitioned.Take](key, now, n) takes n calls from
// a key's limiter and returns its wait when that limiter is a Taker (0, unknown, for any other
// Permit).
//
// Bucket and Period also expose their state apart from their policy ([Tokens], [Usage]) with a
// pure Step(now, state, n), so several processes can share one allowance through a
// compare-and-set store (a database row, a Redis script): read the state, Step it, write it back
// only if the store still holds what was read, and ask again otherwise.
//
// [Gate] is the bulkhead shaped as a Permit, a link for [Chain] and [Partitioned]; a bulkhead
// with Do and a handle is the adaptive package's Limiter with a fixed limit.
//
// # Counts
//
// The three limiters are [ward.Counter]s: Counts returns the calls admitted and refused since the
// limiter was built (n tokens taken at once are one call; a rate limit settles nothing, so the
// settled counts stay zero; a Release does not take an admission back). A [SlidingLimiter]
// always counts, under the lock it takes anyway. A [BucketLimiter] and a [PeriodLimiter] count
// when built with [WithCounts]: their admission path is one compare-and-set or atomic add on a
// shared word, with no write of a P's own to add a count to, so counting there costs each call
// one more write to a row of its own P (pinned, a plain add, on a line no other core writes),
// which a limiter that no metric reads should not pay. Without WithCounts their Counts are zero
// and Counting reports false, so an exporter can tell a quiet limiter from one that does not
// count.
//
// # Edge cases
//
//   - Counts are ints everywhere: TakeAt, Step and Next take n int. A negative n costs
//     nothing (and is admitted, as n = 0 is); n over the burst or the quota is never granted, and
//     its wait is [Forever].
//   - A clock that goes backwards never adds tokens twice, never takes them away, and never makes
//     an event leave a window sooner: buckets keep their arrival time, windows stamp at their newest.
//   - Clocks of different origins. Every now of a limiter is an instant of its clock (Now). An
//     instant far behind what a limiter recorded, more than [MaxSkew] (a minute) behind, beyond
//     the burst's span for a bucket, cannot be a late reading of the same clock: it is read as the
//     clock having jumped back (a Unix-nanosecond time passed to a limiter whose clock started near
//     0, or the other way round), and the state is pulled back to that instant, spent there. A
//     bucket's theoretical arrival time (a Bucket's as a BucketLimiter's) is pulled back to the
//     instant plus the burst's span (the bucket empty, not in debt for decades); a state that
//     [Bucket.Step] reads, stamped more than MaxSkew after the instant, is pulled back to it, empty; a
//     window is stamped full at the instant; a period reopens at the instant (on its multiple
//     with align), spent. So mixing origins never wedges a limiter: it admits again an interval, a
//     window or a period later. Nor does it admit more than its allowance: a jump back admits
//     nothing at once, and a jump forward reads as time having passed, a full allowance at most.
//     A reading stale by less than MaxSkew (a goroutine that waited for its turn) is judged on the
//     recorded state as it is, and never over-admits.
//   - Refused events are not counted by a Period (go-zero's PeriodLimit counts them).
//   - Both buckets take a rate in [0, 1e9] tokens a second (0: a burst that never refills; more
//     than a token a nanosecond is an error) and a burst of whole tokens from 1 to [MaxBurst]
//     (2^53, the most whole tokens a float64 counts exactly); a full bucket grants exactly burst
//     calls of one token at once, at every rate. They count in the same fixed-point units on a
//     grid of the clock (see [Bucket]), so they decide alike, waits included, and run at their
//     rate: the rate is held to 1 part in 2^61 and a unit accrues every 1 to 4 nanoseconds, for
//     every bucket that fills within an int64 of nanoseconds (about 292 years). A bucket that
//     takes longer to fill still works, on coarser units: a token is 2^62/burst units, rounded
//     down to a power of two, and the rate is held to fewer bits. In any stretch of time a bucket
//     admits at most burst + elapsed × rate tokens plus one unit (a whole token only at rates of
//     5e8 a second and more, where a token is a unit). Waits are exact: a call
//     refused with a wait w is refused at now+w-1 ns and granted at now+w, when nothing else
//     moved. [Bucket.Step] has float64 arithmetic of its own, for stores (see its doc).
//   - No configuration is held into range: a burst under 1, a period or a window under a
//     nanosecond, a negative Gate limit or Partitioned size, a nil option or clock is an error
//     matching [ErrInvalid] (and ward.ErrInvalid) that names the field. Zero means "the default"
//     only where the doc says so (a Gate of 0 has no ceiling, a Partitioned of 0 keeps
//     [DefaultPartitions]).
//   - A [Sliding] keeps its promise, at most quota events in any window-long stretch, whatever
//     order the instants come in (within MaxSkew): an instant earlier than the newest event is
//     admitted only when the stamps it holds show that the promise still holds, else refused. Its
//     quota goes up to [MaxSlidingQuota], since it keeps a stamp per event.
//   - Instants may be anywhere in the int64 range. Time between two instants is computed exactly,
//     so instants near math.MinInt64 and math.MaxInt64 neither wrap round nor panic. The one
//     limit: a bucket refuses a call whose theoretical arrival time would pass the end of its
//     units' range (only at rates near a token a nanosecond, an instant within the fill time of
//     math.MaxInt64), with a wait of [Forever]. Waits are never negative; one that does not fit a
//     Duration, or that would end past math.MaxInt64, is [Forever].
//   - [Partitioned] is an exact LRU per shard (shards of at least 64 keys, up to 64 shards); the key
//     dropped is the least recently used of its shard.
package rate
