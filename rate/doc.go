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
// # Decisions the issue left open
//
//   - A clock that goes backwards never adds tokens twice, never takes them away, and never makes
//     an event leave a window sooner: buckets keep their stamp, windows stamp at their newest.
//   - Refused events are not counted by a Period (go-zero's PeriodLimit counts them).
//   - A cost that is negative or NaN costs nothing; a cost over the burst is never granted, and
//     its wait is [Forever].
//   - [BucketLimiter] needs a positive rate (GCRA divides by it); a pure [Bucket] accepts rate 0, a
//     burst that never refills.
//   - [Partitioned] is an exact LRU per shard (shards of at least 64 keys, up to 64 shards); the key
//     dropped is the least recently used of its shard.
package rate
