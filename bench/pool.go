package bench

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/jackc/puddle/v2"

	upool "github.com/wardgo/ward/bench/user/pool"
)

// Conn is the resource the pool benchmarks lend: a pointer, as a connection handle is (a
// non-empty struct, so each one has an address of its own). It is package user/pool's, which
// lends it to ward's row, so every pool compared lends the same type.
type Conn = upool.Conn

// Borrow is one pool under test: acquire, run use while holding the resource, give it back. A
// user's program calls Release on what Acquire returned; it does not take a method value of it,
// which allocates a closure per call, so neither does the suite.
type Borrow func(ctx context.Context, use func()) error

// PoolImpls returns the pools compared, each of size: ward's pool.Pool (as a user's package calls
// it, package user/pool) and pgx's puddle/v2. vitess's smartconnpool is compared in a module of
// its own, bench/smartconnpool (make bench-pool): it imports vitess's servenv, log and vterrors,
// and through them most of the vitess module's requirements.
func PoolImpls(size int) map[string]func() (Borrow, func()) {
	open := func(context.Context) (*Conn, error) { return &Conn{}, nil }
	return map[string]func() (Borrow, func()){
		"ward": func() (Borrow, func()) {
			borrow, closePool, err := upool.Borrow(size)
			if err != nil {
				panic(err)
			}
			return borrow, closePool
		},
		"puddle": func() (Borrow, func()) {
			p, err := puddle.NewPool(&puddle.Config[*Conn]{
				Constructor: open, Destructor: func(*Conn) {}, MaxSize: int32(size),
			})
			if err != nil {
				panic(err)
			}
			return func(ctx context.Context, use func()) error {
				r, err := p.Acquire(ctx)
				if err != nil {
					return err
				}
				use()
				r.Release()
				return nil
			}, p.Close
		},
	}
}

// Contend runs n acquire+release pairs from goroutines goroutines on one pool and returns the
// waits each acquire took, sorted.
func Contend(borrow Borrow, goroutines, n int) []time.Duration {
	waits := make([][]time.Duration, goroutines)
	var wg sync.WaitGroup
	ctx := context.Background()
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := n / goroutines
			if g < n%goroutines {
				k++
			}
			w := make([]time.Duration, 0, k)
			var t time.Time
			use := func() { w = append(w, time.Since(t)) } // one closure per goroutine
			for range k {
				t = time.Now()
				if err := borrow(ctx, use); err != nil {
					panic(err)
				}
			}
			waits[g] = w
		}()
	}
	wg.Wait()
	all := slices.Concat(waits...)
	slices.Sort(all)
	return all
}
