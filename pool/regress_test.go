package pool

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// Idle is an upper bound at every instant: Stats sampled without pause while many goroutines
// acquire and release and Evict runs again and again never shows more than Limits.Idle idle.
func TestPoolIdleBound(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(4, runtime.GOMAXPROCS(0))))
	const size, idle, workers = 8, 2, 64
	rounds := 1000
	if testing.Short() {
		rounds = 200
	}
	c := &counts{}
	p := newPool(t, c, limits(size, idle, time.Hour, 0))
	var stop atomic.Bool
	var over atomic.Int64 // the largest Idle seen past the bound
	var watchers sync.WaitGroup
	for range 2 {
		watchers.Add(1)
		go func() {
			defer watchers.Done()
			for !stop.Load() {
				if n := p.Stats().Idle; n > idle && int64(n) > over.Load() {
					over.Store(int64(n))
				}
				p.Evict()
			}
		}()
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for range rounds {
				x, err := p.Acquire(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				runtime.Gosched() // hold it a moment: many are lent, then many come back at once
				x.Release()
			}
		}()
	}
	close(start)
	wg.Wait()
	stop.Store(true)
	watchers.Wait()
	if n := over.Load(); n != 0 {
		t.Errorf("Stats showed %d idle with Limits.Idle %d", n, idle)
	}
	if st := p.Stats(); st.Idle > idle || st.Lent != 0 {
		t.Errorf("Stats at rest = %+v", st)
	}
	p.Close()
	checkClosed(t, c)
}

// An open that panics gives its room back before the panic continues on the caller's
// goroutine: Size panics recovered by their callers leave the pool whole.
func TestPoolOpenPanics(t *testing.T) {
	var panicking atomic.Bool
	panicking.Store(true)
	c := &counts{onOpen: func(context.Context) {
		if panicking.Load() {
			panic("dial exploded")
		}
	}}
	p := newPool(t, c, limits(2, 2, 0, 0))
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a bound, not a verdict
	defer cancel()
	for k := range 5 {
		func() {
			defer func() {
				if v := recover(); v != "dial exploded" {
					t.Errorf("acquire %d: recovered %v, want the open's panic", k, v)
				}
			}()
			_, err := p.Acquire(ctx)
			t.Errorf("acquire %d returned %v from a panicking open", k, err)
		}()
	}
	if st := p.Stats(); st.Live != 0 || st.Failed != 5 {
		t.Fatalf("Stats after 5 panics = %+v, want nothing live and 5 failed", st)
	}
	panicking.Store(false)
	for range 2 {
		if _, err := p.Acquire(ctx); err != nil {
			t.Fatalf("Acquire after the panics = %v: the pool is wedged", err)
		}
	}
}

// An open that exits its goroutine (runtime.Goexit, as t.FailNow does) fails the Acquire and
// gives its room back.
func TestPoolOpenExits(t *testing.T) {
	exiting := true
	c := &counts{onOpen: func(context.Context) {
		if exiting {
			runtime.Goexit()
		}
	}}
	p := newPool(t, c, limits(1, 1, 0, 0))
	defer p.Close()
	if _, err := p.Acquire(context.Background()); !errors.Is(err, errExited) {
		t.Fatalf("Acquire = %v, want %v", err, errExited)
	}
	exiting = false
	if x, err := p.Acquire(context.Background()); err != nil {
		t.Fatalf("Acquire after an open exited = %v", err)
	} else {
		x.Release()
	}
}

type ctxKey struct{}

// A slow open warms the pool: the caller returns when its context ends, while the open, which
// ignores its context, runs on; what it makes goes to the next caller. The open's context keeps
// the caller's values, has the pool's dial deadline, and does not end with the caller's.
func TestPoolSlowOpenWarms(t *testing.T) {
	proceed := make(chan struct{})
	started := make(chan context.Context, 1)
	c := &counts{}
	c.onOpen = func(ctx context.Context) {
		started <- ctx
		<-proceed // ignores ctx
	}
	p := newPool(t, c, limits(1, 1, 0, 0), WithDialTimeout(time.Hour))
	defer p.Close()
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "caller"))
	done := make(chan error)
	go func() { _, err := p.Acquire(ctx); done <- err }()
	dctx := <-started
	cancel()
	// The open is still blocked: an Acquire that returns now did not wait for it.
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire = %v, want context.Canceled", err)
	}
	if dctx.Err() != nil || dctx.Value(ctxKey{}) != "caller" {
		t.Fatalf("the open's context: err %v, value %v; want live, with the caller's value", dctx.Err(), dctx.Value(ctxKey{}))
	}
	if dl, ok := dctx.Deadline(); !ok || time.Until(dl) <= 0 {
		t.Fatalf("the open's context has no dial deadline ahead (%v, %v)", dl, ok)
	}
	if st := p.Stats(); st.Making != 1 || st.Live != 1 {
		t.Fatalf("Stats with the open under way = %+v", st)
	}
	// A second caller waits for the only slot and is handed what the open makes.
	second := make(chan Loan[*res])
	go func() {
		x, err := p.Acquire(context.Background())
		if err != nil {
			t.Error(err)
		}
		second <- x
	}()
	waitFor(t, "second caller queued", func() bool { return p.Stats().Waiting == 1 })
	close(proceed)
	x := <-second
	if x.Value() == nil || x.Value().id != 1 {
		t.Fatalf("the second caller got %v, want the first open's resource", x.Value())
	}
	x.Release()
	if st := p.Stats(); st.Opened != 1 || st.Idle != 1 || st.Failed != 0 {
		t.Fatalf("Stats = %+v, want one open, its resource idle", st)
	}
	// With nobody waiting, a resource an abandoned open makes goes idle.
	y, _ := p.Acquire(context.Background())
	y.Destroy()
	proceed2 := make(chan struct{})
	c.onOpen = func(ctx context.Context) { started <- ctx; <-proceed2 }
	ctx2, cancel2 := context.WithCancel(context.Background())
	go func() { _, err := p.Acquire(ctx2); done <- err }()
	<-started
	cancel2()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire = %v, want context.Canceled", err)
	}
	close(proceed2)
	waitFor(t, "the abandoned open's resource idle", func() bool { return p.Stats().Idle == 1 })
	z, err := p.Acquire(context.Background())
	if err != nil || z.Value().id != 2 {
		t.Fatalf("Acquire = %v, %v; want the abandoned open's resource", z.Value(), err)
	}
	z.Release()
}

// The dial timeout ends an open that honours its context, and counts a failure; with nobody
// waiting, the room goes back.
func TestPoolDialTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &counts{onOpen: func(ctx context.Context) { <-ctx.Done() }}
		c.fail = func() bool { return true }
		p := newPool(t, c, limits(1, 1, 0, 0), WithDialTimeout(2*time.Second))
		start := time.Now()
		_, err := p.Acquire(context.Background())
		if err == nil || time.Since(start) != 2*time.Second { // the bubble's clock: exact
			t.Fatalf("Acquire = %v after %v, want the open's failure at the 2s dial timeout", err, time.Since(start))
		}
		if st := p.Stats(); st.Failed != 1 || st.Live != 0 {
			t.Fatalf("Stats = %+v, want one failed open and the room back", st)
		}
		p.Close()
	})
	if DefaultDialTimeout != 5*time.Second {
		t.Fatalf("DefaultDialTimeout = %v, documented as 5s", DefaultDialTimeout)
	}
}

// A second Release or Destroy of one loan, after the resource was lent again, does nothing: the
// new borrower keeps it and nobody else is lent it.
func TestPoolStaleRelease(t *testing.T) {
	c := &counts{}
	p := newPool(t, c, limits(2, 2, 0, 0))
	ctx := context.Background()
	a, _ := p.Acquire(ctx)
	copyOfA := a
	a.Release()
	b, _ := p.Acquire(ctx)
	if b.Value() != a.Value() {
		t.Fatal("the released resource was not lent again")
	}
	a.Release()
	copyOfA.Release()
	a.Destroy()
	if st := p.Stats(); st.Lent != 1 || st.Idle != 0 || st.Closed != 0 {
		t.Fatalf("Stats after stale Release and Destroy = %+v, want the resource still lent", st)
	}
	d, _ := p.Acquire(ctx)
	if d.Value() == b.Value() {
		t.Fatal("a stale Release let the pool lend a resource its borrower still holds")
	}
	var zero Loan[*res]
	zero.Release()
	zero.Destroy()
	if zero.Value() != nil {
		t.Fatal("the zero Loan holds a resource")
	}
	b.Release()
	d.Destroy()
	d.Release()
	if st := p.Stats(); st.Idle != 1 || st.Live != 1 || st.Closed != 1 {
		t.Fatalf("Stats = %+v, want one idle, one destroyed", st)
	}
	p.Close()
	checkClosed(t, c)
}

// A caller whose context ends just as its open returns (the open itself cancels it) does not
// leak the resource: Acquire returns the context's error, counted abandoned, and the resource
// goes to the pool, lent to the next caller without another open. Whichever of the two the
// caller sees first, the open's end or its context's, the outcome is the same.
func TestPoolCanceledAsOpenReturns(t *testing.T) {
	for range 20 {
		ctx, cancel := context.WithCancel(context.Background())
		c := &counts{onOpen: func(context.Context) { cancel() }}
		p := newPool(t, c, limits(1, 1, 0, 0))
		if _, err := p.Acquire(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("Acquire = %v, want context.Canceled", err)
		}
		waitFor(t, "the resource idle", func() bool { return p.Stats().Idle == 1 })
		if n := p.Counts(); n.Abandoned != 1 || n.Admitted != 0 {
			t.Fatalf("Counts = %+v, want the Acquire abandoned", n)
		}
		c.onOpen = nil
		x, err := p.Acquire(context.Background())
		if err != nil || x.Value().id != 1 || p.Stats().Opened != 1 {
			t.Fatalf("Acquire = %v, %v; want the canceled caller's resource, opened once", x.Value(), err)
		}
		x.Release()
		p.Close()
		checkClosed(t, c)
	}
}
