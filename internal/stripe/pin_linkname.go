//go:build gc && !ward_nolinkname

package stripe

import _ "unsafe" // for go:linkname

//go:linkname procPin runtime.procPin
func procPin() int

// Pinned reports whether Pin reads the real P index (true) or falls back to a random row.
const Pinned = true

// pin pins the calling goroutine to its P and returns the P's index, which may be n or more when
// GOMAXPROCS grew after the rows were made (the [Table] then grows). Call Unpin as soon as the row
// has been written; nothing that can panic may run in between.
//
//go:nosplit
func pin(int) int { return procPin() }

// PinRow pins the calling goroutine to its P and returns the P's index for r: what [Rows.Row]
// takes. Call Unpin after, whatever Row answers. The runtime's call itself, not a call of pin: a
// call inlined through two levels leaves a no-op in its caller.
//
//go:nosplit
func PinRow(*Rows) int { return procPin() }

// Unpin undoes the pin a [Table] took. It is the runtime's call itself, declared here, not a
// function that calls it: a call inlined leaves a no-op in its caller to mark where it was, and
// every pinned section unpins.
//
//go:linkname Unpin runtime.procUnpin
func Unpin()
