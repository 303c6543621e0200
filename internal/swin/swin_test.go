package swin

import (
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
	rows := &New(40, 250_000_000, 3, 0).cur.Load().rows
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

// TestAddPinned: AddPinned writes the window as Add does when the write goes into the head bucket
// as it stands, the memo's cases included (the same instant again, a new head, a fresh row's zero
// memo at instant 0), and writes nothing when it reports false; it allocates nothing.
func TestAddPinned(t *testing.T) {
	const width = 100
	w, a := New(4, width, 2, -50), New(4, width, 2, -50)
	steps := []struct {
		now  int64
		i    int
		want bool
	}{
		{-50, 0, true}, {0, 1, true}, {0, 0, true}, // the memo holds 0 after the first write at 0
		{50, 1, false}, {60, 0, true}, // 50 opens bucket 1: Add moves the head first
		{-40, 1, true},                                 // before the head, within the window: the head bucket
		{60, 1, true}, {420, 0, false}, {420, 1, true}, // a new head, then the memo for it
		{10, 0, true},                       // far behind the head but within the window
		{-1000, 1, false}, {-1000, 0, true}, // a jump back: a fresh ring with zero memos
	}
	for n, s := range steps {
		p := stripe.PinRow(w.cur.Load().rows.Current())
		ok := w.AddPinned(p, s.now, s.i, 3)
		stripe.Unpin()
		if ok != s.want {
			t.Fatalf("step %d: AddPinned(%d, %d) = %v, want %v", n, s.now, s.i, ok, s.want)
		}
		if !ok {
			if got, want := w.Sum(s.now, true), a.Sum(s.now, true); got != want {
				t.Fatalf("step %d: AddPinned(%d, %d) false: window sums %v, want %v unchanged", n, s.now, s.i, got, want)
			}
			w.Add(s.now, s.i, 3)
		}
		a.Add(s.now, s.i, 3)
		if got, want := w.Sum(s.now, true), a.Sum(s.now, true); got != want {
			t.Fatalf("step %d: AddPinned(%d, %d): window sums %v, Add's %v", n, s.now, s.i, got, want)
		}
	}
	// a fresh row's memo is zero: instant 0 with head 0 must not pass for the head bucket of a
	// ring opening at 1000, which 0 lies more than the window before
	f := New(4, width, 2, 1000)
	p := stripe.PinRow(f.cur.Load().rows.Current())
	ok := f.AddPinned(p, 0, 0, 3)
	stripe.Unpin()
	if ok {
		t.Fatal("AddPinned(0) on a ring opening at 1000 = true, want false (a jump back)")
	}
	if allocs := testing.AllocsPerRun(100, func() {
		w.AddPinned(stripe.PinRow(w.cur.Load().rows.Current()), -1000, 0, 1)
		stripe.Unpin()
	}); allocs != 0 {
		t.Fatalf("AddPinned allocates %v", allocs)
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
		p := stripe.PinRow(w.cur.Load().rows.Current())
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
		for row := range w.cur.Load().rows.All() {
			if m := (*[memoWords]int64)(unsafe.Add(row, w.memo)); *m != [memoWords]int64{} {
				t.Fatalf("step %d: AddAllPinned(%d) wrote the memo: %v", n, s.now, *m)
			}
		}
	}
}
