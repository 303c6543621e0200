package pool

import (
	"testing"
	"unsafe"

	"github.com/wardgo/ward/internal/stripe"
)

// The idle stack's top, the gate and the coarse clock each sit on cache lines of their own, with
// a line before them, on every GOARCH (GOARCH=arm runs this too).
func TestHotLayout(t *testing.T) {
	var h hot
	if got := unsafe.Offsetof(h.top); got != stripe.CacheLine {
		t.Errorf("top at offset %d, want %d", got, stripe.CacheLine)
	}
	if got := unsafe.Offsetof(h.gate); got != 2*stripe.CacheLine {
		t.Errorf("gate at offset %d, want %d", got, 2*stripe.CacheLine)
	}
	if got := unsafe.Offsetof(h.seen); got != 3*stripe.CacheLine {
		t.Errorf("seen at offset %d, want %d", got, 3*stripe.CacheLine)
	}
	if got := unsafe.Sizeof(h); got != 4*stripe.CacheLine {
		t.Errorf("hot is %d bytes, want %d", got, 4*stripe.CacheLine)
	}
	if off := unsafe.Offsetof(h.top) % 8; off != 0 {
		t.Errorf("top misaligned for 64-bit atomics: offset %% 8 = %d", off)
	}
}

// A grant, copied into every waiter's stack, is four words on 64-bit targets.
func TestGrantSize(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("32-bit target")
	}
	if got := unsafe.Sizeof(grant{}); got != 32 {
		t.Errorf("grant is %d bytes, want 32", got)
	}
}
