// Package rate answers "is this call within a rate or a quota?": a token bucket, an exact sliding
// window, a fixed period, a gate, chains of them and one per key.
//
// Each comes as pure arithmetic (time passed in as nanoseconds from any monotonic origin, not safe
// for concurrent use: [Bucket], [Sliding], [Period]) and, where concurrent use is the point, as a
// concurrent type: [BucketLimiter] (GCRA, lock-free), [PeriodLimiter] (lock-free), [SlidingLimiter]
// (a mutex around the ring of stamps), [Gate] (lock-free). All of them implement [Permit], which
// [Chained] and [Partitioned] build on, as does the adaptive limiter through its AsPermit.
//
// Bucket and Period also expose their state apart from their policy ([Tokens], [Usage]) with a
// pure Step, so several processes can share one allowance through a compare-and-set store (a
// database row, a Redis script): read the state, Step it, write it back only if the store still
// holds what was read, and ask again otherwise.
//
// # Decisions
//
//   - A clock that goes backwards never adds tokens twice, never takes them away, and never makes
//     an event leave a window sooner: buckets keep their stamp, windows stamp at their newest.
//   - Refused events are not counted by a Period (go-zero's PeriodLimit counts them).
//   - A cost that is negative or NaN costs nothing; a cost over the burst is never granted, and
//     its wait is [Forever].
//   - [BucketLimiter] needs a positive rate (GCRA divides by it); a pure [Bucket] accepts rate 0, a
//     burst that never refills.
//   - Both buckets grant a full bucket exactly floor(burst) calls of one token at once, at every
//     rate they accept. A [BucketLimiter] works in whole nanoseconds: its emission interval,
//     1e9/rate, is rounded up (it never runs faster than rate), so it takes rates from about
//     1.08e-10 to 1e9 a second and a burst whose fill time fits an int64 of nanoseconds (about 292
//     years); past that, construction fails and the error names the field. A pure [Bucket] works
//     in float64 and takes any finite rate. Bursts go up to [MaxBurst], 2^53, the most whole tokens
//     a float64 counts exactly.
//   - A [Sliding] keeps its promise, at most quota events in any window-long stretch, whatever
//     order the instants come in: an instant earlier than the newest event is admitted only when
//     the stamps it holds show that the promise still holds, else refused. Its quota goes up to
//     [MaxSlidingQuota], since it keeps a stamp per event.
//   - Instants may be anywhere in the int64 range, in any order. Time between two instants is
//     computed exactly, so instants near math.MinInt64 and math.MaxInt64 neither wrap round nor
//     panic. The one limit: a [BucketLimiter] refuses a call whose theoretical arrival time would
//     pass math.MaxInt64 (an instant within the fill time of the end of the range), with a wait
//     of [Forever]. Waits are never negative; one that does not fit a Duration is [Forever].
//   - [Partitioned] is an exact LRU per shard (shards of at least 64 keys, up to 64 shards); the key
//     dropped is the least recently used of its shard.
package rate
