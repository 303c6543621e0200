package ward_test

import (
	"testing"
	"time"

	"github.com/wardgo/ward"
)

// TestLatencyBucket: every bucket holds the response times up to its bound and above the one
// before; the first holds zero and less; the last everything past the last bound.
func TestLatencyBucket(t *testing.T) {
	for _, c := range []struct {
		d    int64
		want int
	}{
		{-5, 0}, {0, 0}, {1, 0}, {1024, 0}, {1025, 1}, {2048, 1}, {2049, 2},
		{int64(ward.LatencyBound(ward.LatencyBuckets - 2)), ward.LatencyBuckets - 2},
		{int64(ward.LatencyBound(ward.LatencyBuckets-2)) + 1, ward.LatencyBuckets - 1},
		{1 << 62, ward.LatencyBuckets - 1},
	} {
		if got := ward.LatencyBucket(c.d); got != c.want {
			t.Errorf("LatencyBucket(%d) = %d, want %d", c.d, got, c.want)
		}
	}
	for i := 0; i < ward.LatencyBuckets-1; i++ {
		b := ward.LatencyBound(i)
		if ward.LatencyBucket(int64(b)) != i || ward.LatencyBucket(int64(b)+1) != i+1 {
			t.Errorf("bucket %d: bound %v not its inclusive upper edge", i, b)
		}
	}
	if ward.LatencyBound(-1) >= 0 || ward.LatencyBound(ward.LatencyBuckets-1) >= 0 {
		t.Error("a bound for the unbounded bucket or an index out of range")
	}
	if ward.LatencyBound(0) != 1024*time.Nanosecond {
		t.Errorf("first bound %v", ward.LatencyBound(0))
	}
}

func TestUnsettled(t *testing.T) {
	if got := (ward.Counts{Admitted: 10, Passed: 3, Failed: 2, Ignored: 1}).Unsettled(); got != 4 {
		t.Errorf("Unsettled = %d, want 4", got)
	}
	if got := (ward.Counts{Admitted: 1, Passed: 2}).Unsettled(); got != 0 {
		t.Errorf("Unsettled with more settles than admissions = %d, want 0", got)
	}
}
