// Package sat is saturating int64 arithmetic for the fuzz tests that walk instants to the ends of
// int64. Imported by tests only.
package sat

import "math"

// Add returns a + b held to the range of int64.
func Add(a, b int64) int64 {
	switch {
	case b > 0 && a > math.MaxInt64-b:
		return math.MaxInt64
	case b < 0 && a < math.MinInt64-b:
		return math.MinInt64
	}
	return a + b
}

// Mul returns n·s for n, s >= 0, held to MaxInt64.
func Mul(n, s int64) int64 {
	if s != 0 && n > math.MaxInt64/s {
		return math.MaxInt64
	}
	return n * s
}
