package ward

import (
	"math/bits"
	"time"
)

// Counts is what a guard has decided since it was built: one read shape that every ward type
// keeps, so that an exporter (Prometheus, OpenTelemetry, a page of your own) reads any guard the
// same way, and a refusal rate or an error ratio is a division of two of its fields.
//
// Every field is cumulative since the guard was built and never goes down. The guards keep them
// in rows of their own P (a plain add on a cache line no other core writes, while the call is
// pinned to its P), and Counts folds the rows when it is read: reading costs a pass over the
// rows, a call pays one add. The fields are read one by one while calls go on, so a reading may
// hold an admission whose settle it does not hold yet, never the reverse of what happened to one
// call in a way that loses it: once every call has settled, the fields add up exactly.
//
// How the fields add up, for any guard: the calls it was asked about are
// Admitted + Refused + Abandoned, and the admitted calls not settled yet are
// Admitted − Passed − Failed − Ignored ([Counts.Unsettled]). A guard that learns nothing from
// outcomes (a rate limit) settles nothing: its Passed, Failed and Ignored count the admissions
// settled through its Admission, which for such a guard is none.
type Counts struct {
	Admitted  uint64 // calls let through
	Refused   uint64 // calls refused with a refusal matching [ErrRefused]
	Abandoned uint64 // calls that waited for admission and whose context ended first (a type that waits: a queue, a pool)
	Passed    uint64 // admitted calls settled as a [Pass]
	Failed    uint64 // admitted calls settled as a [Fail]
	Ignored   uint64 // admitted calls settled as an [Ignore]
}

// Unsettled returns the admitted calls not settled yet: Admitted − Passed − Failed − Ignored, or
// 0 when a reading taken while calls settle finds more settles than admissions.
func (c Counts) Unsettled() uint64 {
	s := c.Passed + c.Failed + c.Ignored
	if s >= c.Admitted {
		return 0
	}
	return c.Admitted - s
}

// Counter is a guard that counts its decisions: every ward type has Counts() (adaptive.Limiter,
// Partition and Queue, breaker.Breaker, shed.Shedder, the rate limiters, failurewindow.Window,
// pool.Pool, wardhttp's retry budget). A guard of your own implements it to be exported as ward's
// are.
type Counter interface {
	// Counts returns the guard's counts since it was built.
	Counts() Counts
}

// LatencyBuckets is the number of buckets of a [Latency] histogram: response times up to
// LatencyBound(0), one bucket for each doubling up to LatencyBound(LatencyBuckets-2), and one for
// all longer.
const LatencyBuckets = 27

// latencyShift: the first bucket's bound is 1<<latencyShift nanoseconds.
const latencyShift = 10

// LatencyBound returns the upper bound, inclusive, of bucket i of a [Latency] histogram:
// 2^(10+i) nanoseconds (1.024 µs, 2.048 µs, … about 34.4 s), or a negative duration for the last
// bucket, which has no bound, and for an i out of range.
func LatencyBound(i int) time.Duration {
	if i < 0 || i >= LatencyBuckets-1 {
		return -1
	}
	return time.Duration(1) << (latencyShift + i)
}

// LatencyBucket returns the bucket of a [Latency] histogram a response time of d nanoseconds
// falls in: the first i with d <= LatencyBound(i), or the last bucket. A d of zero or less falls
// in the first. It is a few instructions and allocates nothing.
func LatencyBucket(d int64) int {
	if d <= 1<<latencyShift {
		return 0
	}
	return min(bits.Len64(uint64(d-1))-latencyShift, LatencyBuckets-1)
}

// Latency is a histogram of response times, cumulative since the guard was built: what a type
// that times its calls keeps (adaptive.Limiter, shed.Shedder), in per-P rows folded when it is
// read, as [Counts] are.
//
// Buckets double from about a microsecond to about half a minute ([LatencyBound]); Buckets[i]
// holds the calls whose response time fell in bucket i alone (not the running total Prometheus
// shows: an exporter adds them up). A type that times one call in several (adaptive.Limiter's
// WithSampleEvery) holds the timed calls only: Count is then a sample of the settled calls, and
// its distribution theirs.
type Latency struct {
	Count   uint64                 // calls timed
	Sum     time.Duration          // their response times added up
	Buckets [LatencyBuckets]uint64 // calls per bucket; they add up to Count
}

// Timed is a guard that times the calls it admits: [Latency] returns its histogram.
type Timed interface {
	// Latency returns the histogram of the response times the guard measured since it was
	// built.
	Latency() Latency
}
