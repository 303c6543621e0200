package atomicwindow

import (
	"time"

	"github.com/wardgo/ward/internal/contract"
	"github.com/wardgo/ward/internal/swin"
)

// MaxFields is the most counters a bucket of a [Striped] or a [Batch] carries. A power of two: a
// write masks its counter index with MaxFields−1 so no bounds check can fail while pinned.
const MaxFields = swin.MaxFields

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
	w swin.Window
}

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
	s := new(Striped)
	s.w.Init(size, width, fields, now)
	return s, nil
}

// Size returns how many buckets the window has.
func (w *Striped) Size() int { return w.w.Size() }

// Width returns how much time one bucket covers.
func (w *Striped) Width() time.Duration { return time.Duration(w.w.Width()) }

// Fields returns how many counters each bucket carries.
func (w *Striped) Fields() int { return w.w.Fields() }

// Add adds v to counter i of the bucket now falls in. An i outside [0, Fields()) is ignored.
func (w *Striped) Add(now int64, i int, v int64) { w.w.Add(now, i, v) }

// AddAll adds v[k] to counter k of the bucket now falls in, for every counter, with one pin.
func (w *Striped) AddAll(now int64, v Bucket) { w.w.AddAll(now, v) }

// Each visits the buckets still inside the window at now, oldest first, each summed over the
// stripes: the per-bucket maxima and minima a shedder takes are read this way. It visits the same
// buckets as [Window.Each]; with current false the bucket now falls in is left out, and a now more
// than the whole window before the head bucket visits nothing. Each writes nothing and allocates
// nothing.
func (w *Striped) Each(now int64, current bool, f func(Bucket)) {
	w.w.Each(now, current, func(b swin.Bucket) { f(Bucket(b)) })
}

// Sum returns every counter summed over the buckets inside the window at now (the breaker's
// tallies). With current false the bucket now falls in is left out.
func (w *Striped) Sum(now int64, current bool) Bucket { return Bucket(w.w.Sum(now, current)) }
