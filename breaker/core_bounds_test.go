package breaker

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/wardgo/ward/atomicwindow"
	"github.com/wardgo/ward/internal/sat"
)

// TestPolicyBucketsBound: a Buckets above atomicwindow.MaxBuckets is a construction error naming
// the field, for the Core and the Breaker alike, however long the Window. Such policies once
// passed validation and then crashed (2^62 and more), ran out of memory (2^40) or hung (MaxInt).
func TestPolicyBucketsBound(t *testing.T) {
	for _, b := range []int64{atomicwindow.MaxBuckets + 1, 1 << 40, 1<<62 + 1, math.MaxInt64} {
		buckets := int(b)
		if int64(buckets) != b {
			continue // past int on a 32-bit target
		}
		p := DefaultPolicy()
		p.Buckets, p.Window = buckets, math.MaxInt64
		_, err := NewCore(p, 0)
		_, err2 := New(WithPolicy(p))
		for _, e := range []error{p.Validate(), err, err2} {
			if !errors.Is(e, ErrInvalid) || !strings.Contains(e.Error(), "Policy.Buckets") {
				t.Fatalf("Buckets = %d: want an error naming Policy.Buckets, got %v", buckets, e)
			}
		}
	}
}

// TestPolicyExtremeSizesAccepted: the largest sizes the validator accepts build a working core:
// MaxBuckets buckets of 1 ns, and one bucket spanning MaxInt64.
func TestPolicyExtremeSizesAccepted(t *testing.T) {
	for _, c := range []struct {
		buckets int
		window  time.Duration
	}{
		{atomicwindow.MaxBuckets, atomicwindow.MaxBuckets},
		{atomicwindow.MaxBuckets, math.MaxInt64},
		{1, math.MaxInt64},
	} {
		p := GoZeroPolicy()
		p.Buckets, p.Window = c.buckets, c.window
		core, err := NewCore(p, math.MinInt64)
		if err != nil {
			t.Fatalf("%d buckets over %v: %v", c.buckets, c.window, err)
		}
		if _, err := New(WithPolicy(p)); err != nil {
			t.Fatalf("New, %d buckets over %v: %v", c.buckets, c.window, err)
		}
		for _, now := range []int64{math.MinInt64, -1, 0, math.MaxInt64 - 1, math.MaxInt64} {
			for i := 0; i < 10; i++ {
				core.Record(now, Failure)
			}
			if r := core.Ratio(now); !(r >= 0 && r < 1) {
				t.Fatalf("%d buckets over %v: Ratio(%d) = %v, want in [0, 1)", c.buckets, c.window, now, r)
			}
			core.Allow(now, 0.5)
		}
	}
}

// TestHugeK: a K as large as a float64 goes means a success pays for any number of calls, so a
// window holding a success never refuses, even at the head of a failing run. The decay of K once
// overflowed to -Inf and fell to the floor.
func TestHugeK(t *testing.T) {
	p := GoZeroPolicy()
	p.K, p.KFloor = math.MaxFloat64, 1
	c, err := NewCore(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	c.Record(0, Success)
	for i := int64(1); i <= 10; i++ { // ten buckets of failures only: failing run 10 of 40
		for j := 0; j < 10; j++ {
			c.Record(i*250*ms, Failure)
		}
	}
	if r := c.Ratio(10 * 250 * ms); r != 0 {
		t.Fatalf("ratio %v with a success in the window and K = MaxFloat64, want 0", r)
	}
}

// FuzzCoreBounds drives a Core built from any policy (every field fuzzed, the extremes of int64
// and float64 included) at any instants. Either NewCore refuses the policy with an error naming a
// field, or the core never panics, does bounded work, keeps Ratio in [0, 1), and lets through
// every call whose draw is at or over the ratio.
func FuzzCoreBounds(f *testing.F) {
	d := DefaultPolicy()
	f.Add(d.K, d.KFloor, d.Protection, int64(d.ProbeAfter), int64(d.Buckets), int64(d.Window), int64(0), []byte{1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 9, 2})
	f.Add(math.MaxFloat64, 1.0, 0.0, int64(math.MaxInt64), int64(atomicwindow.MaxBuckets), int64(math.MaxInt64), int64(math.MinInt64), []byte{255, 1, 127, 1, 0, 2})
	f.Add(math.Inf(1), math.NaN(), -1.0, int64(-1), int64(math.MaxInt64), int64(math.MaxInt64), int64(math.MaxInt64), []byte{3})
	f.Add(5e-324, 5e-324, math.MaxFloat64, int64(1), int64(1), int64(1), int64(math.MaxInt64-5), []byte{1, 1, 2, 1, 3, 0})
	f.Fuzz(func(t *testing.T, k, floor, protection float64, probe, buckets, window, start int64, data []byte) {
		p := Policy{K: k, KFloor: floor, Protection: protection, ProbeAfter: time.Duration(probe),
			Buckets: int(max(min(buckets, math.MaxInt), math.MinInt)), Window: time.Duration(window)}
		c, err := NewCore(p, start)
		if err != nil {
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "Policy.") || p.Validate() == nil {
				t.Fatalf("NewCore(%+v): %v", p, err)
			}
			return
		}
		// every call reads every bucket: bound the work per input at about 2^20 bucket visits
		steps := min(len(data), max(1<<20/p.Buckets, 2))
		now := start
		for i := 0; i < steps; i++ {
			b := data[i]
			switch n := int64(b & 63); b >> 6 { // time moves a little, a bucket or more, far back, to an end
			case 0:
				now = sat.Add(now, n)
			case 1:
				now = sat.Add(now, sat.Mul(n, int64(p.Window)/int64(p.Buckets)))
			case 2:
				now = sat.Add(now, -sat.Mul(n, int64(p.Window)/8))
			default:
				if n&1 == 0 {
					now = math.MaxInt64 - n
				} else {
					now = math.MinInt64 + n
				}
			}
			r := c.Ratio(now)
			if !(r >= 0 && r < 1) {
				t.Fatalf("step %d: Ratio(%d) = %v, want in [0, 1) (policy %+v)", i, now, r, p)
			}
			roll := float64(b%16) / 16
			switch ok := c.Allow(now, roll); {
			case !ok && roll >= r:
				t.Fatalf("step %d: Allow(%d, %v) refused at ratio %v (policy %+v)", i, now, roll, r, p)
			case ok && b&1 == 0:
				c.Record(now, Failure)
			case ok:
				c.Record(now, Success)
			}
		}
	})
}
