package swin

import (
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/wardgo/ward/internal/stripe"
	"github.com/wardgo/ward/internal/tally"
)

// TestLayout: every padded header starts one cache line in and ends on a line boundary, so the
// words the hot path reads share no line with a neighbour, and every stripe row is whole lines.
func TestLayout(t *testing.T) {
	line := uintptr(stripe.CacheLine)
	var w Window
	var r ring
	for _, c := range []struct {
		name         string
		offset, size uintptr
	}{
		{"Window.header", unsafe.Offsetof(w.header), unsafe.Sizeof(w)},
		{"ring.ringHeader", unsafe.Offsetof(r.ringHeader), unsafe.Sizeof(r)},
	} {
		if c.offset != line {
			t.Errorf("%s at offset %d, want %d (one line of padding before it)", c.name, c.offset, line)
		}
		if c.size%line != 0 {
			t.Errorf("%s: size %d, not a whole number of %d-byte lines", c.name, c.size, line)
		}
	}
	rows := &(*ring)(New(40, 250_000_000, 3, 0).cur).rows
	if rows.Words()*8%stripe.CacheLine != 0 {
		t.Errorf("rows of %d words are not whole lines", rows.Words())
	}
	for row := range rows.All() {
		if addr := uintptr(row); addr%8 != 0 {
			t.Errorf("row not word-aligned at %#x", addr)
		}
	}
}

// TestAddCount: AddCount writes the window as Add does, a jump back included, and counts in the
// side table; it allocates nothing.
func TestAddCount(t *testing.T) {
	const width = 100
	w, a := New(4, width, 2, 0), New(4, width, 2, 0)
	var side stripe.Table
	side.Init(tally.Words)
	steps := []struct {
		now int64
		i   int
	}{{0, 0}, {50, 1}, {150, 0}, {150, 1}, {420, 1}, {10, 0}, {-1000, 1}, {-990, 0}}
	for n, s := range steps {
		w.AddCount(s.now, s.i, 3, &side, tally.Admitted, tally.Passed)
		a.Add(s.now, s.i, 3)
		if got, want := w.Sum(s.now, true), a.Sum(s.now, true); got != want {
			t.Fatalf("step %d: AddCount(%d, %d): window sums %v, Add's %v", n, s.now, s.i, got, want)
		}
		if c := tally.CountsOf(side.All(), 0); c.Admitted != uint64(n+1) || c.Passed != uint64(n+1) || c.Failed != 0 {
			t.Fatalf("step %d: side counts %+v, want %d admitted and passed", n, c, n+1)
		}
	}
	if allocs := testing.AllocsPerRun(100, func() { w.AddCount(500, 0, 1, &side, tally.Admitted, tally.Failed) }); allocs != 0 {
		t.Fatalf("AddCount allocates %v", allocs)
	}
}

// pinnedStep is a write at now into counter i, made after the head moved to now's bucket without
// a write when moved, that a pinned write reports as want.
type pinnedStep struct {
	now   int64
	i     int
	moved bool
	want  bool
}

// runPinned makes each step's write with add, pinned, and checks it against Add into a: the same
// sums when add reports true, nothing written when it reports false (the step is then written with
// Add, as a caller's slower path does); then that add allocates nothing.
//
// Where rows are not pinned to Ps (stripe.Pinned false: a random row per pin) and the answer
// depends on the row's own state (rowState), only the sums are checked.
func runPinned(t *testing.T, name string, w, a *Window, add func(p int, now int64, i int, v int64) bool, rowState bool, steps []pinnedStep) {
	t.Helper()
	for n, s := range steps {
		if s.moved {
			w.write(s.now)
		}
		p := stripe.PinRow((*ring)(atomic.LoadPointer(&w.cur)).rows.Current())
		ok := add(p, s.now, s.i, 3)
		stripe.Unpin()
		if ok != s.want && (stripe.Pinned || !rowState) {
			t.Fatalf("step %d: %s(%d, %d) = %v, want %v", n, name, s.now, s.i, ok, s.want)
		}
		if !ok {
			if got, want := w.Sum(s.now, true), a.Sum(s.now, true); got != want {
				t.Fatalf("step %d: %s(%d, %d) false: window sums %v, want %v unchanged", n, name, s.now, s.i, got, want)
			}
			w.Add(s.now, s.i, 3)
		}
		a.Add(s.now, s.i, 3)
		if got, want := w.Sum(s.now, true), a.Sum(s.now, true); got != want {
			t.Fatalf("step %d: %s(%d, %d): window sums %v, Add's %v", n, name, s.now, s.i, got, want)
		}
	}
	last := steps[len(steps)-1].now
	if allocs := testing.AllocsPerRun(100, func() {
		add(stripe.PinRow((*ring)(atomic.LoadPointer(&w.cur)).rows.Current()), last, 0, 1)
		stripe.Unpin()
	}); allocs != 0 {
		t.Fatalf("%s allocates %v", name, allocs)
	}
}

// TestAddPinned: AddPinned writes the window as Add does when the write goes into the head bucket
// as it stands, the memo's cases included (the same instant again, a new head, a fresh row's zero
// memo at instant 0), and writes nothing when it reports false; it allocates nothing.
func TestAddPinned(t *testing.T) {
	const width = 100
	w, a := New(4, width, 2, -50), New(4, width, 2, -50)
	runPinned(t, "AddPinned", w, a, w.AddPinned, false, []pinnedStep{
		{-50, 0, false, true}, {0, 1, false, true}, {0, 0, false, true}, // the memo holds 0 after the first write at 0
		{50, 1, false, false}, {60, 0, false, true}, // 50 opens bucket 1: Add moves the head first
		{-40, 1, false, true},                                               // before the head, within the window: the head bucket
		{60, 1, false, true}, {420, 0, false, false}, {420, 1, false, true}, // a new head, then the memo for it
		{10, 0, false, true},                              // far behind the head but within the window
		{-1000, 1, false, false}, {-1000, 0, false, true}, // a jump back: a fresh ring with zero memos
	})
	// a fresh row's memo is zero: instant 0 with head 0 must not pass for the head bucket of a
	// ring opening at 1000, which 0 lies more than the window before
	f := New(4, width, 2, 1000)
	p := stripe.PinRow((*ring)(atomic.LoadPointer(&f.cur)).rows.Current())
	ok := f.AddPinned(p, 0, 0, 3)
	stripe.Unpin()
	if ok {
		t.Fatal("AddPinned(0) on a ring opening at 1000 = true, want false (a jump back)")
	}
}

// TestAddAllPinned: AddAllPinned writes every counter as AddAll does when the write goes into the
// head bucket as it stands, writes nothing when it reports false, and leaves the memo as it was.
func TestAddAllPinned(t *testing.T) {
	const width = 100
	w, a := New(4, width, 3, 0), New(4, width, 3, 0)
	steps := []struct {
		now  int64
		want bool
	}{{0, true}, {99, true}, {100, false}, {150, true}, {20, true}, {420, false}, {-1000, false}}
	for n, s := range steps {
		v := Bucket{1, int64(n) + 5, 1}
		p := stripe.PinRow((*ring)(atomic.LoadPointer(&w.cur)).rows.Current())
		ok := w.AddAllPinned(p, s.now, &v)
		stripe.Unpin()
		if ok != s.want {
			t.Fatalf("step %d: AddAllPinned(%d) = %v, want %v", n, s.now, ok, s.want)
		}
		if !ok {
			if got, want := w.Sum(s.now, true), a.Sum(s.now, true); got != want {
				t.Fatalf("step %d: AddAllPinned(%d) false: window sums %v, want %v unchanged", n, s.now, got, want)
			}
			w.AddAll(s.now, v)
		}
		a.AddAll(s.now, v)
		if got, want := w.Sum(s.now, true), a.Sum(s.now, true); got != want {
			t.Fatalf("step %d: AddAllPinned(%d): window sums %v, AddAll's %v", n, s.now, got, want)
		}
		for row := range (*ring)(atomic.LoadPointer(&w.cur)).rows.All() {
			if m := (*[memoWords]int64)(unsafe.Add(row, w.memo)); *m != [memoWords]int64{} {
				t.Fatalf("step %d: AddAllPinned(%d) wrote the memo: %v", n, s.now, *m)
			}
		}
	}
}

// TestAddFreshPinned: AddFreshPinned writes the window as Add does when the write goes into the
// head bucket as it stands, turning the P's copy of a new head bucket, writes nothing when it
// reports false (a new head, a jump back), never touches the coarse reading's memo, and allocates
// nothing.
func TestAddFreshPinned(t *testing.T) {
	const width = 100
	w, a := New(4, width, 2, 0), New(4, width, 2, 0)
	runPinned(t, "AddFreshPinned", w, a, w.AddFreshPinned, false, []pinnedStep{
		{0, 0, false, true}, {99, 1, false, true}, // a fresh ring's copies read as bucket 0
		{100, 1, false, false}, {101, 0, false, true}, // 100 opens bucket 1: Add moves the head
		{40, 1, false, true},                        // before the head, within the window: the head bucket
		{250, 0, true, true}, {251, 1, false, true}, // the P's copy of the new head turned
		{420, 0, false, false}, {421, 1, false, true}, // a new head: Add moves it
		{-1000, 1, false, false}, {-999, 0, false, true}, // a jump back: a fresh ring
	})
	for row := range (*ring)(atomic.LoadPointer(&w.cur)).rows.All() {
		if m := (*[memoWords]int64)(unsafe.Add(row, w.memo)); m[mNow] != 0 || m[mHead] != 0 || m[mSlot] != 0 {
			t.Fatalf("AddFreshPinned wrote the coarse reading's memo: %v", *m)
		}
	}
}

// memoStep is one write of TestAt and TestFreshAt: op "at" is the memo's common case alone (At
// and Counter, or FreshAt and FreshCounter), "pinned" the full pinned write (AddPinned or
// AddFreshPinned), "other" the other memo's full write, "move" a move of the head to now's bucket
// without a write.
type memoStep struct {
	op   string
	now  int64
	want bool
}

// runMemo makes each step pinned and checks it against Add into a: the same sums when the write
// reports true, nothing written when it reports false (the step is then written with Add). With
// rows not pinned to Ps (stripe.Pinned false) no memo is kept: the common case always reports
// false, and only the sums are checked.
func runMemo(t *testing.T, name string, at, pinned, other func(p int, now int64, i int, v int64) bool, w, a *Window, steps []memoStep) {
	t.Helper()
	for n, s := range steps {
		if s.op == "move" {
			w.write(s.now)
			continue
		}
		i := n & 1
		p := stripe.PinRow((*ring)(atomic.LoadPointer(&w.cur)).rows.Current())
		var ok bool
		switch s.op {
		case "at":
			ok = at(p, s.now, i, 3)
		case "pinned":
			ok = pinned(p, s.now, i, 3)
		case "other":
			ok = other(p, s.now, i, 3)
		}
		stripe.Unpin()
		if ok != s.want && (stripe.Pinned || s.op != "at") {
			t.Fatalf("step %d: %s %s(%d) = %v, want %v", n, name, s.op, s.now, ok, s.want)
		}
		if !ok {
			if got, want := w.Sum(s.now, true), a.Sum(s.now, true); got != want {
				t.Fatalf("step %d: %s %s(%d) false: window sums %v, want %v unchanged", n, name, s.op, s.now, got, want)
			}
			w.Add(s.now, i, 3)
		}
		a.Add(s.now, i, 3)
		if got, want := w.Sum(s.now, true), a.Sum(s.now, true); got != want {
			t.Fatalf("step %d: %s %s(%d): window sums %v, Add's %v", n, name, s.op, s.now, got, want)
		}
	}
	if allocs := testing.AllocsPerRun(100, func() {
		at(stripe.PinRow((*ring)(atomic.LoadPointer(&w.cur)).rows.Current()), steps[len(steps)-1].now, 0, 1)
		stripe.Unpin()
	}); allocs != 0 {
		t.Fatalf("%s allocates %v", name, allocs)
	}
}

// TestAt: At and Counter write only at the instant and head of the P's last AddPinned or AddCount (a
// fresh row's zero memo, another instant, a moved head and a fresh ring all report false, having
// written nothing), and AddFreshPinned leaves its memo as it was.
func TestAt(t *testing.T) {
	const width = 100
	w, a := New(4, width, 2, 0), New(4, width, 2, 0)
	at := func(p int, now int64, i int, v int64) bool {
		rows, h := w.Rows()
		if uint(p) >= uint(rows.Len()) || !w.At(rows.Row(p), h, now) {
			return false
		}
		stripe.Add(w.Counter(rows.Row(p), i), v)
		return true
	}
	runMemo(t, "coarse", at, w.AddPinned, w.AddFreshPinned, w, a, []memoStep{
		{"at", 0, false}, {"at", 10, false}, // a fresh row's memo is zero: neither instant 0 nor another
		{"pinned", 10, true}, {"at", 10, true}, {"at", 10, true}, {"at", 11, false}, {"at", 9, false},
		{"move", 150, false}, {"at", 10, false}, // the head moved: the memo no longer holds
		{"pinned", 150, true}, {"at", 150, true},
		{"other", 160, true}, {"at", 150, true}, // a fresh reading's write keeps the coarse memo
		{"pinned", 120, true}, {"at", 120, true}, {"at", 150, false},
		{"pinned", -1000, false}, {"at", -1000, false}, // a jump back: a fresh ring, zero memos
		{"pinned", -1000, true}, {"at", -1000, true},
	})
}

// TestFreshAt: FreshAt and FreshCounter write any instant inside the head bucket the P's last
// AddFreshPinned wrote into, and nothing else (a fresh row's zero memo, an instant before or after
// the bucket, a late write that went into a head it does not lie in, a moved head, a fresh ring);
// AddPinned leaves its memo as it was.
func TestFreshAt(t *testing.T) {
	const width = 100
	w, a := New(4, width, 2, 0), New(4, width, 2, 0)
	at := func(p int, now int64, i int, v int64) bool {
		rows, h := w.Rows()
		if uint(p) >= uint(rows.Len()) || !w.FreshAt(rows.Row(p), h, now) {
			return false
		}
		stripe.Add(w.FreshCounter(rows.Row(p), i), v)
		return true
	}
	runMemo(t, "fresh", at, w.AddFreshPinned, w.AddPinned, w, a, []memoStep{
		{"at", 0, false}, {"at", 10, false}, // a fresh row's memo is zero
		{"pinned", 10, true}, {"at", 0, true}, {"at", 20, true}, {"at", 99, true},
		{"at", 100, false}, {"at", -1, false}, // after the bucket, before it
		{"move", 150, false}, {"at", 150, false}, {"at", 50, false}, // the head moved
		{"pinned", 50, true}, {"at", 60, false}, // a late write goes into the head, and leaves no memo
		{"pinned", 150, true}, {"at", 199, true}, {"at", 100, true},
		{"other", 170, true}, {"at", 180, true}, // a coarse reading's write keeps the fresh memo
		{"pinned", -1000, false}, {"at", -1000, false}, // a jump back: a fresh ring
		{"pinned", -1000, true}, {"at", -950, true},
	})
}

// TestReadMatchesEach: Read stores the buckets Each visits, in order, for reads before the first
// bucket opened, across the ring's wrap, far past the head, with and without the current bucket,
// and more than a window behind (nothing); it fills no more than dst holds, and allocates nothing.
func TestReadMatchesEach(t *testing.T) {
	const width = 100
	w := New(5, width, 3, 1000)
	for k, now := range []int64{1000, 1050, 1230, 1230, 1499, 1500, 1777, 2250, 2301, 2302, 2900} {
		w.Add(now, k%3, int64(k+1))
		for _, at := range []int64{now, now - 30, now + 99, now + 260, now + 1000, 990, 1000, -5000, 1 << 62} {
			for _, current := range []bool{true, false} {
				var each []Bucket
				w.Each(at, current, func(b Bucket) { each = append(each, b) })
				dst := make([]Bucket, 5)
				for i := range dst {
					dst[i] = Bucket{-1, -1, -1, -1} // Read overwrites what it stores
				}
				n := w.Read(at, current, dst)
				if n != len(each) {
					t.Fatalf("after %d at %d current %v: Read stored %d buckets, Each visits %d", now, at, current, n, len(each))
				}
				for i := range each {
					if dst[i] != each[i] {
						t.Fatalf("after %d at %d current %v: bucket %d = %v, Each %v", now, at, current, i, dst[i], each[i])
					}
				}
				if short := w.Read(at, current, dst[:2]); short != min(n, 2) {
					t.Fatalf("Read into 2 buckets stored %d, want %d", short, min(n, 2))
				}
			}
		}
	}
	dst := make([]Bucket, 5)
	if a := testing.AllocsPerRun(100, func() { w.Read(2900, true, dst) }); a != 0 {
		t.Fatalf("Read allocates %v", a)
	}
}
