package rate

import (
	"time"

	"github.com/wardgo/ward/internal/contract"
)

// MaxSlidingQuota is the largest quota a [Sliding] takes. A window keeps one stamp (8 bytes) per
// event of its quota, allocated when it is made, so one of MaxSlidingQuota holds 8 MiB. A
// [Bucket] or a [Period] keeps nothing per event, whatever its quota.
const MaxSlidingQuota = 1 << 20

// Sliding is a sliding-window counter: at most quota events in any window-long stretch of the
// instants they were taken at. Where a bucket smooths, a window counts: "a thousand a day" is a
// window, and a bucket would let a client spend the whole day's allowance in the first minute.
// The newest quota stamps are kept in a ring of quota slots, in ascending order, so the count is
// exact rather than the approximation a two-bucket scheme gives, and memory is fixed at
// construction.
//
// The promise holds whatever order the instants come in. An instant earlier than the newest
// event (a clock that went backwards, or a caller whose clock reading went stale before its turn
// came) is judged on the stamps the ring holds: it is admitted, and stamped at its own instant,
// when fewer than quota stamps are later than a window before it and no stamp the ring has let
// go of is that recent; otherwise it is refused, even if a later instant would have had room.
// An instant at or after the newest event is judged exactly as in order. An instant more than
// [MaxSkew] before the newest event is read as the clock having jumped back: the window is pulled
// back to that instant, full there (every slot stamped with it), so it neither refuses for decades
// nor forgets the events it holds.
//
// Sliding is the pure arithmetic, not safe for concurrent use; [SlidingLimiter] is the concurrent
// one.
type Sliding struct {
	window int64
	ring   []int64 // the newest stamps, ascending from head
	head   int
	n      int
	gone   int64 // the newest stamp let go of to make room in a full ring; valid when let is set
	let    bool
}

// NewSliding returns an empty window of quota events per window. quota must lie in [1,
// MaxSlidingQuota] and window must be positive.
func NewSliding(quota int, window time.Duration) (*Sliding, error) {
	if quota < 1 || quota > MaxSlidingQuota {
		return nil, contract.Field(ErrInvalid, "quota", quota, "in [1, 2^20]")
	}
	if window <= 0 {
		return nil, contract.Field(ErrInvalid, "window", window, "> 0")
	}
	return &Sliding{window: int64(window), ring: make([]int64, quota)}, nil
}

// Quota returns the most events in any window-long stretch.
func (s *Sliding) Quota() int { return len(s.ring) }

// slot returns the ring index of the i-th stamp from the oldest.
func (s *Sliding) slot(i int) int {
	j := s.head + i
	if j >= len(s.ring) {
		j -= len(s.ring)
	}
	return j
}

// out reports whether stamp has left the window at now: at least the window has passed since it.
func (s *Sliding) out(stamp, now int64) bool {
	return stamp <= now && since(now, stamp) >= uint64(s.window)
}

// room reports whether an event at now keeps the promise. Every window-long stretch holding now
// lies within a window either side of it, so it does when fewer than quota stamps are later than
// a window before now, counting those after now and those let go of. The stamps are ascending and
// the ring holds the newest, so that is: no stamp let go of is that recent, and either the ring
// has a free slot or its oldest stamp is out.
func (s *Sliding) room(now int64) bool {
	if s.let && !s.out(s.gone, now) {
		return false
	}
	return s.n < len(s.ring) || s.out(s.ring[s.head], now)
}

// skewed reports whether the newest event lies more than [MaxSkew] after now.
func (s *Sliding) skewed(now int64) bool {
	switch {
	case s.n > 0:
		return skewed(s.ring[s.slot(s.n-1)], now)
	case s.let:
		return skewed(s.gone, now)
	}
	return false
}

// pull pulls the window back to now when its newest event lies more than [MaxSkew] after now:
// full at now.
func (s *Sliding) pull(now int64) {
	if !s.skewed(now) {
		return
	}
	for i := range s.ring {
		s.ring[i] = now
	}
	s.head, s.n, s.let = 0, len(s.ring), false
}

// TakeAt counts n events at now if the window has room for them all (a negative n costs nothing),
// and reports whether it did. If not, wait is how long until it would have: [Forever] for more
// than the quota.
func (s *Sliding) TakeAt(now int64, n int) (ok bool, wait time.Duration) {
	if n == 1 && s.room(now) && !s.skewed(now) { // the hot path: one event with room
		s.insert(now)
		return true, 0
	}
	n = cost(n)
	if n > len(s.ring) {
		return false, Forever
	}
	if n == 0 {
		return true, 0
	}
	s.pull(now)
	if n == 1 && !s.room(now) || n > 1 && s.left(now) < n {
		return false, s.wait(now, n)
	}
	for range n {
		s.insert(now)
	}
	return true, 0
}

// insert stamps one event at now, which room or left found space for.
func (s *Sliding) insert(now int64) {
	if s.n == len(s.ring) { // full: let go of the oldest, which is out of the window
		s.gone, s.let = s.ring[s.head], true
		s.head = s.slot(1)
		s.n--
	}
	i := s.n // insert after every stamp at or before now: at the end when in order
	for i > 0 && s.ring[s.slot(i-1)] > now {
		s.ring[s.slot(i)] = s.ring[s.slot(i-1)]
		i--
	}
	s.ring[s.slot(i)] = now
	s.n++
}

// Left returns how many events at now would be admitted one after another: the quota less the
// stamps later than a window before now, or 0 when a stamp let go of is that recent (or when the
// window would be pulled back to now, full).
func (s *Sliding) Left(now int64) int {
	if s.skewed(now) {
		return 0
	}
	return s.left(now)
}

func (s *Sliding) left(now int64) int {
	if s.let && !s.out(s.gone, now) {
		return 0
	}
	lo, hi := 0, s.n // the stamps out of the window are the oldest: find the first one in it
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if s.out(s.ring[s.slot(mid)], now) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return len(s.ring) - (s.n - lo)
}

// until returns how long from now until stamp is out of the window, saturating at [Forever].
func (s *Sliding) until(stamp, now int64) time.Duration {
	if stamp <= now {
		if d := since(now, stamp); d < uint64(s.window) {
			return time.Duration(uint64(s.window) - d)
		}
		return 0
	}
	return time.Duration(min(since(stamp, now)+uint64(s.window), uint64(Forever)))
}

// Next returns how long until the window has room for n events at now, without counting them: 0
// when it has, else until the stamps that block them are out ([Forever] for more than the quota).
// Never negative, and never more than the window for an instant at or after the newest event; for
// an earlier instant it can be longer, up to [Forever].
func (s *Sliding) Next(now int64, n int) time.Duration {
	n = cost(n)
	switch {
	case n > len(s.ring):
		return Forever
	case n == 0:
		return 0
	case s.skewed(now):
		return time.Duration(s.window) // pulled back to now, full
	case s.left(now) >= n:
		return 0
	}
	return s.wait(now, n)
}

// wait returns how long from now until the stamps that keep n events out of the window are out:
// the one let go of, and enough of the oldest to leave room for n.
func (s *Sliding) wait(now int64, n int) time.Duration {
	var w time.Duration
	if s.let {
		w = s.until(s.gone, now)
	}
	if k := s.n - len(s.ring) + n - 1; k >= 0 {
		w = max(w, s.until(s.ring[s.slot(k)], now))
	}
	return w
}

// Acquire counts an event at now: the [Permit] method.
func (s *Sliding) Acquire(now int64) bool {
	ok, _ := s.TakeAt(now, 1)
	return ok
}

// Release takes back the newest event at or before now, if there is one: the one a [Chained]
// refusal undoes.
func (s *Sliding) Release(now int64) {
	i := s.n - 1
	for i >= 0 && s.ring[s.slot(i)] > now {
		i--
	}
	if i < 0 {
		return
	}
	for ; i < s.n-1; i++ {
		s.ring[s.slot(i)] = s.ring[s.slot(i+1)]
	}
	s.n--
}
