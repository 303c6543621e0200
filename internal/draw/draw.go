// Package draw holds ward's random draws: the default source and the rule that holds a caller's
// draw into [0, 1).
package draw

import (
	"math"
	"math/rand/v2"
	"unsafe"

	"github.com/wardgo/ward/internal/stripe"
)

// below1 is the largest float64 under 1.
var below1 = math.Nextafter(1, 0)

// Clean holds a draw into [0, 1): NaN and anything under 0 count as 0, anything at or over 1 as the
// largest float64 under 1. Every package documents this as what a bad draw gets.
func Clean(r float64) float64 {
	if !(r > 0) {
		return 0
	}
	if r >= 1 {
		return below1
	}
	return r
}

// Float64 is the default source: math/rand/v2's global generator, which draws from the runtime's
// per-thread ChaCha8 state without a lock.
func Float64() float64 { return rand.Float64() }

// Func returns roll with its draws cleaned, or Float64 when roll is nil.
func Func(roll func() float64) func() float64 {
	if roll == nil {
		return Float64
	}
	return func() float64 { return Clean(roll()) }
}

// Split advances the splitmix64 generator whose state is the word at s and returns its draw, uniform
// in [0, 1) with 53 random bits, as Float64's are: the default source of a hot path that is already
// pinned to its P and keeps one such word in the P's own row, so a draw costs a few arithmetic
// instructions, no call, and touches no other memory. A zero state (a row never drawn from) is
// seeded first from the word's address and a key drawn once per process: rows start at distinct
// states, so they run splitmix64's one cycle of 2^64 states from points far apart (states that
// differ by d lie d·gamma⁻¹ mod 2^64 steps apart). The word is read and written
// with the stripe operations: the caller owns it (pinned to the row's P) or, in the builds where a
// row may be shared, two calls racing may return the same draw, each still uniform.
func Split(s *int64) float64 {
	x := uint64(stripe.Load(s))
	if x == 0 {
		x = uint64(uintptr(unsafe.Pointer(s))) ^ key
	}
	x += gamma
	stripe.Store(s, int64(x))
	return float64(int64(mix(x)>>11)) * 0x1p-53 // through int64: one conversion instruction
}

// key keeps Split's seeds from repeating from one process to the next.
var key = rand.Uint64()

// gamma is splitmix64's increment (the odd integer nearest 2^64 / φ).
const gamma = 0x9e3779b97f4a7c15

// mix is splitmix64's output function (Stafford's Mix13): a bijection of the state word.
func mix(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}
