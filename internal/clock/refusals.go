package clock

import (
	"unsafe"

	"github.com/wardgo/ward/internal/stripe"
)

// Refusals counts a concurrent type's refusals per P and paces the clock reads of a refusal path
// that otherwise decides with a [Coarse] reading. A refusal made while traffic flows needs no
// clock: the calls that get through keep the Coarse reading fresh. A refusal made while nothing
// gets through (every call refused, or calls seconds apart) would decide on an instant that never
// moves, so a breaker's probe would never fire and a shedder's cool-down never end.
//
// [Refusals.Refuse] therefore asks for a clock read on a refusal that finds the Coarse reading
// moved since the P's previous refusal, and on every 8th refusal a P makes (its 1st, 9th, 17th,
// …, counted over all its refusals), whatever the reading. At low traffic every refusal reads the
// clock: each read moves the reading, so the next refusal finds it moved. A flood of refusals at
// one reading reads it once in eight, and once more on each P after a read moves the reading. A
// read that finds time moved by the granularity or more moves the reading for every P, and every
// P's next refusal reads again. So after a burst of refusals, at most 7 more refusals on a P
// decide on the instant the burst ended with, whatever time has passed since.
//
// The zero value is not usable: call Init before first use. It must not be copied after first
// use.
type Refusals struct{ t stripe.Table }

// countRow is a row's words: refusals in all, and the reading the latest was counted at.
type countRow struct{ total, mark int64 }

const rWords = int(unsafe.Sizeof(countRow{}) / 8)

// Init makes the per-P rows up front rather than on the first refusal.
func (r *Refusals) Init() { r.t.Init(rWords) }

// Refuse counts a refusal decided at the Coarse reading seen, and reports whether the caller
// should read the clock now, see whether time has moved, and decide again.
func (r *Refusals) Refuse(seen int64) bool {
	rows := r.Rows() // Table.Pin, written out: no call on a refusal
	row := rows.Row(stripe.PinRow(rows))
	if row == nil { // GOMAXPROCS grew past the rows: Pin grows them
		stripe.Unpin()
		row = r.t.Pin()
	}
	read := Count(row, seen)
	stripe.Unpin()
	return read
}

// Rows returns the current per-P rows, for a hot path that writes Refuse out to save a call:
// pin with stripe.PinRow, and where Row is nil unpin and call Refuse; else Count on the row,
// then stripe.Unpin.
func (r *Refusals) Rows() *stripe.Rows { return r.t.Current() }

// Count is Refuse's work on a row of a Refusals that its caller has pinned. It is small enough
// to inline into a refusal path: an add, a load and a compare, and a store when the reading has
// moved.
func Count(row unsafe.Pointer, seen int64) bool {
	r := (*countRow)(row)
	if stripe.Plain { // the row's one writer: Add as one line, with no no-op to mark where Add was inlined
		stripe.Store(&r.total, stripe.Load(&r.total)+1)
	} else {
		stripe.Add(&r.total, 1) // a row may have more than one writer
	}
	if stripe.Load(&r.mark) != seen {
		stripe.Store(&r.mark, seen)
		return true
	}
	return (stripe.Load(&r.total)-1)&7 == 0 // the 1st, 9th, 17th, …
}

// Undo takes back the last refusal counted on this P: the caller read the clock, decided again at
// the fresh instant and let the call through after all.
func (r *Refusals) Undo() {
	Uncount(r.t.Pin())
	stripe.Unpin()
}

// Load returns the refusals counted, summed over the Ps.
func (r *Refusals) Load() int64 {
	var n int64
	for row := range r.t.All() {
		n += Counted(row)
	}
	return n
}
