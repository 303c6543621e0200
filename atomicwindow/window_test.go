package atomicwindow

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wardgo/ward"
)

const ms = int64(time.Millisecond)

// op is one step of a trace: a write of add at now, or (add == 0) a read of the window at now.
type op struct {
	now     int64
	add     int64
	current bool
	want    []int64 // buckets visited by Each, oldest first (reads only)
}

// mustWindow and mustStriped build a window the test knows to be valid.
func mustWindow[B any](t testing.TB, size int, window time.Duration, now int64) *Window[B] {
	t.Helper()
	w, err := NewWindow[B](size, window, now)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func mustStriped(t testing.TB, size int, window time.Duration, fields int, now int64) *Striped {
	t.Helper()
	w, err := NewStriped(size, window, fields, now)
	if err != nil {
		t.Fatal(err)
	}
	return w
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
	w := mustWindow[int64](t, 4, 400*time.Millisecond, 1000*ms)
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

// TestNewWindowRejectsBadShapes: a size outside [1, MaxBuckets], a window under a nanosecond per
// bucket or fields outside [1, MaxFields] are errors naming the argument, for Window and Striped
// alike; they used to be held into range silently.
func TestNewWindowRejectsBadShapes(t *testing.T) {
	for _, c := range []struct {
		size   int
		window time.Duration
		fields int
		arg    string // the argument the error names; "" for a valid shape
	}{
		{0, time.Second, 1, "size"},
		{-3, time.Second, 1, "size"},
		{MaxBuckets + 1, time.Hour, 1, "size"},
		{10, 9, 1, "window"},
		{10, 0, 1, "window"},
		{10, -time.Second, 1, "window"},
		{10, time.Second, 0, "fields"},
		{10, time.Second, MaxFields + 1, "fields"},
		{10, 10, 1, ""},
		{MaxBuckets, MaxBuckets, MaxFields, ""},
		{40, 10 * time.Second, 3, ""},
	} {
		_, werr := NewWindow[int](c.size, c.window, 0)
		s, serr := NewStriped(c.size, c.window, c.fields, 0)
		if c.arg == "" {
			if werr != nil || serr != nil {
				t.Errorf("NewWindow/NewStriped(%d, %v, %d): %v / %v, want no error", c.size, c.window, c.fields, werr, serr)
			} else if s.Size() != c.size || s.Width() != c.window/time.Duration(c.size) || s.Fields() != c.fields {
				t.Errorf("NewStriped(%d, %v, %d): shape %d×%v, %d fields", c.size, c.window, c.fields, s.Size(), s.Width(), s.Fields())
			}
			continue
		}
		if !errors.Is(serr, ErrInvalid) || !errors.Is(serr, ward.ErrInvalid) || !strings.Contains(serr.Error(), c.arg+" = ") {
			t.Errorf("NewStriped(%d, %v, %d) = %v, want ErrInvalid naming %s", c.size, c.window, c.fields, serr, c.arg)
		}
		if c.arg != "fields" && (!errors.Is(werr, ErrInvalid) || !strings.Contains(werr.Error(), c.arg+" = ")) {
			t.Errorf("NewWindow(%d, %v) = %v, want ErrInvalid naming %s", c.size, c.window, werr, c.arg)
		}
	}
}

func TestWindowOneNanosecondBuckets(t *testing.T) {
	w := mustWindow[int64](t, 3, 3, 0)
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
	w := mustWindow[tally](t, 2, 2*time.Second, 0)
	w.Slot(0).ok++
	w.Slot(time.Second.Nanoseconds()).bad++
	var sum tally
	w.Each(time.Second.Nanoseconds(), true, func(b tally) { sum.ok += b.ok; sum.bad += b.bad })
	if sum != (tally{1, 1}) {
		t.Fatalf("sum = %+v, want {1 1}", sum)
	}
}

func TestWindowAllocs(t *testing.T) {
	w := mustWindow[int64](t, 10, time.Second, 0)
	now := int64(0)
	if a := testing.AllocsPerRun(1000, func() { now += 7 * ms; *w.Slot(now)++ }); a != 0 {
		t.Fatalf("Slot allocates %v per call", a)
	}
	var s int64
	if a := testing.AllocsPerRun(1000, func() { w.Each(now, false, func(b int64) { s += b }) }); a != 0 {
		t.Fatalf("Each allocates %v per call", a)
	}
}
