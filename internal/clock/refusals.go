package clock

import "github.com/wardgo/ward/internal/stripe"

// Refusals counts a concurrent type's refusals per P and paces the clock reads of a refusal path
// that otherwise decides with a [Coarse] reading. A refusal made while traffic flows needs no
// clock: the calls that get through keep the Coarse reading fresh. A refusal made while nothing
// gets through (every call refused, or calls seconds apart) would decide on an instant that never
// moves, so a breaker's probe would never fire and a shedder's cool-down never end.
//
// [Refusals.Refuse] therefore asks for a clock read on the first refusal a P makes after the Coarse
// reading moved, then on its 2nd, 4th, 8th … refusal while the reading stays where it is. At low
// traffic every refusal reads the clock (each read moves the reading, which restarts the count); a
// flood of refusals reads it about log2(refusals per granularity) times per P per granularity, and
// the instant a refusal decides on is never staler than the span since the last such read, which
// is at most the time the P took to make as many refusals again.
//
// The zero value is usable; Init makes the per-P rows up front. It must not be copied after first
// use.
type Refusals struct{ t stripe.Table }

// row words: refusals in all, refusals since the reading moved, the reading they were counted at.
const (
	rTotal = iota
	rSince
	rMark
	rWords
)

// Init makes the per-P rows up front rather than on the first refusal.
func (r *Refusals) Init() { r.t.Init(rWords) }

// Refuse counts a refusal decided at the Coarse reading seen, and reports whether the caller
// should read the clock now, see whether time has moved, and decide again.
func (r *Refusals) Refuse(seen int64) bool {
	w := (*[rWords]int64)(r.t.Pin())
	stripe.Add(&w[rTotal], 1)
	k := int64(1)
	if stripe.Load(&w[rMark]) == seen {
		k = stripe.Load(&w[rSince]) + 1
	} else {
		stripe.Store(&w[rMark], seen)
	}
	stripe.Store(&w[rSince], k)
	stripe.Unpin()
	return k&(k-1) == 0
}

// Undo takes back the last refusal counted on this P: the caller read the clock, decided again at
// the fresh instant and let the call through after all.
func (r *Refusals) Undo() {
	stripe.Add(&(*[rWords]int64)(r.t.Pin())[rTotal], -1)
	stripe.Unpin()
}

// Load returns the refusals counted, summed over the Ps.
func (r *Refusals) Load() int64 {
	var n int64
	for row := range r.t.All() {
		n += stripe.Load(&(*[rWords]int64)(row)[rTotal])
	}
	return n
}
