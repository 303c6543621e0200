package rate

import "time"

// Sliding is a sliding-window counter: at most quota events in any window-long stretch. Where a
// bucket smooths, a window counts: "a thousand a day" is a window, and a bucket would let a client
// spend the whole day's allowance in the first minute. The stamps of the events in the window are
// kept in a ring of quota slots, so the count is exact rather than the approximation a two-bucket
// scheme gives, and memory is fixed at construction.
//
// Sliding is the pure arithmetic, not safe for concurrent use; [SlidingLimiter] is the concurrent
// one. A stamp at an instant before the newest (a clock that went backwards) is stamped at the
// newest, so stamps stay ascending and none leaves the window sooner than an earlier one.
type Sliding struct {
	window int64
	ring   []int64 // stamps, ascending from head
	head   int
	n      int
}

// NewSliding returns an empty window of quota events per window. quota and window must be positive.
func NewSliding(quota int, window time.Duration) (*Sliding, error) {
	if quota < 1 {
		return nil, invalid("quota", quota, ">= 1")
	}
	if window <= 0 {
		return nil, invalid("window", window, "> 0")
	}
	return &Sliding{window: int64(window), ring: make([]int64, quota)}, nil
}

// Quota returns the most events in any window-long stretch.
func (s *Sliding) Quota() int { return len(s.ring) }

// expire drops the stamps no longer in the window at now: a stamp is in while less than the
// window has passed since it.
func (s *Sliding) expire(now int64) {
	for s.n > 0 && now-s.ring[s.head] >= s.window {
		s.head = (s.head + 1) % len(s.ring)
		s.n--
	}
}

// Take counts an event at now if the window has room, and reports whether it did.
func (s *Sliding) Take(now int64) bool {
	s.expire(now)
	if s.n == len(s.ring) {
		return false
	}
	if s.n > 0 {
		now = max(now, s.ring[(s.head+s.n-1)%len(s.ring)])
	}
	s.ring[(s.head+s.n)%len(s.ring)] = now
	s.n++
	return true
}

// Left returns how many events remain in the window at now.
func (s *Sliding) Left(now int64) int {
	live := s.n
	for i := 0; i < s.n && now-s.ring[(s.head+i)%len(s.ring)] >= s.window; i++ {
		live--
	}
	return len(s.ring) - live
}

// Next returns how long until the window has room: 0 when it has, else until its oldest event
// falls out. Never negative, never more than the window.
func (s *Sliding) Next(now int64) time.Duration {
	if s.Left(now) > 0 {
		return 0
	}
	oldest := s.ring[s.head]
	return time.Duration(min(max(oldest+s.window-now, 0), s.window))
}

// Acquire counts an event at now: the [Permit] method.
func (s *Sliding) Acquire(now int64) bool { return s.Take(now) }

// Release takes back the newest event, if there is one.
func (s *Sliding) Release(int64) {
	if s.n > 0 {
		s.n--
	}
}
