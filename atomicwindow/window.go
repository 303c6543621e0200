package atomicwindow

import "time"

// Window is a rolling window: size buckets that together cover the last window of time, the
// oldest dropping off as time moves on. The bucket type is the caller's; its zero value is what a
// bucket is cleared back to.
//
// Time never moves on its own: every call carries the now it happens at, in nanoseconds from any
// monotonic origin. Writing at a later now ([Window.Slot]) clears the buckets the gap swept past;
// reading at a later now ([Window.Each]) skips them without clearing, so a window nobody writes to
// still ages out and two reads at the same now agree. The head snaps to bucket boundaries
// (origin + k·width), so buckets keep their width rather than drifting with arrival times.
//
// A Window is not safe for concurrent use; [Striped] is its concurrent counterpart. The zero value
// is not usable: build one with [NewWindow].
type Window[B any] struct {
	width   int64
	start   int64 // the instant the head bucket opened
	head    int
	buckets []B
}

// NewWindow returns an empty window of size buckets spanning window, its first bucket opening at
// now. A size below one is raised to one, and so is a bucket narrower than a nanosecond.
func NewWindow[B any](size int, window time.Duration, now int64) *Window[B] {
	size, width := shape(size, window)
	return &Window[B]{width: width, start: now, buckets: make([]B, size)}
}

// shape applies the raising rules shared by Window and Striped.
func shape(size int, window time.Duration) (int, int64) {
	if size < 1 {
		size = 1
	}
	width := int64(window) / int64(size)
	if width < 1 {
		width = 1
	}
	return size, width
}

// Size returns how many buckets the window has.
func (w *Window[B]) Size() int { return len(w.buckets) }

// Width returns how much time one bucket covers.
func (w *Window[B]) Width() time.Duration { return time.Duration(w.width) }

// steps returns how many whole buckets now lies past the head bucket's opening; 0 when now is
// before it (the clock went backwards).
func (w *Window[B]) steps(now int64) int64 {
	if now < w.start {
		return 0
	}
	return (now - w.start) / w.width
}

// Slot returns the bucket now falls in, for the caller to add to. The buckets the gap since the
// last write swept past are cleared first. A now before the head bucket opened returns the head.
func (w *Window[B]) Slot(now int64) *B {
	steps := w.steps(now)
	if steps > 0 {
		size := int64(len(w.buckets))
		clear := min(steps, size)
		var zero B
		for i := int64(0); i < clear; i++ {
			w.head++
			if w.head == len(w.buckets) {
				w.head = 0
			}
			w.buckets[w.head] = zero
		}
		if rest := steps - clear; rest > 0 { // every bucket is clear; only the head's place moves
			w.head = int((int64(w.head) + rest%size) % size)
		}
		w.start += steps * w.width
	}
	return &w.buckets[w.head]
}

// Each visits the buckets still inside the window at now, oldest first: the buckets written so far
// (or never written, in a young window) that have not aged out, as go-zero's RollingWindow.Reduce
// does; buckets that would open between the last write and now are not visited (they are empty,
// so no sum, maximum or minimum of non-empty buckets changes). With current false the
// bucket now falls in is left out: it has seen only part of its time, and a reading that takes the
// busiest or the fastest bucket should not compare a partial one against whole ones (go-zero's
// shedder reads its windows this way). Each writes nothing.
func (w *Window[B]) Each(now int64, current bool, f func(B)) {
	steps := w.steps(now)
	size := int64(len(w.buckets))
	if steps >= size {
		return
	}
	for j := size - 1; j >= 0; j-- {
		age := steps + j
		if age >= size || (!current && age == 0) {
			continue
		}
		f(w.buckets[(int64(w.head)-j+size)%size])
	}
}
