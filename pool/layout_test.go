package pool

import (
	"errors"
	"reflect"
	"testing"
	"time"
	"unsafe"

	"github.com/wardgo/ward/internal/contract"
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

// A grant, copied into every waiter's stack, is 16 bytes on every target and holds no pointer.
func TestGrantSize(t *testing.T) {
	if got := unsafe.Sizeof(grant{}); got != 16 {
		t.Errorf("grant is %d bytes, want 16", got)
	}
	for f := range reflect.TypeFor[grant]().Fields() {
		switch f.Type.Kind() {
		case reflect.Uint64, reflect.Uint32:
		default:
			t.Errorf("grant's field %s is a %s: want words with no pointer", f.Name, f.Type)
		}
	}
}

// A grant says what Acquire answers: a refusal carries ErrRefused, with the ward's wait when it
// gave one, or ErrClosed; a slot is no refusal.
func TestGrantErr(t *testing.T) {
	if err := refusal(0).err(); err != ErrRefused {
		t.Errorf("refusal(0) = %v, want ErrRefused", err)
	}
	g := refusal(3 * time.Second)
	if d, ok := contract.RetryAfter(g.err()); !ok || d != 3*time.Second || !errors.Is(g.err(), ErrRefused) {
		t.Errorf("refusal(3s) = %v (wait %v, %v), want ErrRefused carrying 3s", g.err(), d, ok)
	}
	if err := (grant{kind: grantClosed}).err(); err != ErrClosed {
		t.Errorf("a closed grant = %v, want ErrClosed", err)
	}
	for _, g := range []grant{refusal(0), refusal(time.Second), {kind: grantClosed}, {kind: grantLeft}} {
		if !g.refused() {
			t.Errorf("%+v: not a refusal", g)
		}
	}
	for _, g := range []grant{{w: 4, i: 1}, {i: 2, kind: grantMake}} {
		if g.refused() {
			t.Errorf("%+v: a refusal", g)
		}
	}
}
