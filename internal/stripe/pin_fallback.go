//go:build !gc || ward_nolinkname

package stripe

import "math/rand/v2"

// Pinned reports whether Pin reads the real P index (true) or falls back to a random row.
const Pinned = false

// pin returns a random row index in [0, n): without procPin there is no cheap way to learn the
// current P. Two goroutines may then write one row at once, which is why Load, Store and Add are
// atomic in this build.
func pin(n int) int { return int(uint64(rand.Uint32()) * uint64(n) >> 32) }

// PinRow picks a row for r at random: what [Rows.Row] takes. Call Unpin after, whatever Row
// answers.
func PinRow(r *Rows) int { return pin(r.n) }

// Unpin undoes the pin a [Table] took.
func Unpin() {}
