// Package clock is ward's monotonic clock: int64 nanoseconds since a process-wide epoch.
//
// It reads time.Since(epoch), which costs what runtime.nanotime through go:linkname costs and less
// than a whole time.Now(), and keeps working under testing/synctest, where the bubble's fake
// clock moves it and runtime.nanotime would not.
package clock

import "time"

var epoch = time.Now()

// Now returns nanoseconds since the epoch, from the monotonic clock. It never goes backwards
// outside a synctest bubble; inside one it follows the bubble's clock.
func Now() int64 { return int64(time.Since(epoch)) }
