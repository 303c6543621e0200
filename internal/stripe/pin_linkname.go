//go:build gc && !ward_nolinkname

package stripe

import _ "unsafe" // for go:linkname

//go:linkname procPin runtime.procPin
func procPin() int

//go:linkname procUnpin runtime.procUnpin
func procUnpin()

// Pinned reports whether Pin reads the real P index (true) or falls back to a random stripe.
const Pinned = true

// Pin pins the calling goroutine to its P and returns the P's index. Call Unpin as soon as the
// stripe has been written; nothing that can panic may run in between.
//
//go:nosplit
func Pin() int { return procPin() }

// Unpin undoes Pin.
//
//go:nosplit
func Unpin() { procUnpin() }
