package clock

import (
	"sync/atomic"
	"time"
)

// Coarse is the latest clock reading a concurrent type has made, for the paths that must not read
// the clock themselves: a breaker's or a shedder's refusal, a shedder's untimed settle. The paths
// that do read the clock store their reading with Observe, at most once per granularity, so the
// shared word is written rarely and read cheaply. The zero value reads 0.
type Coarse struct{ seen atomic.Int64 }

// Load returns the latest stored reading.
func (c *Coarse) Load() int64 { return c.seen.Load() }

// Store sets the reading unconditionally (at construction).
func (c *Coarse) Store(now int64) { c.seen.Store(now) }

// Observe stores now if it is at least gran past the stored reading.
func (c *Coarse) Observe(now, gran int64) {
	if now-c.seen.Load() >= gran {
		c.seen.Store(now)
	}
}

// Granularity is how stale a Coarse reading may grow between stores for windows of buckets width
// nanoseconds wide: a millisecond, or a quarter bucket if that is less (never under 1 ns).
func Granularity(width int64) int64 { return max(min(int64(time.Millisecond), width/4), 1) }

// Refresh is the default interval at which a cached fold of such a window is refreshed: a quarter
// bucket (never under 1 ns).
func Refresh(width int64) time.Duration { return time.Duration(max(width/4, 1)) }
