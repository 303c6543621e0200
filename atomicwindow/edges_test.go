package atomicwindow

import (
	"math"
	"strings"
	"testing"
	"time"
)

// TestStripedReadsEndAtMaxInt64: a read at the last instant int64 holds, with 1 ns buckets,
// returns. Its loop used to count bucket indexes up to a head of MaxInt64, which never ends.
func TestStripedReadsEndAtMaxInt64(t *testing.T) {
	w := NewStriped(4, 4, 1, 0)
	w.Add(math.MaxInt64, 0, 5)
	w.Add(math.MaxInt64-1, 0, 2) // before the head bucket: written into it
	if got := w.Sum(math.MaxInt64, true)[0]; got != 7 {
		t.Fatalf("Sum at MaxInt64 = %d, want 7", got)
	}
	n := 0
	w.Each(math.MaxInt64, true, func(Bucket) { n++ })
	if n != 4 {
		t.Fatalf("Each at MaxInt64 visited %d buckets, want 4", n)
	}
	// an origin at MinInt64: the distance to MaxInt64 overflows int64; the index saturates
	v := NewStriped(2, 2*time.Nanosecond, 1, math.MinInt64)
	v.Add(math.MaxInt64, 0, 1)
	if got := v.Sum(math.MaxInt64, true)[0]; got != 1 {
		t.Fatalf("Sum across the whole int64 range = %d, want 1", got)
	}
}

// TestZeroValuesPanicBeforePinning: a zero Batch or Striped panics with a message, and the panic
// can be recovered: nothing was pinned. A zero Batch used to fault while pinned to its P, which
// kills the process.
func TestZeroValuesPanicBeforePinning(t *testing.T) {
	for name, f := range map[string]func(){
		"Batch.Add":       func() { var b Batch; b.Add(Bucket{1}) },
		"Striped.AddAll":  func() { var w Striped; w.AddAll(0, Bucket{1}) },
		"Striped.Add":     func() { var w Striped; w.Add(0, 0, 1) }, // no fields: ignored, no panic
		"Striped.Add2":    func() { var w Striped; w.Add2(0, 0, 1, 0, 1) },
		"Batch.Fold zero": func() { var b Batch; _ = b.Fold() },
	} {
		msg := func() (msg string) {
			defer func() {
				if r := recover(); r != nil {
					msg, _ = r.(string)
					if msg == "" {
						msg = "non-string panic"
					}
				}
			}()
			f()
			return ""
		}()
		switch name {
		case "Batch.Add", "Striped.AddAll":
			if !strings.HasPrefix(msg, "atomicwindow: ") {
				t.Errorf("%s on a zero value: panic %q, want one starting %q", name, msg, "atomicwindow: ")
			}
		default:
			if msg != "" {
				t.Errorf("%s on a zero value panicked: %q", name, msg)
			}
		}
	}
}
