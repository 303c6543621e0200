// Package swin is the concurrent rolling window behind atomicwindow.Striped: per-P stripes of
// bucketed counters, written with plain stores while pinned to the P and summed by readers. It
// lives here so that a ward type with per-P counters of its own (the breaker's ward.Counts) can
// count them in the same pinned section as its window write; users reach it as
// atomicwindow.Striped.
package swin

import (
	"math"
	"math/bits"
	"sync/atomic"
	"unsafe"

	"github.com/wardgo/ward/internal/stripe"
)

// MaxFields is the most counters a bucket carries. A power of two: a write masks its counter
// index with MaxFields−1 so no bounds check can fail while pinned.
const MaxFields = 4

// Bucket is one bucket's counters as a reader sees them, summed over the stripes.
type Bucket = [MaxFields]int64

// Window is a rolling window of int64 counters safe for any number of goroutines: size buckets
// spanning window, each carrying fields counters, kept once per P (stripe) and summed on read.
//
// A write ([Window.Add]) pins the goroutine to its P, finds the bucket from a shared head index
// (one atomic load; a division and a compare-and-set only when a bucket boundary is crossed) and
// adds with a plain store into the P's own stripe: no lock, no atomic read-modify-write, no
// allocation. A read ([Window.Sum], [Window.Each]) visits every stripe of every bucket in the
// window, so it costs stripes × size loads: cache it, as the breaker and the shedder do.
//
// Instants are read as atomicwindow.Window reads them: a write slightly before the head bucket goes into it;
// a write more than the whole window before it is the clock having jumped back, and the window
// restarts empty at that instant (the one write that allocates: a fresh set of stripes).
//
// It is atomicwindow.Striped, kept here so that other ward packages can join a write of their
// own per-P counters to the window's pinned write ([Window.AddCount]). A write in progress may be
// missed by a reader, never invented. A Window must not be copied after first use. The zero value
// is not usable: use [New].
type Window struct {
	_ stripe.NoCopy
	_ [stripe.CacheLine]byte // keep the header off whatever precedes the window in memory
	header
	_ [headerPad]byte // and off whatever follows it
}

// header is what every write and read of a Window reads; only cur is ever written, when the
// clock jumps back.
type header struct {
	cur    unsafe.Pointer // *ring: the stripes and the head they are numbered from (sync/atomic's functions only)
	width  int64          // nanoseconds per bucket
	size   int64          // buckets in the window
	mask   int64          // ring length - 1 (ring: size rounded up to a power of two)
	fields int            // counters per bucket
	reach  uint64         // width × size: how far before the head a write is still late, not a jump
	memo   uintptr        // offset in a stripe row of its memo, after the buckets (see AddCount)
}

// ring is a Window's stripes and the head index numbered from their origin; a jump of the clock
// back replaces it whole.
type ring struct {
	_ [stripe.CacheLine]byte
	ringHeader
	_ [ringPad]byte
}

type ringHeader struct {
	head   int64        // newest bucket written, counted from origin; hot: read by every write (sync/atomic's functions only: 8-aligned, one line into an allocated ring)
	origin int64        // the instant bucket 0 opened
	rows   stripe.Table // one row per P: the ring, each bucket a tag and then its counters
}

// The pads round each header up to whole cache lines, sized from the header itself.
const (
	headerPad = (stripe.CacheLine - unsafe.Sizeof(header{})%stripe.CacheLine) % stripe.CacheLine
	ringPad   = (stripe.CacheLine - unsafe.Sizeof(ringHeader{})%stripe.CacheLine) % stripe.CacheLine
)

// New returns an empty window of size buckets width nanoseconds wide with fields counters per
// bucket, its first bucket opening at now. The caller has checked the shape: size in [1,
// 1<<16], width >= 1 with width × size within int64, fields in [1, MaxFields].
func New(size int, width int64, fields int, now int64) *Window {
	w := new(Window)
	w.Init(size, width, fields, now)
	return w
}

// Init makes w a window as [New] does, in place: for a type that holds a Window by value. Call it
// once, before first use.
func (w *Window) Init(size int, width int64, fields int, now int64) {
	w.header = header{
		width:  width,
		size:   int64(size),
		mask:   int64(1<<bits.Len(uint(size-1)) - 1),
		fields: fields,
		reach:  uint64(width) * uint64(size),
		memo:   uintptr(1<<bits.Len(uint(size-1))*(1+fields)) * 8,
	}
	atomic.StorePointer(&w.cur, unsafe.Pointer(w.newRing(now)))
}

// newRing returns empty stripes whose bucket 0 opens at now.
func (w *Window) newRing(now int64) *ring {
	r := &ring{ringHeader: ringHeader{origin: now}}
	r.rows.Init(int(w.memo/8) + memoWords)
	return r
}

// Size returns how many buckets the window has.
func (w *Window) Size() int { return int(w.size) }

// Width returns how many nanoseconds one bucket covers.
func (w *Window) Width() int64 { return w.width }

// Fields returns how many counters each bucket carries.
func (w *Window) Fields() int { return w.fields }

// write returns the stripes and the bucket index a write at now goes to, moving the head forward
// when now has crossed a bucket boundary. A now before the head bucket opened writes into the
// head bucket, unless the clock jumped back ([Window.behind]): then fresh stripes start at now.
func (w *Window) write(now int64) (*ring, int64) {
	r := (*ring)(atomic.LoadPointer(&w.cur))
	h := atomic.LoadInt64(&r.head)
	if w.inHead(r, h, now) {
		return r, h
	}
	return w.move(r, h, now)
}

// inHead reports whether a write at now goes into head bucket h of r as it stands: now inside the
// head bucket, or before it by no more than the window (a reading a moment older than another
// writer's). Distances are taken in uint64, where they cannot overflow.
func (w *Window) inHead(r *ring, h, now int64) bool {
	d, opening := uint64(now)-uint64(r.origin), uint64(h)*uint64(w.width)
	return now >= r.origin && d < opening+uint64(w.width) && d+w.reach >= opening
}

// move is write past the head bucket: it moves the head forward, or restarts the stripes when the
// clock jumped back.
func (w *Window) move(r *ring, h, now int64) (*ring, int64) {
	idx, ok := w.index(r, now)
	if ok && idx > h {
		for h < idx && !atomic.CompareAndSwapInt64(&r.head, h, idx) {
			h = atomic.LoadInt64(&r.head)
		}
		return r, idx
	}
	if !w.behind(r, h, now) {
		return r, h
	}
	if fresh := w.newRing(now); !atomic.CompareAndSwapPointer(&w.cur, unsafe.Pointer(r), unsafe.Pointer(fresh)) {
		return w.write(now) // another writer restarted it first: write into theirs
	}
	return (*ring)(atomic.LoadPointer(&w.cur)), 0
}

// behind reports whether now lies more than the whole window before head bucket h opened, as
// [Window] decides it: every bucket then lies in now's future.
func (w *Window) behind(r *ring, h, now int64) bool {
	opening := int64(uint64(r.origin) + uint64(h)*uint64(w.width))
	return now < opening && uint64(opening)-uint64(now) > w.reach
}

// index returns the bucket now falls in, counted from origin, and false for an instant before
// origin. The distance is taken in uint64, where it cannot overflow however far apart the instants
// are, and the index saturates at MaxInt64.
func (w *Window) index(r *ring, now int64) (int64, bool) {
	if now < r.origin {
		return 0, false
	}
	return int64(min((uint64(now)-uint64(r.origin))/uint64(w.width), math.MaxInt64)), true
}

// Add adds v to counter i of the bucket now falls in. An i outside [0, Fields()) is ignored.
func (w *Window) Add(now int64, i int, v int64) {
	if uint(i) >= uint(w.fields) {
		return
	}
	r := (*ring)(atomic.LoadPointer(&w.cur)) // write, written out: the fast path inline
	idx := atomic.LoadInt64(&r.head)
	if !w.inHead(r, idx, now) {
		r, idx = w.move(r, idx, now)
	}
	rows := r.rows.Current()
	row := rows.Row(stripe.PinRow(rows))
	if row == nil { // GOMAXPROCS grew past the rows: Pin grows them
		stripe.Unpin()
		row = r.rows.Pin()
	}
	w.add(w.slot(row, idx), idx, i, v)
	stripe.Unpin()
}

// AddCount adds v to counter i of the bucket now falls in, as Add does, and in the same pinned
// section adds 1 to words j and k of the calling P's row of side: a count of the caller's own
// beside the window's. i must lie in [0, Fields()) and j and k within side's rows, which the
// caller made: nothing is checked.
//
// Each stripe row ends in a memo of the last instant its P wrote at here or through
// [Window.AddPinned], the head it found then and the head bucket's place in the row: whether a
// write goes into head bucket h depends on nothing but the ring, h and now, so a write at the same
// instant with the same head (the common case for a caller that writes a coarse reading) goes into
// h without [Window.inHead]'s arithmetic.
func (w *Window) AddCount(now int64, i int, v int64, side *stripe.Table, j, k uintptr) {
	r := (*ring)(atomic.LoadPointer(&w.cur))
	h := atomic.LoadInt64(&r.head)
	rows := r.rows.Current()
	p := stripe.PinRow(rows)
	wrow, srow := rows.Row(p), side.Current().Row(p)
	if wrow == nil || srow == nil {
		stripe.Unpin()
		w.addCountSlow(now, i, v, side, j, k)
		return
	}
	m := (*[memoWords]int64)(unsafe.Add(wrow, w.memo))
	if stripe.Load(&m[mNow]) != now || stripe.Load(&m[mHead]) != h+1 {
		if !w.inHead(r, h, now) {
			stripe.Unpin()
			w.addCountSlow(now, i, v, side, j, k)
			return
		}
		w.remember(m, now, h)
	}
	w.add(w.slot(wrow, h), h, i, v)
	stripe.Add((*int64)(unsafe.Add(srow, j*8)), 1)
	stripe.Add((*int64)(unsafe.Add(srow, k*8)), 1)
	stripe.Unpin()
}

// Rows returns the rows of the window's stripes and the head bucket as they stand, for a caller
// pinned to a P (stripe.PinRow) that writes into its row (nil past the rows: GOMAXPROCS grew) with
// [Window.At] or [Window.FreshAt]. It is small enough to inline.
func (w *Window) Rows() (*stripe.Rows, int64) {
	r := (*ring)(atomic.LoadPointer(&w.cur))
	return r.rows.Current(), atomic.LoadInt64(&r.head)
}

// At reports whether a write at now, a coarse reading, goes into the head bucket h through the
// memo of the P whose row this is ([Window.Rows]): now the instant of the P's last write through
// [Window.AddPinned] or [Window.AddCount], with the head and the P's copy of the head bucket as
// they were then. If so, the caller, still pinned, adds to [Window.Counter]; if not, it writes
// with AddPinned, still pinned, or unpins and writes with AddCount. It is small enough to inline,
// and makes no call.
func (w *Window) At(row unsafe.Pointer, h, now int64) bool {
	m := (*[memoWords]int64)(unsafe.Add(row, w.memo))
	return stripe.Load(&m[mNow]) == now && stripe.Load(&m[mHead]) == h+1
}

// Counter returns counter i of the bucket the coarse memo of the P whose row this is names, for a
// caller that [Window.At] answered true. i must lie in [0, Fields()). It is small enough to
// inline, and makes no call.
func (w *Window) Counter(row unsafe.Pointer, i int) *int64 {
	m := (*[memoWords]int64)(unsafe.Add(row, w.memo))
	b := (*[1 + MaxFields]int64)(unsafe.Add(row, stripe.Load(&m[mSlot])))
	return &b[1+i&(MaxFields-1)] // i < fields <= MaxFields: the mask only tells the compiler
}

// AddPinned adds v to counter i of the bucket now falls in, as Add does, for a caller already
// pinned to P index p (stripe.PinRow) that writes a count of its own in the same pinned section:
// it writes when the write goes into the head bucket as it stands (turning the P's copy of it if
// that still holds an older bucket) and brings the P's memo to now (see [Window.AddCount]); it
// reports false, having written nothing, when the write needs more than the head bucket or the
// rows have no row p. The caller then unpins and writes with [Window.AddCount] or [Window.Add].
// i must lie in [0, Fields()): nothing is checked. It cannot panic; its common case, inlined,
// is [Window.At].
func (w *Window) AddPinned(p int, now int64, i int, v int64) bool {
	r := (*ring)(atomic.LoadPointer(&w.cur))
	h := atomic.LoadInt64(&r.head)
	row := r.rows.Current().Row(p)
	if row == nil {
		return false
	}
	m := (*[memoWords]int64)(unsafe.Add(row, w.memo))
	if stripe.Load(&m[mNow]) != now || stripe.Load(&m[mHead]) != h+1 {
		if !w.inHead(r, h, now) {
			return false
		}
		w.remember(m, now, h)
	}
	w.add(w.slot(row, h), h, i, v)
	return true
}

// remember stores in a P's memo that its write at now went into head bucket h: the P's copy of
// that bucket then holds it, and goes on holding it while h is the head. A write turns the copy
// only to a bucket a whole ring from h, which lies past the head or, for a write that waited
// that long between finding its bucket and writing it, before any window a reader visits with h
// in it: the memo's writes into that copy are then lost until the head moves, as that write's
// own turn loses the copy's counts. A build whose rows are not pinned to Ps keeps no memo.
func (w *Window) remember(m *[memoWords]int64, now, h int64) {
	if !stripe.Pinned { // rows shared by Ps: a memo's words could come from two writers
		return
	}
	stripe.Store(&m[mNow], now)
	stripe.Store(&m[mHead], h+1) // + 1: a fresh row's zero memo matches no head
	stripe.Store(&m[mSlot], w.offset(h))
}

// FreshAt reports whether a write at now, a fresh clock reading, goes into the head bucket h
// through the memo of the P whose row this is ([Window.Rows]): now inside the head bucket that
// the P last wrote into through [Window.AddFreshPinned], with the P's copy of that bucket as it
// was then (a memo of its own, kept beside the coarse reading's, which [Window.At] reads). If so, the
// caller, still pinned, adds to [Window.FreshCounter]; if not, it writes with AddFreshPinned,
// still pinned. It is small enough to inline, and makes no call.
func (w *Window) FreshAt(row unsafe.Pointer, h, now int64) bool {
	m := (*[memoWords]int64)(unsafe.Add(row, w.memo))
	return uint64(now)-uint64(stripe.Load(&m[mOpen])) < uint64(w.width) && stripe.Load(&m[mFreshHead]) == h+1
}

// FreshCounter returns counter i of the bucket the memo of the P whose row this is names, for a
// caller that [Window.FreshAt] answered true. i must lie in [0, Fields()). It is small enough to
// inline, and makes no call.
func (w *Window) FreshCounter(row unsafe.Pointer, i int) *int64 {
	m := (*[memoWords]int64)(unsafe.Add(row, w.memo))
	b := (*[1 + MaxFields]int64)(unsafe.Add(row, stripe.Load(&m[mFreshSlot])))
	return &b[1+i&(MaxFields-1)] // i < fields <= MaxFields: the mask only tells the compiler
}

// AddFreshPinned is [Window.AddPinned] for a caller whose instant is a fresh clock reading: it
// writes when now goes into the head bucket as it stands (turning the P's copy of it if that
// still holds an older bucket), and when now lies inside that bucket (not before it) stores the
// bucket in the P's fresh-reading memo for [Window.FreshAt], leaving the coarse reading's memo
// as it is. It reports false, having written nothing, when the write needs more than the head
// bucket or the rows have no row p (the caller then unpins and writes with [Window.Add]). i must
// lie in [0, Fields()). It cannot panic.
func (w *Window) AddFreshPinned(p int, now int64, i int, v int64) bool {
	r := (*ring)(atomic.LoadPointer(&w.cur))
	h := atomic.LoadInt64(&r.head)
	row := r.rows.Current().Row(p)
	if row == nil || !w.inHead(r, h, now) {
		return false
	}
	w.add(w.slot(row, h), h, i, v)
	if idx, ok := w.index(r, now); stripe.Pinned && ok && idx == h { // now inside the head bucket, not before it (and the memo as remember keeps it)
		m := (*[memoWords]int64)(unsafe.Add(row, w.memo))
		stripe.Store(&m[mOpen], int64(uint64(r.origin)+uint64(h)*uint64(w.width)))
		stripe.Store(&m[mFreshHead], h+1) // + 1: a fresh row's zero memo matches no head
		stripe.Store(&m[mFreshSlot], w.offset(h))
	}
	return true
}

// AddAllPinned adds v[k] to counter k of the bucket now falls in, for every counter, as AddAll
// does, for a caller already pinned to P index p, on AddPinned's terms: false, having written
// nothing, when the write needs more than the head bucket as it stands or the rows have no row p.
// It reads the memo and leaves it as it is: a caller that writes fresh clock readings here and a
// coarse reading through AddPinned keeps the coarse reading's memo.
func (w *Window) AddAllPinned(p int, now int64, v *Bucket) bool {
	r := (*ring)(atomic.LoadPointer(&w.cur))
	h := atomic.LoadInt64(&r.head)
	row := r.rows.Current().Row(p)
	if row == nil {
		return false
	}
	m := (*[memoWords]int64)(unsafe.Add(row, w.memo))
	if (stripe.Load(&m[mNow]) != now || stripe.Load(&m[mHead]) != h+1) && !w.inHead(r, h, now) {
		return false
	}
	b := w.slot(row, h)
	if stripe.Load(&b[0]) != h {
		w.turn(b, h)
	}
	for k := 0; k < w.fields; k++ {
		stripe.Add(&b[1+k&(MaxFields-1)], v[k&(MaxFields-1)]) // the masks only tell the compiler
	}
	return true
}

// The words of a stripe row's memo, after its buckets: for a coarse reading (AddCount,
// AddPinned), the instant of the P's last write into the head bucket, that head + 1 and the head
// bucket's offset in the row; for a fresh reading (AddFreshPinned), the instant the head bucket
// opened, that head + 1 and its offset.
const (
	mNow = iota
	mHead
	mSlot
	mOpen
	mFreshHead
	mFreshSlot
	memoWords
)

// addCountSlow is AddCount past the head bucket, or with GOMAXPROCS grown past the rows: entered
// unpinned, it moves the head (or restarts the stripes), then writes both in one pinned section
// (two, through Pin, when the rows must grow).
func (w *Window) addCountSlow(now int64, i int, v int64, side *stripe.Table, j, k uintptr) {
	r, idx := w.write(now)
	rows, own := r.rows.Current(), side.Current()
	p := stripe.PinRow(rows)
	wrow, srow := rows.Row(p), own.Row(p)
	if wrow == nil || srow == nil { // GOMAXPROCS grew past the rows: Pin grows them
		stripe.Unpin()
		w.add(w.slot(r.rows.Pin(), idx), idx, i, v)
		stripe.Unpin()
		srow = side.Pin()
	} else {
		w.add(w.slot(wrow, idx), idx, i, v)
	}
	stripe.Add((*int64)(unsafe.Add(srow, j*8)), 1)
	stripe.Add((*int64)(unsafe.Add(srow, k*8)), 1)
	stripe.Unpin()
}

// add adds v to counter i of a stripe's copy of bucket idx, turning the copy first when it still
// holds an older bucket. Entered pinned; it cannot panic.
func (w *Window) add(b *[1 + MaxFields]int64, idx int64, i int, v int64) {
	if stripe.Load(&b[0]) != idx {
		w.turn(b, idx)
	}
	stripe.Add(&b[1+i&(MaxFields-1)], v) // i < fields <= MaxFields: the mask only tells the compiler
}

// offset returns where in a stripe row its copy of bucket idx starts, in bytes.
func (w *Window) offset(idx int64) int64 {
	return (idx & w.mask) * int64(1+w.fields) * 8
}

// AddAll adds v[k] to counter k of the bucket now falls in, for every counter, with one pin.
func (w *Window) AddAll(now int64, v Bucket) {
	if w.fields == 0 {
		panic("atomicwindow: Striped used without NewStriped")
	}
	r, idx := w.write(now)
	b := w.slot(r.rows.Pin(), idx)
	if stripe.Load(&b[0]) != idx {
		w.turn(b, idx)
	}
	for k := 0; k < w.fields; k++ {
		stripe.Add(&b[1+k], v[k])
	}
	stripe.Unpin()
}

// slot returns a row's copy of bucket idx: its tag, then its counters. idx is masked, so the
// address stays inside the row by construction and is computed without a bounds check: nothing
// between Pin and Unpin may panic.
func (w *Window) slot(row unsafe.Pointer, idx int64) *[1 + MaxFields]int64 {
	return (*[1 + MaxFields]int64)(unsafe.Add(row, w.offset(idx)))
}

// turn clears a stripe's bucket that still holds an older bucket's counts, then publishes its new
// tag. The tag is stored atomically after the counters are cleared, so a reader that sees the new
// tag never sees the old counts.
func (w *Window) turn(b *[1 + MaxFields]int64, idx int64) {
	for k := 1; k <= w.fields; k++ {
		stripe.Store(&b[k], 0)
	}
	atomic.StoreInt64(&b[0], idx)
}

// bucket sums bucket idx over the stripes; a bucket no stripe holds reads as zero. It walks the
// rows as [stripe.Table.All] yields them, without its closure: a fold calls it once per bucket.
func (w *Window) bucket(r *ring, idx int64) (sum Bucket) {
	off := uintptr(idx&w.mask) * uintptr(1+w.fields) * 8
	for rs := r.rows.Current(); rs != nil; rs = rs.Prev() {
		for i := 0; i < rs.Len(); i++ {
			w.fold(&sum, (*[1 + MaxFields]int64)(unsafe.Add(rs.Row(i), off)), idx)
		}
	}
	return sum
}

// fold adds to sum a stripe's copy b of bucket idx, if it holds that bucket: a copy that turns
// while it is read is left out.
func (w *Window) fold(sum *Bucket, b *[1 + MaxFields]int64, idx int64) {
	if atomic.LoadInt64(&b[0]) != idx {
		return
	}
	var v Bucket
	for k := 0; k < w.fields; k++ {
		v[k] = stripe.Load(&b[1+k&(MaxFields-1)])
	}
	if atomic.LoadInt64(&b[0]) != idx { // the stripe turned while we read: skip it
		return
	}
	for k := range sum {
		sum[k] += v[k]
	}
}

// Each visits the buckets still inside the window at now, oldest first, each summed over the
// stripes: the per-bucket maxima and minima a shedder takes are read this way. It visits the same
// buckets as atomicwindow.Window's Each; with current false the bucket now falls in is left out, and a now more
// than the whole window before the head bucket visits nothing. Each writes nothing and allocates
// nothing.
func (w *Window) Each(now int64, current bool, f func(Bucket)) {
	r, oldest, n := w.view(now, current)
	for i := int64(0); i < n; i++ {
		if idx := oldest + i; idx < 0 { // before the first bucket opened: empty
			f(Bucket{})
		} else {
			f(w.bucket(r, idx))
		}
	}
}

// Read stores in dst the buckets [Window.Each] would visit, oldest first, and returns how many it
// stored: Each without a call per bucket, for a fold on a hot path; it walks each stripe once,
// adding its copies of the buckets in order. dst must hold Size() buckets (fewer are stored if
// it holds fewer).
func (w *Window) Read(now int64, current bool, dst []Bucket) int {
	r, oldest, n := w.view(now, current)
	n = min(n, int64(len(dst)))
	dst = dst[:n]
	clear(dst)
	first := max(-oldest, 0) // the buckets before the first bucket opened stay empty
	for rs := r.rows.Current(); rs != nil; rs = rs.Prev() {
		for i := 0; i < rs.Len(); i++ {
			row := rs.Row(i)
			for j := first; j < n; j++ {
				w.fold(&dst[j], w.slot(row, oldest+j), oldest+j)
			}
		}
	}
	return int(n)
}

// view returns the ring a read at now visits, the oldest bucket it visits (negative: before the
// first bucket opened, an empty one) and how many buckets it visits, in order from that one.
func (w *Window) view(now int64, current bool) (*ring, int64, int64) {
	r := (*ring)(atomic.LoadPointer(&w.cur))
	head := atomic.LoadInt64(&r.head)
	if w.behind(r, head, now) {
		return r, 0, 0
	}
	head, newest := w.span(r, head, now, current)
	oldest := newest - w.size + 1 // newest >= 0 and size >= 1: no overflow
	// head <= newest, so head - oldest < size: no overflow, and a head at MaxInt64 still ends
	return r, oldest, max(head-oldest+1, 0)
}

// span returns the newest bucket written that a read at now visits, and the bucket now falls in.
func (w *Window) span(r *ring, head, now int64, current bool) (int64, int64) {
	newest := head
	if idx, ok := w.index(r, now); ok && idx > head {
		newest = idx
	}
	if !current && newest == head {
		head--
	}
	return head, newest
}

// Sum returns every counter summed over the buckets inside the window at now (the breaker's
// tallies). With current false the bucket now falls in is left out.
func (w *Window) Sum(now int64, current bool) Bucket {
	var sum Bucket
	w.Each(now, current, func(b Bucket) {
		for k := range sum {
			sum[k] += b[k]
		}
	})
	return sum
}
