package clock

import (
	"testing"
	"unsafe"
)

// TestCoarseAligned: a Coarse is aligned for the 64-bit atomics that read and write its word on
// every target, alone and after a byte in a struct, 32-bit targets included (GOARCH=386 go test
// runs it there, where an int64 alone is aligned to 4).
func TestCoarseAligned(t *testing.T) {
	var in struct {
		_ byte
		c Coarse
	}
	if a, off := unsafe.Alignof(in.c), unsafe.Offsetof(in.c); a < 8 || off%8 != 0 {
		t.Fatalf("Coarse aligned to %d bytes, at offset %d after a byte: want 8, a multiple of 8", a, off)
	}
}
