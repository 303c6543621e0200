package atomicwindow

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/wardgo/ward/internal/stripe"
)

// MaxFields is the most counters a bucket of a [Striped] or a [Batch] carries. A power of two: a
// write masks its counter index with MaxFields−1 so no bounds check can fail while pinned.
const MaxFields = 4

// Bucket is one bucket's counters as a reader sees them, summed (or maxed) over the stripes.
// Only the first fields (as many as the window was made with) are meaningful; the rest are 0.
type Bucket [MaxFields]int64

// Striped is a rolling window of int64 counters safe for any number of goroutines: size buckets
// spanning window, each carrying fields counters, kept once per P (stripe) and summed on read.
//
// A write ([Striped.Add]) pins the goroutine to its P, finds the bucket from a shared head index
// (one atomic load; a division and a compare-and-set only when a bucket boundary is crossed) and
// adds with a plain store into the P's own stripe: no lock, no atomic read-modify-write, no
// allocation. A read ([Striped.Sum], [Striped.Each]) visits every stripe of every bucket in the
// window, so it costs stripes × size loads: cache it, as the breaker and the shedder do.
//
// What a concurrent reader may observe is in the package documentation: a write in progress may be
// missed, never invented. Single-threaded it reads exactly what a [Window] of the same shape reads.
// A Striped must not be copied after first use. The zero value is not usable: use [NewStriped].
type Striped struct {
	_ stripe.NoCopy
	_ [stripe.CacheLine]byte // keep the head off whatever precedes the window in memory

	head   atomic.Int64 // newest bucket written, counted from origin; hot: read by every write
	origin int64        // the instant bucket 0 opened
	width  int64        // nanoseconds per bucket
	size   int64        // buckets in the window
	mask   int64        // ring length - 1 (ring: size rounded up to a power of two)
	fields int          // counters per bucket
	rows   stripe.Table // one row per P: the ring, each bucket a tag and then its counters
	_      [headerPad]byte
}

// header is the size of Striped's fields from head to rows; headerPad rounds it up to whole cache
// lines so the next object in memory never shares the lines the hot path reads.
const (
	header    = 5*8 + unsafe.Sizeof(int(0)) + unsafe.Sizeof(stripe.Table{})
	headerPad = (stripe.CacheLine - header%stripe.CacheLine) % stripe.CacheLine
)

// NewStriped returns an empty concurrent window of size buckets spanning window with fields
// counters per bucket, its first bucket opening at now. It shapes what it is given as [NewWindow]
// does (size held to [1, MaxBuckets], the bucket width raised to 1 ns); fields is held to [1,
// MaxFields]. A Striped numbers its buckets from now in int64: with 1 ns buckets, instants more
// than MaxInt64 nanoseconds after now all fall into the last bucket that numbering holds.
func NewStriped(size int, window time.Duration, fields int, now int64) *Striped {
	size, width := shape(size, window)
	fields = min(max(fields, 1), MaxFields)
	ring := 1 << bits.Len(uint(size-1))
	w := &Striped{
		origin: now,
		width:  width,
		size:   int64(size),
		mask:   int64(ring - 1),
		fields: fields,
	}
	w.rows.Init(ring * (1 + fields))
	return w
}

// Size returns how many buckets the window has.
func (w *Striped) Size() int { return int(w.size) }

// Width returns how much time one bucket covers.
func (w *Striped) Width() time.Duration { return time.Duration(w.width) }

// Fields returns how many counters each bucket carries.
func (w *Striped) Fields() int { return w.fields }

// write returns the bucket index a write at now goes to, moving the head forward when now has
// crossed a bucket boundary. A now before the head bucket opened writes into the head bucket.
func (w *Striped) write(now int64) int64 {
	h := w.head.Load()
	// the fast path: now inside the head bucket (when either side overflows, the slow path decides)
	if d := now - w.origin; d >= 0 && d < (h+1)*w.width {
		return h
	}
	idx, ok := w.index(now)
	if !ok || idx <= h {
		return h
	}
	for h < idx && !w.head.CompareAndSwap(h, idx) {
		h = w.head.Load()
	}
	return idx
}

// index returns the bucket now falls in, counted from origin, and false for an instant before
// origin. The distance is taken in uint64, where it cannot overflow however far apart the instants
// are, and the index saturates at MaxInt64.
func (w *Striped) index(now int64) (int64, bool) {
	if now < w.origin {
		return 0, false
	}
	return int64(min((uint64(now)-uint64(w.origin))/uint64(w.width), math.MaxInt64)), true
}

// Add adds v to counter i of the bucket now falls in. An i outside [0, Fields()) is ignored.
func (w *Striped) Add(now int64, i int, v int64) {
	if uint(i) >= uint(w.fields) {
		return
	}
	idx := w.write(now)
	b := w.slot(w.rows.Pin(), idx)
	if stripe.Load(&b[0]) != idx {
		w.turn(b, idx)
	}
	stripe.Add(&b[1+i&(MaxFields-1)], v) // i < fields <= MaxFields: the mask only tells the compiler
	stripe.Unpin()
}

// Add2 adds v to counter i and u to counter j of the bucket now falls in, with one pin: a
// shedder's pass (a count and a response time) or any pair that belongs together. Out-of-range
// counters are ignored.
func (w *Striped) Add2(now int64, i int, v int64, j int, u int64) {
	if uint(i) >= uint(w.fields) || uint(j) >= uint(w.fields) {
		return
	}
	idx := w.write(now)
	b := w.slot(w.rows.Pin(), idx)
	if stripe.Load(&b[0]) != idx {
		w.turn(b, idx)
	}
	stripe.Add(&b[1+i&(MaxFields-1)], v)
	stripe.Add(&b[1+j&(MaxFields-1)], u)
	stripe.Unpin()
}

// AddAll adds v[k] to counter k of the bucket now falls in, for every counter, with one pin.
func (w *Striped) AddAll(now int64, v Bucket) {
	if w.fields == 0 {
		panic("atomicwindow: Striped used without NewStriped")
	}
	idx := w.write(now)
	b := w.slot(w.rows.Pin(), idx)
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
func (w *Striped) slot(row unsafe.Pointer, idx int64) *[1 + MaxFields]int64 {
	return (*[1 + MaxFields]int64)(unsafe.Add(row, int(idx&w.mask)*(1+w.fields)*8))
}

// turn clears a stripe's bucket that still holds an older bucket's counts, then publishes its new
// tag. The tag is stored atomically after the counters are cleared, so a reader that sees the new
// tag never sees the old counts.
func (w *Striped) turn(b *[1 + MaxFields]int64, idx int64) {
	for k := 1; k <= w.fields; k++ {
		stripe.Store(&b[k], 0)
	}
	atomic.StoreInt64(&b[0], idx)
}

// bucket sums bucket idx over the stripes; a bucket no stripe holds reads as zero.
func (w *Striped) bucket(idx int64) (sum Bucket) {
	for row := range w.rows.All() {
		b := w.slot(row, idx)
		if atomic.LoadInt64(&b[0]) != idx {
			continue
		}
		var v Bucket
		for k := 0; k < w.fields; k++ {
			v[k] = stripe.Load(&b[1+k])
		}
		if atomic.LoadInt64(&b[0]) != idx { // the stripe turned while we read: skip it
			continue
		}
		for k := 0; k < w.fields; k++ {
			sum[k] += v[k]
		}
	}
	return sum
}

// Each visits the buckets still inside the window at now, oldest first, each summed over the
// stripes: the per-bucket maxima and minima a shedder takes are read this way. It visits the same
// buckets as [Window.Each]; with current false the bucket now falls in is left out. Each writes
// nothing and allocates nothing.
func (w *Striped) Each(now int64, current bool, f func(Bucket)) {
	head, newest := w.span(now, current)
	oldest := newest - w.size + 1        // newest >= 0 and size >= 1: no overflow
	for i := int64(0); i < w.size; i++ { // counted, so a head at MaxInt64 still ends the loop
		idx := oldest + i
		if idx > head {
			return
		}
		if idx < 0 { // before the first bucket opened: empty
			f(Bucket{})
			continue
		}
		f(w.bucket(idx))
	}
}

// span returns the newest bucket written that a read at now visits, and the bucket now falls in.
func (w *Striped) span(now int64, current bool) (head, newest int64) {
	head = w.head.Load()
	newest = head
	if idx, ok := w.index(now); ok && idx > head {
		newest = idx
	}
	if !current && newest == head {
		head--
	}
	return head, newest
}

// Sum returns every counter summed over the buckets inside the window at now (the breaker's
// tallies). With current false the bucket now falls in is left out.
func (w *Striped) Sum(now int64, current bool) Bucket {
	var sum Bucket
	w.Each(now, current, func(b Bucket) {
		for k := range sum {
			sum[k] += b[k]
		}
	})
	return sum
}
