package smartconnpool

import (
	"context"
	"errors"
	"sync/atomic"

	"vitess.io/vitess/go/pools/smartconnpool"

	upool "github.com/wardgo/ward/bench/user/pool"
	"github.com/wardgo/ward/internal/stripe"
)

// Borrow is one pool under test: acquire, run use while holding the resource, give it back.
type Borrow func(ctx context.Context, use func()) error

// Impls are the pools compared, in the order a run with -rotate 0 runs them.
var Impls = []string{"ward", "smartconnpool", "chan", "chan-guarded"}

// New returns the pool named (one of Impls) of size resources, each kept idle once opened (ward's
// and smartconnpool open them as callers first need them, the channel holds all of them from the
// start), and its Close.
func New(name string, size int) (Borrow, func(), error) {
	switch name {
	case "ward": // as a user's package calls it (package bench/user/pool)
		return upool.Borrow(size)
	case "smartconnpool":
		return newSmart(size)
	case "chan":
		return newChan(size)
	case "chan-guarded":
		return newGuarded(size)
	}
	return nil, nil, errors.New("smartconnpool: no pool named " + name)
}

// conn is smartconnpool's resource: no settings, never closed by the benchmark.
type conn struct{ closed bool }

func (*conn) ApplySetting(context.Context, *smartconnpool.Setting) error { return nil }
func (*conn) ResetSetting(context.Context) error                         { return nil }
func (*conn) Setting() *smartconnpool.Setting                            { return nil }
func (c *conn) IsClosed() bool                                           { return c.closed }
func (c *conn) Close()                                                   { c.closed = true }

func newSmart(size int) (Borrow, func(), error) {
	p := smartconnpool.NewPool(&smartconnpool.Config[*conn]{
		Capacity: int64(size), MaxIdleCount: int64(size),
	})
	p.Open(func(context.Context) (*conn, error) { return &conn{}, nil }, nil)
	return func(ctx context.Context, use func()) error {
		c, err := p.Get(ctx, nil)
		if err != nil {
			return err
		}
		use()
		c.Recycle()
		return nil
	}, p.Close, nil
}

// newChan is the plainest pool: a channel holding the idle resources, filled at the start;
// receive to acquire, send to release.
func newChan(size int) (Borrow, func(), error) {
	ch := make(chan *upool.Conn, size)
	for range size {
		ch <- &upool.Conn{}
	}
	return func(ctx context.Context, use func()) error {
		var c *upool.Conn
		select {
		case c = <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
		use()
		ch <- c
		return nil
	}, func() {}, nil
}

// guarded is the channel pool with the least a pool that detects a double release must add: each
// resource carries a word, a loan remembers the word it was lent under, and its release moves the
// word on by one compare-and-set, so a second release of the same loan (or of a copy) fails it
// and hands nothing back. ward's pool makes the same check on every Release; this is the least a
// channel pool adds for it, lock-free: what that guarantee costs over the bare channel.
type guarded struct{ ch chan *guardedConn }

// guardedConn is a resource (its address the handle lent) with its loan word, on a cache line of
// its own as ward's slots are.
type guardedConn struct {
	_    [stripe.CacheLine]byte
	word atomic.Uint64
	_    [stripe.CacheLine - 8]byte
}

func newGuarded(size int) (Borrow, func(), error) {
	g := &guarded{ch: make(chan *guardedConn, size)}
	for range size {
		g.ch <- new(guardedConn)
	}
	return func(ctx context.Context, use func()) error {
		c, w, err := g.acquire(ctx)
		if err != nil {
			return err
		}
		use()
		g.release(c, w)
		return nil
	}, func() {}, nil
}

// acquire lends a resource and the word its loan holds.
func (g *guarded) acquire(ctx context.Context) (*guardedConn, uint64, error) {
	select {
	case c := <-g.ch:
		return c, c.word.Load(), nil
	case <-ctx.Done():
		return nil, 0, ctx.Err()
	}
}

// release gives back the resource of the loan that holds w, and reports whether it did: false for
// a loan already released.
func (g *guarded) release(c *guardedConn, w uint64) bool {
	if !c.word.CompareAndSwap(w, w+1) {
		return false
	}
	g.ch <- c
	return true
}
