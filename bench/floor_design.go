package bench

import (
	"github.com/wardgo/ward/internal/draw"
	"github.com/wardgo/ward/internal/stripe"
	"github.com/wardgo/ward/internal/swin"
)

// The probes of the parts ward's designs add to the basic operations: a window bucket's write, an
// exact sum over the Ps' rows, a CPU reading through the user's function and a draw from a P's
// own state. They are kept apart from floor.go, whose probes only need the internals every
// version of ward has, so that cmd/instructions/beforeafter.sh can lay floor.go over an older
// commit (there these probes are absent, and only the floors made of them go unprinted).
func init() { FloorProbes.Impls = append(FloorProbes.Impls, designProbes...) }

// floorRows is the table the sum probe reads: two words a row (calls in and calls out), as a
// per-P count of calls in flight keeps them.
var floorRows = func() *stripe.Table {
	t := new(stripe.Table)
	t.Init(2)
	return t
}()

// floorWindow is the window the bucket probe writes: 10 buckets of 100 ms, one field; every write
// is at floorInstant, a coarse reading the window's per-P memo knows after the first.
var floorWindow = swin.New(10, 1e8, 1, 0)

var floorInstant int64 = 5e7

// floorState is the generator state the split probe advances: a word of a per-P row, as a
// breaker keeps its P's draw state beside its counts.
var floorState int64

// floorCPU is the CPU reading the cpu probe calls: a function given by the user, called through
// its value, as a shedder built WithCPU calls it.
var floorCPU = func() func() int {
	cpu := 300
	return func() int { return cpu }
}()

var designProbes = []Impl{
	{"bucket", "one pinned per-P write that also counts in the P's bucket of a sliding window at an instant the window's memo knows (a coarse reading): pin's write and the bucket's", func() Call {
		t, w := floorTable, floorWindow
		return func(work func(), _ Outcome) bool {
			r := t.Current()
			if p := stripe.PinRow(r); uint(p) < uint(r.Len()) {
				row := r.Row(p)
				// the window's common case written out, as a settle writes it: the P's memo
				// names the head bucket at this instant, and the count goes into its copy
				if wrows, h := w.Rows(); uint(p) < uint(wrows.Len()) && w.At(wrows.Row(p), h, floorInstant) {
					stripe.Add(w.Counter(wrows.Row(p), 0), 1)
					stripe.Add((*int64)(row), 1)
					stripe.Unpin()
					work()
					return true
				}
			}
			stripe.Unpin()
			w.AddCount(floorInstant, 0, 1, t, 0, 0)
			work()
			return true
		}
	}},
	{"sum", "an exact count summed over every P's row (calls in less calls out), at the run's GOMAXPROCS", func() Call {
		t := floorRows
		return func(work func(), _ Outcome) bool {
			var n int64
			for r := t.Current(); r != nil; r = r.Prev() {
				for p := range r.Len() {
					w := (*[2]int64)(r.Row(p))
					n += stripe.Load(&w[0]) - stripe.Load(&w[1])
				}
			}
			floorSink += n
			work()
			return true
		}
	}},
	{"cpu", "a CPU reading through the function the user gave (an indirect call that returns an int)", func() Call {
		return func(work func(), _ Outcome) bool { floorSink += int64(floorCPU()); work(); return true }
	}},
	{"split", "one draw in [0, 1) from a P's own splitmix64 state, a word of its row (draw.Split: a few arithmetic instructions, no call)", func() Call {
		return func(work func(), _ Outcome) bool {
			floorSink += int64(draw.Split(&floorState) * 1024)
			work()
			return true
		}
	}},
	{"admit", "an admission as a call out of line that returns a promise (three words) and an error, the error checked: a path whose admission pins cannot inline it (TestPinnedSectionsCallOut)", func() Call {
		a := &floorAdmitter{}
		return func(work func(), _ Outcome) bool {
			p, err := a.admit()
			if err != nil {
				return false
			}
			work()
			floorSink += p.start
			return true
		}
	}},
	{"settle", "a settle as a call out of line with two words and no result (a promise's settle, or a window's write): a path whose settle pins cannot inline it", func() Call {
		a := &floorAdmitter{}
		return func(work func(), _ Outcome) bool {
			work()
			a.settle(floorInstant, true)
			return true
		}
	}},
}

// floorAdmitter and floorPromise are the admit and settle probes' calls: the least an admission of
// ward's shape (Allow returning a promise and an error) and a settle cost as calls, with nothing
// inside them.
type floorAdmitter struct{ settled int64 }

type floorPromise struct {
	a     *floorAdmitter
	start int64
	timed bool
}

//go:noinline
func (a *floorAdmitter) admit() (floorPromise, error) { return floorPromise{a: a}, nil }

//go:noinline
func (a *floorAdmitter) settle(int64, bool) { a.settled++ }

// floorPinned is the least pinned section: pin, a plain add in the P's row, unpin.
// TestPinnedSectionsCallOut shows the compiler will not inline it in the build a user's program
// gets (gc, ward's default tags, no profile-guided optimization): the pin and the unpin are calls
// of the runtime's, and two calls cost more than the inliner's budget, so a caller reaches any
// pinned section through a call of its own.
func floorPinned(t *stripe.Table) {
	r := t.Current()
	if w := r.Row(stripe.PinRow(r)); w != nil {
		stripe.Add((*int64)(w), 1)
	}
	stripe.Unpin()
}
