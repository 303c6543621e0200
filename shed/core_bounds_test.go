package shed

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
// the field, for the Core and the Shedder alike, however long the Window. Such policies once
// passed validation and then crashed (2^62 and more) or ran out of memory (2^40).
func TestPolicyBucketsBound(t *testing.T) {
	for _, b := range []int64{atomicwindow.MaxBuckets + 1, 1 << 40, 1<<62 + 1, math.MaxInt64} {
		buckets := int(b)
		if int64(buckets) != b {
			continue // past int on a 32-bit target
		}
		p := DefaultPolicy()
		p.Buckets, p.Window = buckets, math.MaxInt64
		_, err := NewCore(p, 0)
		_, err2 := New(WithPolicy(p), WithCPU(func() int { return 0 }))
		for _, e := range []error{p.Validate(), err, err2} {
			if !errors.Is(e, ErrInvalid) || !strings.Contains(e.Error(), "Policy.Buckets") {
				t.Fatalf("Buckets = %d: want an error naming Policy.Buckets, got %v", buckets, e)
			}
		}
	}
	p := DefaultPolicy()
	p.Buckets, p.Window = atomicwindow.MaxBuckets, math.MaxInt64
	if _, err := NewCore(p, 0); err != nil {
		t.Fatalf("MaxBuckets over MaxInt64: %v", err)
	}
}

// TestExtremeCPUReading: a CPU reading far below 0 scales capacity as 0 does (not at all) and one
// far above 1000 as 1000 does (down to the floor). 1000 − MinInt once overflowed and read as a
// saturated CPU.
func TestExtremeCPUReading(t *testing.T) {
	for _, c := range []struct {
		cpu  int
		want bool
	}{
		{0, true},
		{-1, true},
		{math.MinInt, true},
		{1000, false},
		{math.MaxInt, false},
	} {
		core, _ := loaded(t, 60, 30)              // 30 in flight, average ~28, capacity 50
		if _, ok := core.Allow(150*ms, 950); ok { // 950 halves the capacity: refused, and cooling
			t.Fatal("setup: admitted at 31 in flight against a capacity of 25")
		}
		// still cooling: hot, so the reading's scaling decides against 30 in flight
		if _, ok := core.Allow(200*ms, c.cpu); ok != c.want {
			t.Errorf("cooling, 30 in flight of 50: Allow at CPU %d = %v, want %v", c.cpu, ok, c.want)
		}
	}
}

// FuzzCoreBounds drives a Core built from any policy (every field fuzzed, the extremes of int64
// and float64 included) with calls at any instants and any CPU readings. Either NewCore refuses
// the policy with an error naming a field, or the core never panics, does bounded work, keeps
// Capacity at least 1, the count in flight equal to the tickets unsettled, the average finite and
// non-negative, and refuses only past MinShare of the capacity.
func FuzzCoreBounds(f *testing.F) {
	d := DefaultPolicy()
	f.Add(int64(d.Buckets), int64(d.Window), int64(d.CPU), int64(d.Latency), d.Beta, int64(d.Cool), d.MinShare, int64(0), []byte{0, 0, 0, 0, 0, 65, 130, 195, 255, 255, 255, 255})
	f.Add(int64(atomicwindow.MaxBuckets), int64(math.MaxInt64), int64(1), int64(math.MaxInt64), 0.0, int64(math.MaxInt64), 5e-324, int64(math.MinInt64), []byte{255, 254, 253, 3, 2, 1})
	f.Add(int64(1), int64(1), int64(999), int64(1), math.Nextafter(1, 0), int64(0), 1.0, int64(math.MaxInt64), []byte{9, 200, 77, 140})
	f.Add(int64(math.MaxInt64), int64(-1), int64(0), int64(0), math.NaN(), int64(-1), math.Inf(1), int64(0), []byte{1})
	f.Fuzz(func(t *testing.T, buckets, window, cpu, latency int64, beta float64, cool int64, floor float64, start int64, data []byte) {
		p := Policy{Buckets: clampInt(buckets), Window: time.Duration(window), CPU: clampInt(cpu),
			Latency: time.Duration(latency), Beta: beta, Cool: time.Duration(cool), MinShare: floor}
		c, err := NewCore(p, start)
		if err != nil {
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "Policy.") || p.Validate() == nil {
				t.Fatalf("NewCore(%+v): %v", p, err)
			}
			return
		}
		// every Allow may read every bucket: bound the work per input at about 2^20 bucket visits
		steps := min(len(data), max(1<<20/p.Buckets, 2))
		readings := [...]int{math.MinInt, -1, 0, 1, p.CPU - 1, p.CPU, 999, 1000, 1001, math.MaxInt}
		width := int64(p.Window) / int64(p.Buckets)
		now := start
		var open []Ticket
		for i := 0; i < steps; i++ {
			b := data[i]
			switch n := int64(b & 15); b >> 6 { // time moves a little, a bucket or more, back, to an end
			case 0:
				now = sat.Add(now, n)
			case 1:
				now = sat.Add(now, sat.Mul(n, width))
			case 2:
				now = sat.Add(now, -sat.Mul(n, width))
			default:
				if n&1 == 0 {
					now = math.MaxInt64 - n
				} else {
					now = math.MinInt64 + n
				}
			}
			switch op := b >> 4 & 3; {
			case op == 0 && len(open) > 0:
				open[len(open)-1].Pass(now)
				open = open[:len(open)-1]
			case op == 1 && len(open) > 0:
				open[0].Fail()
				open = open[1:]
			default:
				capacity := c.Capacity(now)
				if !(capacity >= 1) || math.IsInf(capacity, 0) {
					t.Fatalf("step %d: Capacity(%d) = %v, want finite and >= 1 (policy %+v)", i, now, capacity, p)
				}
				reading := readings[int(b)%len(readings)]
				flying := c.InFlight()
				tk, ok := c.Allow(now, reading)
				if ok {
					open = append(open, tk)
				} else if float64(flying) <= capacity*p.MinShare {
					t.Fatalf("step %d: refused at %d in flight, within MinShare of capacity %v (policy %+v)", i, flying, capacity, p)
				}
			}
			if c.InFlight() != int64(len(open)) {
				t.Fatalf("step %d: InFlight = %d with %d tickets unsettled", i, c.InFlight(), len(open))
			}
			if a := c.Average(); !(a >= 0) || math.IsInf(a, 0) {
				t.Fatalf("step %d: Average = %v (policy %+v)", i, a, p)
			}
		}
	})
}

// clampInt converts v to an int, held to the range of int on any target.
func clampInt(v int64) int { return int(max(min(v, math.MaxInt), math.MinInt)) }
