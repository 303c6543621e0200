package atomicwindow

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/wardgo/ward/internal/contract"
	"github.com/wardgo/ward/internal/stripe"
)

// Kind says how a [Batch] combines a counter's values: summed, or the largest kept.
type Kind uint8

const (
	// Sum adds every value (a count, a total response time).
	Sum Kind = iota
	// Max keeps the largest value (the most calls in flight; 1 if any call dropped). The Max of no
	// values is 0.
	Max
)

// Batch is the untimed sibling of [Striped]: one bucket of up to [MaxFields] counters per P,
// written without atomic read-modify-write and folded as a whole by whoever closes the window:
// a window of samples whose counters are sums and maxima, reset at each fold.
//
// [Batch.Add] pins the goroutine to its P and combines its values into the P's stripe.
// [Batch.Fold] starts a new generation (one atomic add) and combines every stripe still tagged
// with the old one: a fold-and-reset with no stripe written by anyone but its owner. A write that
// began before a Fold and lands after it is lost, never counted twice. [Batch.Peek] folds without
// starting a new generation.
//
// A Batch must not be copied after first use. The zero value is not usable: use [NewBatch].
type Batch struct {
	_ stripe.NoCopy
	_ [stripe.CacheLine]byte // keep the header off whatever precedes the batch in memory
	batchHeader
	_ [batchPad]byte // and off whatever follows it
}

// batchHeader is what every write of a Batch reads.
type batchHeader struct {
	gen    atomic.Int64 // the generation writes go into; hot: read by every write
	fields int
	rows   stripe.Table // one row per P: the generation tag, then the counters
	kinds  [MaxFields]Kind
}

// batchPad rounds the header up to whole cache lines, sized from the header itself.
const batchPad = (stripe.CacheLine - unsafe.Sizeof(batchHeader{})%stripe.CacheLine) % stripe.CacheLine

// NewBatch returns an empty batch whose counters combine as kinds say, one Kind per counter; no
// kinds at all gives one Sum counter. More than [MaxFields] kinds, or a kind that is neither Sum
// nor Max, is an error matching [ErrInvalid] that names the argument.
func NewBatch(kinds ...Kind) (*Batch, error) {
	if len(kinds) == 0 {
		kinds = []Kind{Sum}
	}
	if len(kinds) > MaxFields {
		return nil, contract.Field(ErrInvalid, "kinds", len(kinds), "at most 4 (MaxFields)")
	}
	for i, k := range kinds {
		if k != Sum && k != Max {
			return nil, contract.Field(ErrInvalid, fmt.Sprintf("kinds[%d]", i), k, "Sum or Max")
		}
	}
	b := &Batch{batchHeader: batchHeader{fields: len(kinds)}}
	copy(b.kinds[:], kinds)
	b.rows.Init(1 + MaxFields)
	return b, nil
}

// Fields returns how many counters the batch carries.
func (b *Batch) Fields() int { return b.fields }

// Add combines v (one value per counter; the ones past Fields are ignored) into the current
// generation.
//
// A Batch not made by [NewBatch] panics here, before anything is pinned.
func (b *Batch) Add(v Bucket) {
	if b.fields == 0 {
		panic("atomicwindow: Batch used without NewBatch")
	}
	g := b.gen.Load()
	s := (*[1 + MaxFields]int64)(b.rows.Pin())
	if stripe.Load(&s[0]) != g {
		for k := 1; k <= MaxFields; k++ {
			stripe.Store(&s[k], 0)
		}
		atomic.StoreInt64(&s[0], g)
	}
	for k := 0; k < b.fields && k < MaxFields; k++ { // the second test lets the compiler drop bounds checks while pinned
		if b.kinds[k] == Sum {
			stripe.Add(&s[1+k], v[k])
		} else if v[k] > stripe.Load(&s[1+k]) {
			stripe.Store(&s[1+k], v[k])
		}
	}
	stripe.Unpin()
}

// Peek returns the current generation's counters combined over the stripes, resetting nothing.
func (b *Batch) Peek() Bucket { return b.fold(b.gen.Load()) }

// Fold returns the current generation's counters combined over the stripes and starts a new,
// empty generation. Two concurrent Folds each get a generation of their own; a write is counted by
// at most one of them.
func (b *Batch) Fold() Bucket { return b.fold(b.gen.Add(1) - 1) }

func (b *Batch) fold(g int64) Bucket {
	var out Bucket
	for row := range b.rows.All() {
		w := (*[1 + MaxFields]int64)(row)
		if atomic.LoadInt64(&w[0]) != g {
			continue
		}
		var v Bucket
		for k := 0; k < b.fields; k++ {
			v[k] = stripe.Load(&w[1+k])
		}
		if atomic.LoadInt64(&w[0]) != g {
			continue
		}
		for k := 0; k < b.fields; k++ {
			if b.kinds[k] == Sum {
				out[k] += v[k]
			} else {
				out[k] = max(out[k], v[k])
			}
		}
	}
	return out
}
