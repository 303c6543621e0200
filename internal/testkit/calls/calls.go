// Package calls drives ward's guards from tests and counts, on the test's side, what each call
// came to, so that a test can hold a guard's own counts (ward.Counts, an exporter's series) to the
// calls it made. Imported by tests only.
package calls

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/wardgo/ward"
	"github.com/wardgo/ward/failurewindow"
	"github.com/wardgo/ward/pool"
)

// Tallies are the calls a test made of one guard, counted by the test itself.
type Tallies struct{ Admitted, Refused, Abandoned, Pass, Fail, Ignore atomic.Int64 }

// Call admits through g and settles the admission by i: pass, fail or ignore in turn. With
// nested above 0 it holds the admission while it makes nested calls more. A call whose context
// ends while it waits (a Queue's line) is abandoned.
func (c *Tallies) Call(ctx context.Context, g ward.Guard, i, nested int) {
	h, err := g.Admit(ctx)
	switch {
	case err == nil:
		c.Admitted.Add(1)
	case errors.Is(err, ward.ErrRefused):
		c.Refused.Add(1)
		return
	case ctx.Err() != nil:
		c.Abandoned.Add(1)
		return
	default:
		panic(err)
	}
	if nested > 0 {
		c.Call(ctx, g, i, nested-1)
	}
	switch i % 3 {
	case 0:
		h.Pass()
		c.Pass.Add(1)
	case 1:
		h.Fail()
		c.Fail.Add(1)
	default:
		h.Ignore()
		c.Ignore.Add(1)
	}
}

// Gate admits through a guard that settles nothing (a rate limit): admitted or refused.
func (c *Tallies) Gate(ctx context.Context, g ward.Guard) {
	switch _, err := g.Admit(ctx); {
	case err == nil:
		c.Admitted.Add(1)
	case errors.Is(err, ward.ErrRefused):
		c.Refused.Add(1)
	default:
		panic(err)
	}
}

// ErrWrong and ErrOwn are what Login's requests end with: a failure (a wrong password), and the
// caller's own error (no such user), which a failure window built WithOwnError(errors.Is(err,
// ErrOwn)) settles as an ignore.
var ErrWrong, ErrOwn = errors.New("wrong password"), errors.New("no such user")

// Login runs a request for key through w.Do, ending by i: a success, a failure (ErrWrong), or the
// caller's own error (ErrOwn, settled as an ignore).
func (c *Tallies) Login(ctx context.Context, w *failurewindow.Window, key string, i int) {
	err := w.Do(ctx, key, func(context.Context) error { return []error{nil, ErrWrong, ErrOwn}[i%3] })
	if errors.Is(err, ward.ErrRefused) {
		c.Refused.Add(1)
		return
	}
	c.Admitted.Add(1)
	[]*atomic.Int64{&c.Pass, &c.Fail, &c.Ignore}[i%3].Add(1)
}

// Borrow takes a loan of p and ends it by i: a Release (pass), or every fourth a Destroy (fail).
func (c *Tallies) Borrow(ctx context.Context, p *pool.Pool[int], i int) {
	l, err := p.Acquire(ctx)
	switch {
	case errors.Is(err, ward.ErrRefused):
		c.Refused.Add(1)
		return
	case err != nil:
		panic(err)
	}
	c.Admitted.Add(1)
	if i%4 == 0 {
		l.Destroy()
		c.Fail.Add(1)
		return
	}
	l.Release()
	c.Pass.Add(1)
}
