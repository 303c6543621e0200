package alone_test

import (
	"context"
	"runtime"
	"sync"
	"testing"

	"github.com/wardgo/ward/pool"
)

// Conn is a user's resource type: the pool is instantiated here, in this package.
type Conn struct{ _ int }

// An idle Acquire and Release allocate nothing in a package that imports only pool, before the
// Ps' caches are in use and after goroutines have collided on the idle stack.
func TestIdleAllocsAlone(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(4, runtime.GOMAXPROCS(0))))
	l := pool.DefaultLimits()
	p, err := pool.New(func(context.Context) (*Conn, error) { return &Conn{}, nil }, func(*Conn) {}, l)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	cycle := func() {
		c, err := p.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		c.Release()
	}
	cycle()
	if n := testing.AllocsPerRun(1000, cycle); n != 0 {
		t.Errorf("Acquire+Release allocate %v times, want 0", n)
	}
	var wg sync.WaitGroup
	for range 8 { // goroutines meet on the idle stack: the Ps' caches come into use
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20000 {
				c, err := p.Acquire(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				runtime.Gosched()
				c.Release()
			}
		}()
	}
	wg.Wait()
	if n := testing.AllocsPerRun(1000, cycle); n != 0 {
		t.Errorf("Acquire+Release after contention allocate %v times, want 0", n)
	}
}
