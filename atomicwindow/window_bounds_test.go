package atomicwindow

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// TestWindowLargestSize: the largest window NewWindow and NewStriped accept, MaxBuckets buckets
// over the longest window, keeps its arithmetic: one write reads back.
func TestWindowLargestSize(t *testing.T) {
	for _, window := range []time.Duration{MaxBuckets, time.Duration(MaxBuckets) * time.Millisecond, time.Minute, math.MaxInt64} {
		w := mustWindow[int64](t, MaxBuckets, window, 0)
		s := mustStriped(t, MaxBuckets, window, MaxFields, 0)
		wantWidth := time.Duration(int64(window) / MaxBuckets)
		if w.Size() != MaxBuckets || s.Size() != MaxBuckets || w.Width() != wantWidth || s.Width() != wantWidth {
			t.Fatalf("NewWindow(MaxBuckets, %v): size %d width %v, striped %d %v; want %d %v",
				window, w.Size(), w.Width(), s.Size(), s.Width(), MaxBuckets, wantWidth)
		}
		at := int64(w.Width()) * 3
		*w.Slot(at) += 4
		s.Add(at, 0, 4)
		if got, sgot := sumWindow(w, at, true), s.Sum(at, true)[0]; got != 4 || sgot != 4 {
			t.Fatalf("window %v: sum after one write = %d, striped %d, want 4", window, got, sgot)
		}
	}
}

func sumWindow(w *Window[int64], now int64, current bool) (sum int64) {
	w.Each(now, current, func(b int64) { sum += b })
	return sum
}

// TestWindowInstantsFarApart: a window whose buckets are 1 ns wide stays exact when its instants
// span the whole of int64, from MinInt64 to MaxInt64: the distance between them overflowed int64
// and the window read stale buckets as current.
func TestWindowInstantsFarApart(t *testing.T) {
	w := mustWindow[int64](t, 4, 4, math.MinInt64)
	runTrace(t, w, []op{
		{now: math.MinInt64, add: 5},
		{now: math.MinInt64, current: true, want: []int64{0, 0, 0, 5}},
		{now: math.MaxInt64, current: true, want: nil}, // everything aged out
		{now: math.MaxInt64, current: false, want: nil},
		{now: math.MaxInt64, add: 7},
		{now: math.MaxInt64, current: true, want: []int64{0, 0, 0, 7}},
		{now: math.MaxInt64, current: false, want: []int64{0, 0, 0}},
		{now: math.MinInt64, current: true, want: nil}, // the far past: every bucket lies in its future
		{now: math.MaxInt64 - 3, add: 1},               // a write from the near past goes to the head
		{now: math.MaxInt64, current: true, want: []int64{0, 0, 0, 8}},
	})
	visited := 0
	w.Each(math.MaxInt64, true, func(int64) { visited++ })
	if visited != 4 {
		t.Fatalf("Each at MaxInt64 visited %d buckets, want 4", visited)
	}
	runTrace(t, w, []op{
		{now: math.MinInt64, add: 2}, // the clock jumped back: the window restarts there
		{now: math.MinInt64, current: true, want: []int64{0, 0, 0, 2}},
		{now: math.MinInt64 + 2, add: 3},
		{now: math.MinInt64 + 2, current: true, want: []int64{0, 2, 0, 3}},
		{now: math.MaxInt64, current: true, want: nil},
	})
}

// TestWindowExtremeWidths: the widest bucket (a window of MaxInt64 in one bucket) and the
// narrowest, at instants at both ends of int64.
func TestWindowExtremeWidths(t *testing.T) {
	w := mustWindow[int64](t, 1, math.MaxInt64, math.MinInt64)
	*w.Slot(-2)++ // MaxInt64 − 2 ns after the opening: still the first bucket
	if got := sumWindow(w, -2, true); got != 1 {
		t.Fatalf("one bucket of MaxInt64: sum = %d, want 1", got)
	}
	*w.Slot(math.MaxInt64) += 2 // the third bucket, opening at MinInt64 + 2·MaxInt64 = MaxInt64 − 1
	if got := sumWindow(w, math.MaxInt64, true); got != 2 {
		t.Fatalf("one bucket of MaxInt64 at MaxInt64: sum = %d, want 2", got)
	}
}

// FuzzWindowBounds drives a Window of any shape (size, window; the extremes of int64 included)
// with writes and reads at any instants. Each must visit at most Size buckets, never panic, and
// agree with a model that keeps every write with the bucket index it fell in.
func FuzzWindowBounds(f *testing.F) {
	f.Add(int64(4), int64(400), int64(0), []byte{0, 1, 1, 2, 50, 3})
	f.Add(int64(math.MaxInt64), int64(math.MaxInt64), int64(math.MinInt64), []byte{255, 255, 0, 0})
	f.Add(int64(1<<62+1), int64(-1), int64(math.MaxInt64), []byte{7, 1, 9})
	f.Add(int64(3), int64(0), int64(math.MinInt64), []byte{128, 0, 127, 255})
	f.Fuzz(func(t *testing.T, size, window, start int64, data []byte) {
		sz := int(max(min(size, math.MaxInt), math.MinInt)) // an int on any target
		w, err := NewWindow[int64](sz, time.Duration(window), start)
		if valid := size >= 1 && size <= MaxBuckets && window >= size; (err == nil) != valid {
			t.Fatalf("NewWindow(%d, %d): error %v, want an error %v", size, window, err, !valid)
		}
		if err != nil {
			return
		}
		if w.Size() != sz || w.Width() < 1 || int64(w.Width())*size > window {
			t.Fatalf("NewWindow(%d, %d): size %d width %v", size, window, w.Size(), w.Width())
		}
		width := uint64(w.Width())
		n := uint64(w.Size())
		// model: the index of the head bucket (counted from start) and every write it holds
		var head uint64
		type write struct{ idx uint64 }
		var writes []write
		at := func(b byte) int64 { // instants spread over int64, clustered near start and its ends
			switch b % 4 {
			case 0:
				return start + int64(b>>2)
			case 1:
				return start + int64(b>>2)*int64(w.Width())
			case 2:
				return math.MaxInt64 - int64(b>>2)
			default:
				return math.MinInt64 + int64(b>>2)
			}
		}
		origin := start // the model's bucket 0; a jump back restarts it
		for i := 0; i+1 < len(data) && i < 256; i += 2 {
			now := at(data[i])
			opening := int64(uint64(origin) + head*width)
			behind := now < opening && uint64(opening)-uint64(now) > width*n // the clock jumped back
			var idx uint64                                                   // the bucket now falls in; the head if now is before it
			if now >= origin {
				idx = max((uint64(now)-uint64(origin))/width, head)
			} else {
				idx = head
			}
			if data[i+1]&1 == 1 {
				if behind {
					origin, head, idx, writes = now, 0, 0, nil
				}
				*w.Slot(now)++
				head = idx
				writes = append(writes, write{idx})
				continue
			}
			current := data[i+1]&2 == 2
			visited, sum := 0, int64(0)
			w.Each(now, current, func(b int64) { visited++; sum += b })
			if visited > w.Size() {
				t.Fatalf("step %d: Each(%d) visited %d buckets of %d", i, now, visited, w.Size())
			}
			var want int64
			for _, wr := range writes {
				if behind {
					break
				}
				if idx-wr.idx < n && (current || wr.idx != idx) {
					want++
				}
			}
			if sum != want {
				t.Fatalf("step %d: Each(%d, current=%v) sums %d, want %d (shape %d×%v from %d)",
					i, now, current, sum, want, w.Size(), w.Width(), start)
			}
		}
	})
}

func ExampleNewWindow_bounds() {
	_, err := NewWindow[int64](math.MaxInt32, time.Minute, 0)
	fmt.Println(err)
	w, _ := NewWindow[int64](MaxBuckets, time.Minute, 0)
	fmt.Println(w.Size(), w.Width())
	// Output:
	// atomicwindow: invalid configuration: size = 2147483647, want in [1, 65536] (MaxBuckets)
	// 65536 915.527µs
}
