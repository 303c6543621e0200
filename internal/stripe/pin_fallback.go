//go:build !gc || ward_nolinkname

package stripe

import "math/rand/v2"

// Pinned reports whether Pin reads the real P index (true) or falls back to a random stripe.
const Pinned = false

// Pin returns a random stripe index: without procPin there is no cheap way to learn the current
// P. Two goroutines may then write one stripe at once, which can lose a sample, never invent one.
func Pin() int { return int(rand.Uint32() & 0x7fffffff) }

// Unpin undoes Pin.
func Unpin() {}
