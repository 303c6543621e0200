// Package draw holds ward's random draws: the default source and the rule that holds a caller's
// draw into [0, 1).
package draw

import (
	"math"
	"math/rand/v2"
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
