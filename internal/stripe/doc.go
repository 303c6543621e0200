// Package stripe holds the few pieces every concurrent type in ward shares: the index of the
// current P (a processor in the Go scheduler's sense), the number of stripes to make, the size of
// a cache line to pad them to, and the load/store/add helpers a stripe is written through.
//
// # Why go:linkname
//
// A stripe belongs to a P: the goroutine running on P n writes stripe n, so two cores never write
// the same cache line and a plain ++ (0.2-0.3 ns) replaces an atomic add (6 ns uncontended, 13-17 ns
// shared between two cores). The only cheap way to learn the current P is runtime.procPin, which
// sync.Pool uses; it is reachable through go:linkname and the Go linker keeps it reachable on
// purpose (go.dev/issue/67401 lists it among the symbols "widely used" packages pull). This is the
// only package in ward that uses go:linkname. Build with -tags ward_nolinkname (or with a compiler
// other than gc) to use the fallback, which picks a row per call from a cheap random source and
// writes it atomically: exact, and about 15x slower at two cores because rows then bounce between
// cores.
//
// # GOMAXPROCS changing at run time
//
// Go follows a container's CPU limit by changing GOMAXPROCS while the program runs. Every per-P
// structure in ward is a [Table], which grows when a P past its last row pins it and keeps the rows
// it had, so no two Ps ever share a row and no write is lost (see [Table]).
//
// Nothing that can panic may run between Pin and Unpin: a pinned goroutine cannot be preempted,
// and a panic while pinned leaves its P pinned.
//
// # Plain writes and the race detector
//
// In a normal build on a 64-bit target Load, Store and Add are plain memory operations:
// word-sized, so they cannot tear, but they are races by the detector's definition. In a -race
// build, on 32-bit targets (where a 64-bit load can tear) and in the fallback build (where two
// goroutines can share a row) the same helpers use sync/atomic ([Plain] says which). Add is a
// read-modify-write without atomicity in the plain build; it is only correct when one writer owns
// the word, which is what a pinned row gives.
package stripe
