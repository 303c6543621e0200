package stripe

import (
	"iter"
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"
)

// MaxRows bounds the rows a [Table] grows to: the Go runtime's own limit on GOMAXPROCS is far
// below it, so a P index at or past it can only mean a broken pin, and Pin panics (unpinned)
// rather than allocate without bound.
const MaxRows = 1 << 16

// Table is one row of int64 words per P, each row on cache lines of its own, written by the
// goroutine running on that P without atomic read-modify-write and summed by readers.
//
// It stays exact when GOMAXPROCS changes at run time. Rows are made for [Count] Ps; a goroutine
// pinned to a P past the last row grows the table (under a mutex, off the hot path) to the next
// power of two that holds it. The rows made before a growth are kept and still read by [Table.All]:
// a writer that loaded them before the growth writes its own P's row there, so every write lands
// in exactly one row that exactly one P writes, and a sum over every row ever made loses nothing.
// A table grows at most a few times in a process's life (each growth at least doubles it), and
// never shrinks: fewer Ps just leave rows idle.
//
// In the builds where Pin cannot learn the P ([Pinned] false) a row is picked at random and the
// words are written atomically ([Plain] false): still exact, and slower.
//
// [Table.Init] chooses the row size and makes the rows; a Table must be Init'ed before use and not
// copied after.
type Table struct {
	// The current *rows, read and written with sync/atomic's functions only: Current, inlined,
	// is then one load, with no inlined method of an atomic type to leave a no-op in its caller.
	cur    unsafe.Pointer
	mu     sync.Mutex
	stride int // words per row; set once, by Init or the first growth
}

// Rows is the set of rows a [Table] hands out now; see [Table.Current].
type Rows = rows

type rows struct {
	base unsafe.Pointer // row 0
	size uintptr        // bytes per row, a whole number of cache lines
	n    int            // rows, a power of two
	mem  []int64        // the rows, plus a cache line at each end so no neighbour shares them
	prev *rows          // the rows before this growth, still read by All
}

// Init makes rows of at least words int64 words each (rounded up to whole cache lines), one per
// P. Call it before first use.
func (t *Table) Init(words int) {
	t.mu.Lock()
	t.stride = RoundUp(max(words, 1))
	t.mu.Unlock()
	t.grow(Count() - 1)
}

// Words returns how many int64 words each row holds.
func (t *Table) Words() int {
	if r := t.Current(); r != nil {
		return int(r.size / 8)
	}
	return 0
}

// Pin pins the calling goroutine to its P and returns the start of the P's row: call [Unpin] as
// soon as the row is written, and do nothing that can panic in between (a pinned goroutine cannot
// be preempted, and a panic leaves its P pinned). The row is [Table.Words] words long. Pin on a
// Table that was never Init'ed panics before pinning.
func (t *Table) Pin() unsafe.Pointer {
	r := t.Current()
	if p := pin(r.n); uint(p) < uint(r.n) {
		return unsafe.Add(r.base, uintptr(p)*r.size)
	}
	return t.pinSlow()
}

// Current returns the rows in use now, for a caller on the hottest path that pins and finds its
// row inline, without Pin's call:
//
//	r := t.Current()
//	if w := r.Row(stripe.PinRow(r)); w != nil { …write w…; stripe.Unpin() } else { stripe.Unpin(); …t.Pin()… }
func (t *Table) Current() *Rows { return (*rows)(atomic.LoadPointer(&t.cur)) }

// Row returns the start of row p, or nil when p is past the rows (GOMAXPROCS grew: use
// [Table.Pin], which grows the table).
func (r *Rows) Row(p int) unsafe.Pointer {
	if uint(p) < uint(r.n) {
		return unsafe.Add(r.base, uintptr(p)*r.size)
	}
	return nil
}

// pinSlow grows the table until the P the goroutine is pinned to has a row. It is entered pinned
// (Pin found the P past the rows) and unpins before growing. A goroutine may move to another P
// between the check and the next pin, hence the loop; it ends once the table holds every P the
// runtime has.
func (t *Table) pinSlow() unsafe.Pointer {
	for {
		p := pin(0) // the P this goroutine is pinned to: pinned twice now
		Unpin()
		Unpin()
		if p >= MaxRows {
			panic("stripe: P index past MaxRows")
		}
		t.grow(p)
		r := t.Current()
		if p = pin(r.n); uint(p) < uint(r.n) {
			return unsafe.Add(r.base, uintptr(p)*r.size)
		}
	}
}

// grow makes sure row p exists.
func (t *Table) grow(p int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.Current()
	if old != nil && p < old.n {
		return
	}
	if t.stride == 0 {
		t.stride = Words
	}
	n := 1 << bits.Len(uint(max(p, Count()-1)))
	if old != nil {
		n = max(n, 2*old.n)
	}
	mem := make([]int64, n*t.stride+2*Words)
	atomic.StorePointer(&t.cur, unsafe.Pointer(&rows{
		base: unsafe.Pointer(&mem[Words]),
		size: uintptr(t.stride) * 8,
		n:    n,
		mem:  mem,
		prev: old,
	}))
}

// All yields the start of every row ever made, the current rows first: what a reader sums. A row
// is [Table.Words] words long; read it with [Load].
func (t *Table) All() iter.Seq[unsafe.Pointer] {
	return func(yield func(unsafe.Pointer) bool) {
		for r := t.Current(); r != nil; r = r.prev {
			for i := 0; i < r.n; i++ {
				if !yield(unsafe.Add(r.base, uintptr(i)*r.size)) {
					return
				}
			}
		}
	}
}

// Rows returns how many rows the table holds now, the old ones kept after a growth included.
func (t *Table) Rows() int {
	n := 0
	for r := t.Current(); r != nil; r = r.prev {
		n += r.n
	}
	return n
}

// Len returns how many rows r holds.
func (r *Rows) Len() int { return r.n }

// Prev returns the rows a growth replaced, nil for the first: with [Table.Current] a caller walks
// every row ever made, as [Table.All] does, without a closure.
func (r *Rows) Prev() *Rows { return r.prev }
