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
// other than gc) to use the fallback, which picks a stripe per call from a cheap random source:
// correct, and about 15x slower at two cores because stripes then bounce between cores.
//
// Nothing that can panic may run between Pin and Unpin: a pinned goroutine cannot be preempted,
// and a panic while pinned leaves its P pinned.
//
// # Plain writes and the race detector
//
// In a normal build Load, Store and Add are plain memory operations: word-sized, so they cannot
// tear on 64-bit targets, but they are races by the detector's definition. In a -race build the
// same helpers use sync/atomic, so `go test -race` stays clean, as Go's own sync.Pool does. Add is
// a read-modify-write without atomicity in the normal build; it is only correct when one writer
// owns the word, which is what a pinned stripe gives.
package stripe
