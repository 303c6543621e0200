// Package atomicwindow holds the rolling windows the other ward packages read: what did the last
// window of time hold?
//
// Two layers, as everywhere in ward:
//
//   - [Window] is the pure rolling window: size buckets of any
//     type spanning a window of time, written and read at explicit instants. Deterministic,
//     allocation-free after construction, not safe for concurrent use.
//   - [Striped] is the concurrent window: the same buckets, one copy per P (stripe), each stripe
//     written only by the goroutine running on its P, with plain loads and stores rather than
//     atomic read-modify-writes. Readers sum the stripes. [Batch] is its untimed sibling: one
//     bucket per stripe, folded and reset as a whole by whoever closes the window.
//
// # What a concurrent reader may observe
//
// A write to a Striped or a Batch is a plain ++ into the writer's own stripe. A reader folding the
// stripes at the same time may miss a write that is in progress, and a write that began before a
// Batch.Fold and finishes after it is lost (its stripe is tagged with a generation that has been
// folded already, and the next write to that stripe starts it afresh). A reader never sees a
// value that was not written: stripes are tagged with their bucket (or generation), a tag is
// published only after its stripe was cleared, and a reader re-checks the tag after reading the
// values and skips the stripe if it moved. If GOMAXPROCS grows after construction, the stripes
// grow with it (the old ones are kept and still read), so no two Ps ever share a stripe and no
// write is lost to a collision; in the builds without a per-P index (-tags ward_nolinkname) a
// stripe is picked at random and written atomically. Driven by one goroutine, a Striped reads
// exactly what a Window reads for the same writes (a differential test and a fuzz target prove
// it).
//
// # Edge cases
//
//   - [NewWindow] and [NewStriped] reject a bad shape with an error matching [ErrInvalid] that
//     names the argument: a size outside [1, [MaxBuckets]], a window shorter than size
//     nanoseconds (a bucket is at least 1 ns wide), fields outside [1, [MaxFields]]; [NewBatch]
//     rejects more than [MaxFields] kinds and a kind that is neither Sum nor Max. Nothing is
//     held into range.
//   - Instants may lie anywhere in int64: the distance between two of them is taken so that it
//     cannot overflow, and a read visits at most the window's buckets.
//   - A write at an instant earlier than the newest bucket written, by less than the whole
//     window (a clock that stepped back, or a reading a goroutine made a moment before another's),
//     goes into the newest bucket, in Window and Striped alike; it never rewrites history.
//   - An instant more than the whole window before the newest bucket is read as the clock having
//     jumped back (a far-future instant was written before, such as a Unix time among monotonic
//     ones): every bucket lies in its future, so a read there visits nothing and a write there
//     restarts the window, empty, its first bucket opening at that instant. Without this rule one
//     far-future write would keep every later write in a single bucket that never ages out. A
//     Striped restarts by swapping in fresh stripes: that write allocates, and a write racing it
//     into the old stripes is lost, never invented.
//   - Striped and Batch carry at most [MaxFields] int64 counters per bucket; values are expected
//     non-negative (a Max field of an empty bucket reads 0). [NewBatch] keeps the first MaxFields
//     kinds it is given.
package atomicwindow
