package rate

import "time"

// Take is [Bucket.TakeAt].
//
// Deprecated: use TakeAt, the name the cores and the limiters share ([Taker]).
func (b *Bucket) Take(now int64, n int) (ok bool, wait time.Duration) { return b.TakeAt(now, n) }

// Take is [Sliding.TakeAt].
//
// Deprecated: use TakeAt, the name the cores and the limiters share ([Taker]).
func (s *Sliding) Take(now int64, n int) (ok bool, wait time.Duration) { return s.TakeAt(now, n) }

// Take is [Period.TakeAt].
//
// Deprecated: use TakeAt, the name the cores and the limiters share ([Taker]).
func (p *Period) Take(now int64, n int) (ok bool, wait time.Duration) { return p.TakeAt(now, n) }
