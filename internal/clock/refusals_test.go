package clock

import (
	"testing"
	"unsafe"
)

// TestCountFirstRefusalReads: a P's first refusal reads the clock whatever the reading, 0 (what
// a fresh row's mark holds) included, and a second at the same reading does not.
func TestCountFirstRefusalReads(t *testing.T) {
	for _, seen := range []int64{0, -1, 1 << 62} {
		var row [CountWords]int64
		p := unsafe.Pointer(&row)
		if !Count(p, seen) {
			t.Fatalf("first refusal at reading %d: no read", seen)
		}
		if Count(p, seen) {
			t.Fatalf("second refusal at reading %d: read", seen)
		}
	}
}
