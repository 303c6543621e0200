package ward

import (
	"context"
	"strconv"
	"sync"

	"github.com/wardgo/ward/internal/contract"
)

// Chain is guards composed: a call goes ahead only if every guard admits it, asked in the order
// given, and its outcome settles every admission. Build it with [With].
//
// Order the guards so that the cheapest refusal comes first: a guard asked after another has
// admitted finds that admission already made, and a refusal then undoes it as well as it can
// (the earlier admissions settle with Ignore, which frees a slot and records nothing, but a rate
// limit's token, spent when admitted, stays spent). A server's usual order is the shedder, the
// rate limits, the adaptive limit, then the breaker.
//
// A Chain is a [Guard]: it goes wherever a single guard goes, a Chain included. It is safe for
// concurrent use. Do allocates nothing for chains of up to 8 guards; Admit takes its record of
// the admissions from a pool.
type Chain struct {
	gs []Guard
}

// With composes guards into a [Chain]. No guard may be nil.
func With(gs ...Guard) (*Chain, error) {
	if len(gs) == 0 {
		return nil, contract.Field(ErrInvalid, "guards", "none", "at least one Guard")
	}
	for i, g := range gs {
		if g == nil {
			return nil, contract.Field(ErrInvalid, "guard "+strconv.Itoa(i), "nil", "a Guard")
		}
	}
	return &Chain{gs: append([]Guard(nil), gs...)}, nil
}

// Now returns the first guard's clock.
func (c *Chain) Now() int64 { return c.gs[0].Now() }

// Do runs fn if every guard admits it, and returns fn's error unchanged; fn's error settles each
// admission as that guard's own Do would settle it. The first refusal returns that guard's
// refusal without calling fn (or ctx's error if ctx is done). A panicking fn settles every
// admission as a Fail and the panic continues.
func (c *Chain) Do(ctx context.Context, fn func(context.Context) error) error {
	var buf [8]Admission
	hs := buf[:0]
	if len(c.gs) > len(buf) {
		hs = make([]Admission, 0, len(c.gs))
	}
	for _, g := range c.gs {
		h, err := g.Admit(ctx)
		if err != nil {
			ignoreAll(hs)
			return err
		}
		hs = append(hs, h)
	}
	defer failAll(hs) // a no-op once settled: only a panicking fn gets here unsettled
	err := fn(ctx)
	for i := len(hs) - 1; i >= 0; i-- {
		hs[i].End(ctx, err)
	}
	return err
}

// Admit admits a call if every guard does, in order, and returns one admission that settles them
// all (End settles each as its guard classifies the error). A refusal undoes the admissions
// already made, as Do does.
func (c *Chain) Admit(ctx context.Context) (Admission, error) {
	t := tickets.Get().(*ticket)
	for _, g := range c.gs {
		h, err := g.Admit(ctx)
		if err != nil {
			ignoreAll(t.hs)
			t.release()
			return Admission{}, err
		}
		t.hs = append(t.hs, h)
	}
	return Admitted(t, t.gen, 0), nil
}

// ignoreAll settles every admission in hs as Ignore, the latest first.
func ignoreAll(hs []Admission) {
	for i := len(hs) - 1; i >= 0; i-- {
		hs[i].Ignore()
	}
}

// failAll settles every admission in hs as Fail, the latest first.
func failAll(hs []Admission) {
	for i := len(hs) - 1; i >= 0; i-- {
		hs[i].Fail()
	}
}

// ticket is a Chain admission's record of the admissions it holds; it goes back to the pool
// when settled, and its generation tells a settle of a stale copy from the live one.
type ticket struct {
	mu  sync.Mutex
	gen int64
	hs  []Admission
}

var tickets = sync.Pool{New: func() any { return new(ticket) }}

// take returns the admissions of generation gen, or nil when that generation has settled.
func (t *ticket) take(gen int64) []Admission {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.gen != gen {
		return nil
	}
	t.gen++
	hs := t.hs
	t.hs = nil
	return hs
}

// release returns t, emptied, to the pool.
func (t *ticket) release() {
	t.mu.Lock()
	t.gen++
	clear(t.hs)
	t.hs = t.hs[:0]
	t.mu.Unlock()
	tickets.Put(t)
}

func (t *ticket) Settle(gen, _ int64, o Outcome) {
	hs := t.take(gen)
	for i := len(hs) - 1; i >= 0; i-- {
		hs[i].Settle(o)
	}
	t.recycle(hs)
}

func (t *ticket) End(ctx context.Context, gen, _ int64, err error) {
	hs := t.take(gen)
	for i := len(hs) - 1; i >= 0; i-- {
		hs[i].End(ctx, err)
	}
	t.recycle(hs)
}

// recycle gives hs's storage back to t and t to the pool, unless hs is nil (a stale settle).
func (t *ticket) recycle(hs []Admission) {
	if hs == nil {
		return
	}
	clear(hs)
	t.mu.Lock()
	t.hs = hs[:0]
	t.mu.Unlock()
	tickets.Put(t)
}

// Get runs fn if g admits it, as g's Do would, and returns fn's result: the result-returning form
// of Do. A refusal returns the zero T and the refusal without calling fn; fn's error settles the
// admission as g classifies it; a panicking fn settles as a Fail and the panic continues. It
// allocates nothing beyond what fn and g do.
func Get[T any](ctx context.Context, g Guard, fn func(context.Context) (T, error)) (T, error) {
	h, err := g.Admit(ctx)
	if err != nil {
		var zero T
		return zero, err
	}
	defer h.Fail() // a no-op once settled: only a panicking fn gets here unsettled
	v, err := fn(ctx)
	h.End(ctx, err)
	return v, err
}
