// Package tally keeps the cumulative counts every ward type reports through ward.Counts, and the
// latency histogram of ward.Latency, in per-P rows: a count is a plain add on the calling P's own
// cache line while the goroutine is pinned to its P (see internal/stripe), and a reader folds the
// rows. A type that already has per-P rows of its own keeps the words in them, at an offset of
// its choosing, and uses [AddRow], [ObserveRow], [CountsOf] and [LatencyOf]; the others use a
// [Table].
package tally

import (
	"iter"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/wardgo/ward"
	"github.com/wardgo/ward/internal/stripe"
)

// The count words, in this order from a row's offset.
const (
	Admitted = iota
	Refused
	Abandoned
	Passed
	Failed
	Ignored
	Words // how many count words
)

// LatencyWords is the words a latency histogram takes: the sum of the response times, then one
// word per bucket.
const LatencyWords = 1 + ward.LatencyBuckets

// Table is a per-P table of counts, for a type with no per-P rows of its own. It must be Init'ed
// before the first Add, and not copied after. A zero Table reads zero counts.
type Table struct {
	t stripe.Table
}

// Init makes the rows: the count words.
func (t *Table) Init() { t.t.Init(Words) }

// Add counts one in word i (one of the constants above) of the calling P's row.
func (t *Table) Add(i int) {
	r := t.t.Current() // Pin's work written out: no call on the common path
	if row := r.Row(stripe.PinRow(r)); row != nil {
		AddRow(row, uintptr(i))
		stripe.Unpin()
		return
	}
	stripe.Unpin()
	AddRow(t.t.Pin(), uintptr(i)) // GOMAXPROCS grew past the rows: Pin grows them
	stripe.Unpin()
}

// AddPair counts one in words i and j of the calling P's row, with one pin: a settle that counts
// its admission with its outcome.
func (t *Table) AddPair(i, j int) {
	r := t.t.Current()
	row := r.Row(stripe.PinRow(r))
	if row == nil { // GOMAXPROCS grew past the rows: Pin grows them
		stripe.Unpin()
		row = t.t.Pin()
	}
	AddRow(row, uintptr(i))
	AddRow(row, uintptr(j))
	stripe.Unpin()
}

// Counts folds every row's counts.
func (t *Table) Counts() ward.Counts { return CountsOf(t.t.All(), 0) }

// AddRow counts one in word i of row, which the caller is pinned to (or owns). It cannot panic.
//
//go:nosplit
func AddRow(row unsafe.Pointer, i uintptr) {
	stripe.Add((*int64)(unsafe.Add(row, i*8)), 1)
}

// ObserveRow adds a response time of d nanoseconds (0 when negative) to the histogram at word off
// of row, which the caller is pinned to. It cannot panic: the bucket is within the histogram by
// construction.
func ObserveRow(row unsafe.Pointer, off uintptr, d int64) {
	d = max(d, 0)
	stripe.Add((*int64)(unsafe.Add(row, off*8)), d)
	b := uintptr(ward.LatencyBucket(d))
	stripe.Add((*int64)(unsafe.Add(row, (off+1+b)*8)), 1)
}

// CountsOf folds the count words at word off of every row.
func CountsOf(rows iter.Seq[unsafe.Pointer], off uintptr) ward.Counts {
	var s [Words]int64
	for row := range rows {
		w := (*[Words]int64)(unsafe.Add(row, off*8))
		for i := range s {
			s[i] += stripe.Load(&w[i])
		}
	}
	return ward.Counts{
		Admitted:  pos(s[Admitted]),
		Refused:   pos(s[Refused]),
		Abandoned: pos(s[Abandoned]),
		Passed:    pos(s[Passed]),
		Failed:    pos(s[Failed]),
		Ignored:   pos(s[Ignored]),
	}
}

// LatencyOf folds the histograms at word off of every row.
func LatencyOf(rows iter.Seq[unsafe.Pointer], off uintptr) ward.Latency {
	var s [LatencyWords]int64
	for row := range rows {
		w := (*[LatencyWords]int64)(unsafe.Add(row, off*8))
		for i := range s {
			s[i] += stripe.Load(&w[i])
		}
	}
	var l ward.Latency
	l.Sum = time.Duration(s[0])
	for i := range l.Buckets {
		l.Buckets[i] = pos(s[1+i])
		l.Count += l.Buckets[i]
	}
	return l
}

// pos is a folded count as a uint64: a count that an Undo took back while a reader folded may
// read -1 for an instant.
func pos(n int64) uint64 { return uint64(max(n, 0)) }

// Mono keeps a count that a reader folds monotonic across readings: a count that a call adds and
// then takes back (a refusal decided again and admitted) may be read with the add and without the
// take-back, and a counter must never be seen to go down. The zero Mono is ready.
type Mono struct{ last atomic.Uint64 }

// Of returns n, or the largest count read before if that is larger.
func (m *Mono) Of(n uint64) uint64 {
	for {
		l := m.last.Load()
		if n <= l {
			return l
		}
		if m.last.CompareAndSwap(l, n) {
			return n
		}
	}
}

// Pos returns a folded count as a uint64, 0 when negative.
func Pos(n int64) uint64 { return pos(n) }
