package atomicwindow

import (
	"fmt"
	"testing"
	"time"
)

const ms = int64(time.Millisecond)

// op is one step of a trace: a write of add at now, or (add == 0) a read of the window at now.
type op struct {
	now     int64
	add     int64
	current bool
	want    []int64 // buckets visited by Each, oldest first (reads only)
}

func runTrace(t *testing.T, w *Window[int64], ops []op) {
	t.Helper()
	for i, o := range ops {
		if o.add != 0 {
			*w.Slot(o.now) += o.add
			continue
		}
		var got []int64
		w.Each(o.now, o.current, func(b int64) { got = append(got, b) })
		if fmt.Sprint(got) != fmt.Sprint(o.want) {
			t.Errorf("step %d: Each(%dms, current=%v) = %v, want %v", i, o.now/ms, o.current, got, o.want)
		}
	}
}

func TestWindowTrace(t *testing.T) {
	// four buckets of 100 ms opening at 1000 ms
	w := NewWindow[int64](4, 400*time.Millisecond, 1000*ms)
	runTrace(t, w, []op{
		{now: 1000 * ms, current: true, want: []int64{0, 0, 0, 0}},
		{now: 1000 * ms, add: 1},
		{now: 1099 * ms, add: 2},                                    // same bucket, just before its end
		{now: 1099 * ms, current: true, want: []int64{0, 0, 0, 3}},  //
		{now: 1099 * ms, current: false, want: []int64{0, 0, 0}},    // the partial head left out
		{now: 1100 * ms, current: false, want: []int64{0, 0, 3}},    // exact boundary: a new bucket
		{now: 1100 * ms, current: true, want: []int64{0, 0, 3}},     // the new bucket is not there until written
		{now: 1250 * ms, add: 5},                                    // head snaps to 1200, one bucket swept
		{now: 1250 * ms, current: true, want: []int64{0, 3, 0, 5}},  //
		{now: 1450 * ms, current: true, want: []int64{0, 5}},        // a read skips the aged buckets without clearing
		{now: 1250 * ms, current: true, want: []int64{0, 3, 0, 5}},  // ... so an earlier read agrees
		{now: 1500 * ms, current: true, want: []int64{5}},           // 1200's bucket is the last one inside
		{now: 1600 * ms, current: true, want: nil},                  // everything aged out
		{now: 1600 * ms, current: false, want: nil},                 //
		{now: 900 * ms, current: true, want: []int64{0, 3, 0, 5}},   // a read from the past reads the head
		{now: 900 * ms, add: 7},                                     // a write from the past goes to the head
		{now: 1250 * ms, current: true, want: []int64{0, 3, 0, 12}}, //
		{now: 1350 * ms, add: 1},                                    //
		{now: 5000 * ms, add: 9},                                    // a gap longer than the window
		{now: 5000 * ms, current: true, want: []int64{0, 0, 0, 9}},  //
		{now: 5099 * ms, current: false, want: []int64{0, 0, 0}},    //
		{now: 5100 * ms, current: false, want: []int64{0, 0, 9}},    //
	})
}

func TestWindowRaisesSizeAndWidth(t *testing.T) {
	for _, c := range []struct {
		size   int
		window time.Duration
		wsize  int
		wwidth time.Duration
	}{
		{0, time.Second, 1, time.Second},
		{-3, time.Second, 1, time.Second},
		{10, 5, 10, 1},
		{10, 0, 10, 1},
		{10, -time.Second, 10, 1},
		{40, 10 * time.Second, 40, 250 * time.Millisecond},
	} {
		w := NewWindow[int](c.size, c.window, 0)
		s := NewStriped(c.size, c.window, 1, 0)
		if w.Size() != c.wsize || w.Width() != c.wwidth || s.Size() != c.wsize || s.Width() != c.wwidth {
			t.Errorf("NewWindow(%d, %v): size %d width %v, striped %d %v; want %d %v",
				c.size, c.window, w.Size(), w.Width(), s.Size(), s.Width(), c.wsize, c.wwidth)
		}
	}
}

func TestWindowOneNanosecondBuckets(t *testing.T) {
	w := NewWindow[int64](3, 0, 0)
	for now := int64(0); now < 10; now++ {
		*w.Slot(now) += now
	}
	var got []int64
	w.Each(9, true, func(b int64) { got = append(got, b) })
	if fmt.Sprint(got) != "[7 8 9]" {
		t.Fatalf("Each(9) = %v, want [7 8 9]", got)
	}
}

func TestWindowStructBucket(t *testing.T) {
	type tally struct{ ok, bad int }
	w := NewWindow[tally](2, 2*time.Second, 0)
	w.Slot(0).ok++
	w.Slot(time.Second.Nanoseconds()).bad++
	var sum tally
	w.Each(time.Second.Nanoseconds(), true, func(b tally) { sum.ok += b.ok; sum.bad += b.bad })
	if sum != (tally{1, 1}) {
		t.Fatalf("sum = %+v, want {1 1}", sum)
	}
}

func TestWindowAllocs(t *testing.T) {
	w := NewWindow[int64](10, time.Second, 0)
	now := int64(0)
	if a := testing.AllocsPerRun(1000, func() { now += 7 * ms; *w.Slot(now)++ }); a != 0 {
		t.Fatalf("Slot allocates %v per call", a)
	}
	var s int64
	if a := testing.AllocsPerRun(1000, func() { w.Each(now, false, func(b int64) { s += b }) }); a != 0 {
		t.Fatalf("Each allocates %v per call", a)
	}
}
