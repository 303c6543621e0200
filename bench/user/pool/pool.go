// Package pool is ward's resource pool as a user's program calls it: Acquire, use, Release (see
// package user).
package pool

import (
	"context"

	"github.com/wardgo/ward/pool"
)

// Conn is the resource lent: a pointer, as a connection handle is.
type Conn struct{ _ int }

// Idle returns a call that acquires a resource from a pool of size resources (all kept idle) and
// releases it at once, and the pool's Close.
func Idle(size int) (func(ctx context.Context) error, func(), error) {
	l := pool.DefaultLimits()
	l.Size, l.Idle = size, size
	p, err := pool.New(func(context.Context) (*Conn, error) { return &Conn{}, nil }, func(*Conn) {}, l)
	if err != nil {
		return nil, nil, err
	}
	return func(ctx context.Context) error {
		loan, err := p.Acquire(ctx)
		if err != nil {
			return err
		}
		loan.Release()
		return nil
	}, p.Close, nil
}
