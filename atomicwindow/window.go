package atomicwindow

import (
	"time"

	"github.com/wardgo/ward/internal/contract"
)

// ErrInvalid is matched, with errors.Is, by every error [NewWindow], [NewStriped] and [NewBatch]
// return (and by ward.ErrInvalid); the message names the argument.
var ErrInvalid = contract.Invalid("atomicwindow: invalid configuration")

// Window is a rolling window: size buckets that together cover the last window of time, the
// oldest dropping off as time moves on. The bucket type is the caller's; its zero value is what a
// bucket is cleared back to.
//
// Time never moves on its own: every call carries the now it happens at, in nanoseconds from any
// monotonic origin. Writing at a later now ([Window.Slot]) clears the buckets the gap swept past;
// reading at a later now ([Window.Each]) skips them without clearing, so a window nobody writes to
// still ages out and two reads at the same now agree. The head snaps to bucket boundaries
// (origin + k·width), so buckets keep their width rather than drifting with arrival times. A now
// slightly before the head bucket (a clock that stepped back, an instant read a little late) goes
// into the head bucket; a now more than the whole window before it is read as the clock having
// jumped back (see the package documentation, "Edge cases").
//
// A Window is not safe for concurrent use; [Striped] is its concurrent counterpart. The zero value
// is not usable: build one with [NewWindow].
type Window[B any] struct {
	width   int64
	start   int64 // the instant the head bucket opened
	head    int
	buckets []B
}

// MaxBuckets is the most buckets a window has: [NewWindow] and [NewStriped] reject a larger size.
// The bound keeps a window's memory and the work of a read small and every index and offset far
// from overflow, on 32-bit targets too: a Window holds MaxBuckets buckets of its type at most (1.5
// MiB for the breaker's tallies), a Striped at most MaxBuckets × (1 + fields) words per stripe (2.5
// MiB with four counters, one stripe per P), and a read visits every bucket. The presets use 40
// and 50; 65,536 buckets already resolve a minute to the millisecond.
const MaxBuckets = 1 << 16

// NewWindow returns an empty window of size buckets spanning window, its first bucket opening at
// now. size must be in [1, [MaxBuckets]] and window at least size nanoseconds (a bucket is at
// least 1 ns wide); anything else is an error matching [ErrInvalid] that names the argument. A
// bucket is window / size wide, rounded down, so the window spans Size() × Width() <= window.
func NewWindow[B any](size int, window time.Duration, now int64) (*Window[B], error) {
	width, err := shape(size, window)
	if err != nil {
		return nil, err
	}
	return &Window[B]{width: width, start: now, buckets: make([]B, size)}, nil
}

// shape checks the arguments shared by Window and Striped and returns the bucket width. The
// width times the size never exceeds window, so no arithmetic on a bucket's bounds overflows.
func shape(size int, window time.Duration) (int64, error) {
	if size < 1 || size > MaxBuckets {
		return 0, contract.Field(ErrInvalid, "size", size, "in [1, 65536] (MaxBuckets)")
	}
	if window < time.Duration(size) {
		return 0, contract.Field(ErrInvalid, "window", window, "at least size nanoseconds (a bucket at least 1ns wide)")
	}
	return int64(window) / int64(size), nil
}

// Size returns how many buckets the window has.
func (w *Window[B]) Size() int { return len(w.buckets) }

// Width returns how much time one bucket covers.
func (w *Window[B]) Width() time.Duration { return time.Duration(w.width) }

// steps returns how many whole buckets now lies past the head bucket's opening; 0 when now is
// before it (the clock went backwards). The distance is taken in uint64, where it cannot overflow
// however far apart the two instants are.
func (w *Window[B]) steps(now int64) uint64 {
	if now < w.start {
		return 0
	}
	return (uint64(now) - uint64(w.start)) / uint64(w.width)
}

// behind reports whether now lies more than the whole window before the head bucket opened: every
// bucket then lies in now's future, and the clock is read as having jumped back.
func (w *Window[B]) behind(now int64) bool {
	return now < w.start && uint64(w.start)-uint64(now) > uint64(w.width)*uint64(len(w.buckets))
}

// Slot returns the bucket now falls in, for the caller to add to. The buckets the gap since the
// last write swept past are cleared first. A now before the head bucket opened returns the head,
// unless it lies more than the whole window before it: then the clock jumped back, and the window
// restarts empty with its head bucket opening at now.
func (w *Window[B]) Slot(now int64) *B {
	if w.behind(now) {
		clear(w.buckets)
		w.head, w.start = 0, now
		return &w.buckets[0]
	}
	steps := w.steps(now)
	if steps > 0 {
		size := uint64(len(w.buckets))
		swept := min(steps, size)
		var zero B
		for i := uint64(0); i < swept; i++ {
			w.head++
			if w.head == len(w.buckets) {
				w.head = 0
			}
			w.buckets[w.head] = zero
		}
		if rest := steps - swept; rest > 0 { // every bucket is clear; only the head's place moves
			w.head = int((uint64(w.head) + rest%size) % size)
		}
		// steps·width <= now − start: the new opening lies in [start, now], a valid int64
		w.start = int64(uint64(w.start) + steps*uint64(w.width))
	}
	return &w.buckets[w.head]
}

// Each visits the buckets still inside the window at now, oldest first: the buckets written so far
// (or never written, in a young window) that have not aged out, as go-zero's RollingWindow.Reduce
// does; buckets that would open between the last write and now are not visited (they are empty,
// so no sum, maximum or minimum of non-empty buckets changes). With current false the
// bucket now falls in is left out: it has seen only part of its time, and a reading that takes the
// busiest or the fastest bucket should not compare a partial one against whole ones (go-zero's
// shedder reads its windows this way). A now more than the whole window before the head bucket
// opened visits nothing: every bucket lies in its future. Each writes nothing and visits at most
// [Window.Size] buckets, at any instant.
func (w *Window[B]) Each(now int64, current bool, f func(B)) {
	if w.behind(now) {
		return
	}
	steps := w.steps(now)
	size := uint64(len(w.buckets))
	if steps >= size {
		return
	}
	for j := size; j > 0; j-- { // bucket j−1 back from the head, its age steps + j − 1 < 2·size
		age := steps + j - 1
		if age >= size || (!current && age == 0) {
			continue
		}
		f(w.buckets[(uint64(w.head)+size-(j-1))%size])
	}
}
