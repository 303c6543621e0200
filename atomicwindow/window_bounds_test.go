package atomicwindow

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// TestWindowHugeSizeIsBounded: a size of any magnitude builds a window of at most MaxBuckets
// buckets whose arithmetic holds, pure and striped alike. Sizes of 2^40 and more once asked for
// terabytes, and above 2^62 the striped row width overflowed to 0.
func TestWindowHugeSizeIsBounded(t *testing.T) {
	for _, c := range []struct {
		size   int64
		window time.Duration
	}{
		{MaxBuckets, time.Duration(MaxBuckets) * time.Millisecond},
		{MaxBuckets + 1, time.Minute},
		{1 << 40, time.Minute},
		{1<<62 + 1, math.MaxInt64},
		{math.MaxInt, math.MaxInt64},
		{math.MaxInt, 1},
	} {
		if int64(int(c.size)) != c.size {
			continue // past int on a 32-bit target
		}
		w := NewWindow[int64](int(c.size), c.window, 0)
		s := NewStriped(int(c.size), c.window, MaxFields, 0)
		wantWidth := max(time.Duration(int64(c.window)/MaxBuckets), 1)
		if w.Size() != MaxBuckets || s.Size() != MaxBuckets || w.Width() != wantWidth || s.Width() != wantWidth {
			t.Fatalf("NewWindow(%d, %v): size %d width %v, striped %d %v; want %d %v",
				c.size, c.window, w.Size(), w.Width(), s.Size(), s.Width(), MaxBuckets, wantWidth)
		}
		*w.Slot(int64(w.Width()) * 3) += 4
		if got := sumWindow(w, int64(w.Width())*3, true); got != 4 {
			t.Fatalf("size %d: sum after one write = %d, want 4", c.size, got)
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
	w := NewWindow[int64](4, 4, math.MinInt64)
	runTrace(t, w, []op{
		{now: math.MinInt64, add: 5},
		{now: math.MinInt64, current: true, want: []int64{0, 0, 0, 5}},
		{now: math.MaxInt64, current: true, want: nil}, // everything aged out
		{now: math.MaxInt64, current: false, want: nil},
		{now: math.MaxInt64, add: 7},
		{now: math.MaxInt64, current: true, want: []int64{0, 0, 0, 7}},
		{now: math.MaxInt64, current: false, want: []int64{0, 0, 0}},
		{now: math.MinInt64, current: true, want: []int64{0, 0, 0, 7}}, // the past reads the head
		{now: math.MaxInt64 - 3, add: 1},                               // a write from the past goes to the head
		{now: math.MaxInt64, current: true, want: []int64{0, 0, 0, 8}},
	})
	visited := 0
	w.Each(math.MaxInt64, true, func(int64) { visited++ })
	if visited != 4 {
		t.Fatalf("Each at MaxInt64 visited %d buckets, want 4", visited)
	}
}

// TestWindowExtremeWidths: the widest bucket (a window of MaxInt64 in one bucket) and the
// narrowest, at instants at both ends of int64.
func TestWindowExtremeWidths(t *testing.T) {
	w := NewWindow[int64](1, math.MaxInt64, math.MinInt64)
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
		w := NewWindow[int64](sz, time.Duration(window), start)
		if w.Size() < 1 || w.Size() > MaxBuckets || w.Width() < 1 {
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
		for i := 0; i+1 < len(data) && i < 256; i += 2 {
			now := at(data[i])
			var idx uint64 // the bucket now falls in; the head if now is before it
			if now >= start {
				idx = max((uint64(now)-uint64(start))/width, head)
			} else {
				idx = head
			}
			if data[i+1]&1 == 1 {
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
	w := NewWindow[int64](math.MaxInt, time.Minute, 0)
	fmt.Println(w.Size(), w.Width())
	// Output: 65536 915.527µs
}
