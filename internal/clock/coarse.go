package clock

import (
	"sync/atomic"
	"time"
)

// Coarse is the latest clock reading a concurrent type has made, for the paths that must not read
// the clock themselves: a breaker's or a shedder's refusal, a shedder's untimed settle. The paths
// that do read the clock store their reading with Observe, at most once per granularity, so the
// shared word is written rarely and read cheaply. The zero value reads 0.
type Coarse struct {
	_    [0]atomic.Int64 // aligns seen for 64-bit atomics on 32-bit targets
	seen int64           // read and written only through sync/atomic's functions
}

// Load returns the latest stored reading. It reads the word with sync/atomic's function, which
// the compiler turns into one instruction, rather than atomic.Int64's method, whose inlining
// would leave a no-op mark in every caller.
func (c *Coarse) Load() int64 { return atomic.LoadInt64(&c.seen) }

// Store sets the reading unconditionally (at construction).
func (c *Coarse) Store(now int64) { atomic.StoreInt64(&c.seen, now) }

// Observe stores now if it is at least gran past the stored reading.
func (c *Coarse) Observe(now, gran int64) {
	if now-atomic.LoadInt64(&c.seen) >= gran {
		atomic.StoreInt64(&c.seen, now)
	}
}

// Granularity is how stale a Coarse reading may grow between stores for windows of buckets width
// nanoseconds wide: a millisecond, or a quarter bucket if that is less (never under 1 ns).
func Granularity(width int64) int64 { return max(min(int64(time.Millisecond), width/4), 1) }

// Refresh is the default interval at which a cached fold of such a window is refreshed: a quarter
// bucket (never under 1 ns).
func Refresh(width int64) time.Duration { return time.Duration(max(width/4, 1)) }
