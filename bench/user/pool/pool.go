// Package pool is ward's resource pool as a user's program calls it: Acquire, use, Release (see
// package user).
package pool

import (
	"context"

	"github.com/wardgo/ward/pool"
)

// Conn is the resource lent: a pointer, as a connection handle is.
type Conn struct{ _ int }

// Borrow returns a call that acquires a resource from a pool of size resources (all kept idle
// once opened), runs use while holding it and releases it, and the pool's Close.
func Borrow(size int) (func(ctx context.Context, use func()) error, func(), error) {
	l := pool.DefaultLimits()
	l.Size, l.Idle = size, size
	p, err := pool.New(func(context.Context) (*Conn, error) { return &Conn{}, nil }, func(*Conn) {}, l)
	if err != nil {
		return nil, nil, err
	}
	return func(ctx context.Context, use func()) error {
		loan, err := p.Acquire(ctx)
		if err != nil {
			return err
		}
		use()
		loan.Release()
		return nil
	}, p.Close, nil
}
