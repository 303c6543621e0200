package atomicwindow

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/wardgo/ward/internal/contract"
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
// Instants are read as [Window] reads them: a write slightly before the head bucket goes into it;
// a write more than the whole window before it is the clock having jumped back, and the window
// restarts empty at that instant (the one write that allocates: a fresh set of stripes).
//
// What a concurrent reader may observe is in the package documentation: a write in progress may be
// missed, never invented. Single-threaded it reads exactly what a [Window] of the same shape reads.
// A Striped must not be copied after first use. The zero value is not usable: use [NewStriped].
type Striped struct {
	_ stripe.NoCopy
	_ [stripe.CacheLine]byte // keep the header off whatever precedes the window in memory
	stripedHeader
	_ [stripedPad]byte // and off whatever follows it
}

// stripedHeader is what every write and read of a Striped reads; only cur is ever written, when
// the clock jumps back.
type stripedHeader struct {
	cur    atomic.Pointer[ring] // the stripes and the head they are numbered from
	width  int64                // nanoseconds per bucket
	size   int64                // buckets in the window
	mask   int64                // ring length - 1 (ring: size rounded up to a power of two)
	fields int                  // counters per bucket
	reach  uint64               // width × size: how far before the head a write is still late, not a jump
}

// ring is a Striped's stripes and the head index numbered from their origin; a jump of the clock
// back replaces it whole.
type ring struct {
	_ [stripe.CacheLine]byte
	ringHeader
	_ [ringPad]byte
}

type ringHeader struct {
	head   atomic.Int64 // newest bucket written, counted from origin; hot: read by every write
	origin int64        // the instant bucket 0 opened
	rows   stripe.Table // one row per P: the ring, each bucket a tag and then its counters
}

// The pads round each header up to whole cache lines, sized from the header itself.
const (
	stripedPad = (stripe.CacheLine - unsafe.Sizeof(stripedHeader{})%stripe.CacheLine) % stripe.CacheLine
	ringPad    = (stripe.CacheLine - unsafe.Sizeof(ringHeader{})%stripe.CacheLine) % stripe.CacheLine
)

// NewStriped returns an empty concurrent window of size buckets spanning window with fields
// counters per bucket, its first bucket opening at now. size and window are checked as
// [NewWindow] checks them, and fields must be in [1, [MaxFields]]; anything else is an error
// matching [ErrInvalid] that names the argument. A Striped numbers its buckets from now in int64:
// with 1 ns buckets, instants more than MaxInt64 nanoseconds after now all fall into the last
// bucket that numbering holds.
func NewStriped(size int, window time.Duration, fields int, now int64) (*Striped, error) {
	width, err := shape(size, window)
	if err != nil {
		return nil, err
	}
	if fields < 1 || fields > MaxFields {
		return nil, contract.Field(ErrInvalid, "fields", fields, "in [1, 4] (MaxFields)")
	}
	w := &Striped{stripedHeader: stripedHeader{
		width:  width,
		size:   int64(size),
		mask:   int64(1<<bits.Len(uint(size-1)) - 1),
		fields: fields,
		reach:  uint64(width) * uint64(size),
	}}
	w.cur.Store(w.newRing(now))
	return w, nil
}

// newRing returns empty stripes whose bucket 0 opens at now.
func (w *Striped) newRing(now int64) *ring {
	r := &ring{ringHeader: ringHeader{origin: now}}
	r.rows.Init(int(w.mask+1) * (1 + w.fields))
	return r
}

// Size returns how many buckets the window has.
func (w *Striped) Size() int { return int(w.size) }

// Width returns how much time one bucket covers.
func (w *Striped) Width() time.Duration { return time.Duration(w.width) }

// Fields returns how many counters each bucket carries.
func (w *Striped) Fields() int { return w.fields }

// write returns the stripes and the bucket index a write at now goes to, moving the head forward
// when now has crossed a bucket boundary. A now before the head bucket opened writes into the
// head bucket, unless the clock jumped back ([Striped.behind]): then fresh stripes start at now.
func (w *Striped) write(now int64) (*ring, int64) {
	r := w.cur.Load()
	h := r.head.Load()
	// the fast path: now inside the head bucket, or before it by no more than the window (a
	// reading a moment older than another writer's); distances in uint64, where they cannot
	// overflow
	if d, opening := uint64(now)-uint64(r.origin), uint64(h)*uint64(w.width); now >= r.origin && d < opening+uint64(w.width) && d+w.reach >= opening {
		return r, h
	}
	idx, ok := w.index(r, now)
	if ok && idx > h {
		for h < idx && !r.head.CompareAndSwap(h, idx) {
			h = r.head.Load()
		}
		return r, idx
	}
	if !w.behind(r, h, now) {
		return r, h
	}
	if fresh := w.newRing(now); !w.cur.CompareAndSwap(r, fresh) {
		return w.write(now) // another writer restarted it first: write into theirs
	}
	return w.cur.Load(), 0
}

// behind reports whether now lies more than the whole window before head bucket h opened, as
// [Window] decides it: every bucket then lies in now's future.
func (w *Striped) behind(r *ring, h, now int64) bool {
	opening := int64(uint64(r.origin) + uint64(h)*uint64(w.width))
	return now < opening && uint64(opening)-uint64(now) > w.reach
}

// index returns the bucket now falls in, counted from origin, and false for an instant before
// origin. The distance is taken in uint64, where it cannot overflow however far apart the instants
// are, and the index saturates at MaxInt64.
func (w *Striped) index(r *ring, now int64) (int64, bool) {
	if now < r.origin {
		return 0, false
	}
	return int64(min((uint64(now)-uint64(r.origin))/uint64(w.width), math.MaxInt64)), true
}

// Add adds v to counter i of the bucket now falls in. An i outside [0, Fields()) is ignored.
func (w *Striped) Add(now int64, i int, v int64) {
	if uint(i) >= uint(w.fields) {
		return
	}
	r, idx := w.write(now)
	b := w.slot(r.rows.Pin(), idx)
	if stripe.Load(&b[0]) != idx {
		w.turn(b, idx)
	}
	stripe.Add(&b[1+i&(MaxFields-1)], v) // i < fields <= MaxFields: the mask only tells the compiler
	stripe.Unpin()
}

// AddAll adds v[k] to counter k of the bucket now falls in, for every counter, with one pin.
func (w *Striped) AddAll(now int64, v Bucket) {
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
func (w *Striped) bucket(r *ring, idx int64) (sum Bucket) {
	for row := range r.rows.All() {
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
// buckets as [Window.Each]; with current false the bucket now falls in is left out, and a now more
// than the whole window before the head bucket visits nothing. Each writes nothing and allocates
// nothing.
func (w *Striped) Each(now int64, current bool, f func(Bucket)) {
	r := w.cur.Load()
	head := r.head.Load()
	if w.behind(r, head, now) {
		return
	}
	head, newest := w.span(r, head, now, current)
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
		f(w.bucket(r, idx))
	}
}

// span returns the newest bucket written that a read at now visits, and the bucket now falls in.
func (w *Striped) span(r *ring, head, now int64, current bool) (int64, int64) {
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
func (w *Striped) Sum(now int64, current bool) Bucket {
	var sum Bucket
	w.Each(now, current, func(b Bucket) {
		for k := range sum {
			sum[k] += b[k]
		}
	})
	return sum
}
