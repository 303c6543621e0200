package stripe

import (
	"math/bits"
	"runtime"
)

// Count is the number of stripes to give a new concurrent type: GOMAXPROCS at the time of the
// call, rounded up to a power of two so a P index maps to a stripe with a mask. If GOMAXPROCS is
// raised later, Ps share stripes (index & mask), which can lose samples but never corrupts one.
func Count() int {
	n := runtime.GOMAXPROCS(0)
	if n < 1 {
		n = 1
	}
	return 1 << bits.Len(uint(n-1))
}

// Words is the number of int64 words in one cache line.
const Words = CacheLine / 8

// RoundUp returns n int64 words rounded up to whole cache lines.
func RoundUp(n int) int { return (n + Words - 1) / Words * Words }

// NoCopy, embedded as the first field of a concurrent type, lets go vet's copylocks check catch a
// copy of it by value.
type NoCopy struct{}

// Lock is a no-op; it makes NoCopy a Locker for go vet.
func (*NoCopy) Lock() {}

// Unlock is a no-op; it makes NoCopy a Locker for go vet.
func (*NoCopy) Unlock() {}
