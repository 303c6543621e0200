package bench

import (
	"sync/atomic"

	"github.com/wardgo/ward/internal/clock"
	"github.com/wardgo/ward/internal/draw"
	"github.com/wardgo/ward/internal/stripe"
)

// The floor: the irreducible operations ward's hot paths are made of, each measured alone by a
// probe with the same Call shape as the comparisons, so that cmd/instructions counts them the way
// it counts a path (make bench-instructions). A probe's cost over the "call" probe's is the cost of
// its one operation; a path's floor is the call plus the operations its design cannot do without
// (FloorOf), and its distance to the floor is what a cut can still take.
//
// The probes use ward's own primitives (the bench module sits under the core's import path, so the
// core's internal packages are reachable): the clock ward reads, the per-P table ward writes and the
// draw ward makes, so that a floor is exactly what a path's own parts cost.

// floorSink keeps a probe's result live, so the compiler cannot drop the operation measured.
var floorSink int64

// floorWord is the word the CAS and add probes move: on a cache line of its own, as ward pads the
// shared words its hot paths move.
var floorWord struct {
	_ [stripe.CacheLine]byte
	n atomic.Int64
	_ [stripe.CacheLine - 8]byte
}

var floorTable = func() *stripe.Table {
	t := new(stripe.Table)
	t.Init(1)
	return t
}()

// FloorProbes are the irreducible operations, each alone in a Call. "call" is the Call itself
// (the closure call, the empty work, the return): every other probe and every path includes it.
var FloorProbes = Comparison{
	Name:         "Floor",
	WantAdmitted: 1,
	Impls: []Impl{
		{"call", "the Call alone: closure call, the empty work, return true", func() Call {
			return func(work func(), _ Outcome) bool { work(); return true }
		}},
		{"clock", "one monotonic clock read, ward's clock (time.Since of a process epoch)", func() Call {
			return func(work func(), _ Outcome) bool { floorSink = clock.Now(); work(); return true }
		}},
		{"pin", "one pinned per-P write, ward's stripe table: pin, find the P's row, a plain add, unpin", func() Call {
			t := floorTable
			return func(work func(), _ Outcome) bool {
				r := t.Current()
				if w := r.Row(stripe.PinRow(r)); w != nil {
					stripe.Add((*int64)(w), 1)
					stripe.Unpin()
				} else {
					stripe.Unpin()
					stripe.Add((*int64)(t.Pin()), 1)
					stripe.Unpin()
				}
				work()
				return true
			}
		}},
		{"cas", "one compare-and-set that succeeds: an atomic load, then the CAS, on a padded word", func() Call {
			w := &floorWord.n
			return func(work func(), _ Outcome) bool {
				for {
					n := w.Load()
					if w.CompareAndSwap(n, n+1) {
						break
					}
				}
				work()
				return true
			}
		}},
		{"add", "one atomic add on a padded word (a release of an exact count)", func() Call {
			w := &floorWord.n
			return func(work func(), _ Outcome) bool { w.Add(1); work(); return true }
		}},
		{"draw", "one random draw in [0, 1), ward's default source (math/rand/v2, the runtime's per-M ChaCha8)", func() Call {
			return func(work func(), _ Outcome) bool {
				floorSink += int64(draw.Float64() * 1024)
				work()
				return true
			}
		}},
	},
}

// Part is one operation of a floor: the probe named Op, Times per call (a fraction for work done
// on one call in several).
type Part struct {
	Op    string
	Times float64
}

// Floor is what one comparison's ward path cannot do without, and the target the issue sets it.
type Floor struct {
	Parts  []Part
	Why    string   // why these parts and no fewer
	Target float64  // instructions per call the path is held to (issue 25)
	Also   []string // ward rows besides "ward" the floor is the floor of
}

// Floors maps each comparison to the floor of its ward path, and "comparison/impl" to the floor
// of a ward row (one of the comparison's Also) whose design differs from the ward row's. Every part is something the design
// promises and the path cannot keep without: an exact count moves by an atomic read-modify-write,
// a sample or a count that may lose but never invent goes to a per-P stripe, a decision about time
// reads the clock, a probabilistic refusal draws.
var Floors = map[string]Floor{
	"Adaptive": {
		Parts:  []Part{{"call", 1}, {"admit", 1}, {"settle", 1}, {"pin", 2}, {"cas", 1}, {"add", 1}, {"clock", 2.0 / 8}},
		Why:    "an exact in-flight count held as per-P credits, so that admissions on different Ps share no word (one shared word would be call + cas + add + clock/4, and every core would fight over it): an acquire takes its P's credit by a CAS and counts itself in a pinned per-P write; a settle counts its outcome in a pinned per-P write and gives the credit back by an atomic add (a pinned section at each end: the admission and the settle are calls out of line); one call in 8 timed (2 clock reads), its sample written in the settle's pinned section",
		Target: 120,
	},
	"Breaker": {
		Parts:  []Part{{"call", 1}, {"settle", 1}, {"clock", 1}, {"pin", 1}},
		Why:    "the ratio is cached, so Allow only loads it (and could inline); Pass counts the success in the bucket of its instant: a clock read and a per-P write, in a settle out of line",
		Target: 150,
		Also:   []string{"ward-gozero"},
	},
	"BreakerRefuse": {
		Parts:  []Part{{"call", 1}, {"admit", 1}, {"pin", 1}, {"clock", 1.0 / 8}},
		Why:    "tripped (the default policy): refused at once, the refusal counted in a per-P write (so the refusal comes back from a call out of line); under a flood the clock is read on one refusal in 8, so the probe fires however rarely calls come",
		Target: 100,
		Also:   []string{"ward-gozero"},
	},
	"BreakerRefuse/ward-gozero": {
		Parts:  []Part{{"call", 1}, {"admit", 1}, {"bucket", 1}, {"split", 1}, {"clock", 1.0 / 8}},
		Why:    "throttled (go-zero's policy): a draw from the P's own generator in its row, the refusal counted in that row and its drop in the P's window bucket (the ratio the throttle reads is made of drops) in one pinned section, in a call out of line; the clock read on one refusal in 8",
		Target: 100,
	},
	"Shed": {
		Parts:  []Part{{"call", 1}, {"admit", 1}, {"settle", 1}, {"cpu", 1}, {"pin", 1}, {"bucket", 1}, {"clock", 2.0 / 8}, {"sum", 1.0 / 8}},
		Why:    "the CPU reading through the user's function; calls in flight per P: a per-P write in, and one out that also counts the pass in its P's bucket of the window (every pass counts toward the busiest bucket): a pinned section at each end, the admission and the settle calls out of line; one call in 8 timed (2 clock reads) and its settle moves the average toward the exact in-flight sum",
		Target: 150,
	},
	"ShedRefuse": {
		Parts:  []Part{{"call", 1}, {"admit", 1}, {"cpu", 1}, {"sum", 1}, {"pin", 1}, {"clock", 1.0 / 8}},
		Why:    "the CPU reading and the cached capacity decide, against the exact in-flight sum over the Ps' rows; the refusal is counted per P (so it comes back from a call out of line); a flood of refusals reads the clock once in 8 (so a cool-down ends when every call is refused)",
		Target: 100,
	},
	"Rate": {
		Parts:  []Part{{"call", 1}, {"clock", 1}, {"cas", 1}},
		Why:    "GCRA: the time of the call against the shared theoretical arrival time, moved by one CAS (no pin: the call could inline)",
		Target: 130,
	},
	"RateBurst": {
		Parts:  []Part{{"call", 1}, {"clock", 1}, {"cas", 1}},
		Why:    "as Rate: one caller never collides, so no lease is made",
		Target: 130,
	},
	"RateRefuse": {
		Parts:  []Part{{"call", 1}, {"clock", 1}},
		Why:    "a refusal needs the time of the call against the arrival time (a load); nothing is written",
		Target: 100,
	},
	"Window": {
		Parts:  []Part{{"call", 1}, {"settle", 1}, {"clock", 1}, {"pin", 1}},
		Why:    "the write's instant picks its bucket (the clock read, done by the caller here) and the count goes to a per-P stripe, in a write out of line",
		Target: 100,
	},
}

// Refusals are the comparisons whose ward path must also cost less than every peer's (issue 25).
var Refusals = map[string]bool{"BreakerRefuse": true, "ShedRefuse": true, "RateRefuse": true}
