package pool

import (
	"context"
	"runtime"
	"testing"
	"testing/synctest"
	"time"
)

// With the Ps' caches in use, a P lends what it released last, then the stack's top; the idle cap
// counts the cached one; Evict and Close reach it; a waiter is served from it.
func TestPoolCaches(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // one P: the cache the test fills is the one it reads
	clk := &fakeClock{}
	c := &counts{}
	p := newPool(t, c, limits(3, 2, time.Second, 0), WithClock(clk.Now))
	p.h.spread.Store(true) // as after a collision
	ctx := context.Background()
	a, _ := p.Acquire(ctx)
	b, _ := p.Acquire(ctx)
	x, _ := p.Acquire(ctx)
	p.Release(a) // the P's cache
	p.Release(b) // the stack
	p.Release(x) // over the idle cap: closed
	if st := p.Stats(); st.Idle != 2 || st.Closed != 1 || x.closed.Load() != 1 {
		t.Fatalf("Stats = %+v, want 2 idle and the third closed", st)
	}
	if got, _ := p.Acquire(ctx); got != a {
		t.Fatalf("Acquire = %d, want %d (the P's cached one)", got.id, a.id)
	}
	if got, _ := p.Acquire(ctx); got != b {
		t.Fatalf("Acquire = %d, want %d (the stack's top)", got.id, b.id)
	}
	p.Release(b) // cached again
	clk.now.Add(int64(2 * time.Second))
	if n := p.Evict(); n != 1 || b.closed.Load() != 1 {
		t.Fatalf("Evict = %d, want the cached resource evicted", n)
	}
	// a waiter is served from a cache
	y, _ := p.Acquire(ctx)
	z, _ := p.Acquire(ctx)
	done := make(chan *res)
	go func() { w, _ := p.Acquire(ctx); done <- w }()
	waitFor(t, "waiter queued", func() bool { return p.Stats().Waiting == 1 })
	p.Release(y)
	if w := <-done; w != y {
		t.Fatalf("waiter got %v, want %d", w, y.id)
	}
	p.Release(y)
	p.Close()
	if y.closed.Load() != 1 {
		t.Fatal("Close left the cached resource open")
	}
	p.Release(a)
	p.Release(z)
	checkClosed(t, c)
}

// With the default clock, the idle path's coarse reading still finds a resource stale after the
// pool sat unused (the timer stopped, so Acquire reads the clock), and Close stops the timer.
func TestPoolCoarseClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &counts{}
		p := newPool(t, c, limits(2, 2, time.Minute, 0))
		if p.timer == nil || p.gran != time.Millisecond {
			t.Fatalf("timer %v, gran %v: want a coarse clock ticking every millisecond", p.timer, p.gran)
		}
		ctx := context.Background()
		a, _ := p.Acquire(ctx)
		p.Release(a)
		if !p.h.awake.Load() {
			t.Fatal("the coarse clock is not ticking after an idle-path read")
		}
		time.Sleep(30 * time.Second)
		synctest.Wait()
		if p.h.awake.Load() {
			t.Fatal("the coarse clock still ticks after 30 s unused")
		}
		b, _ := p.Acquire(ctx)
		if b != a {
			t.Fatal("a resource idle 30 s of a minute's Keep was not lent")
		}
		p.Release(b)
		time.Sleep(time.Minute + time.Millisecond)
		b, _ = p.Acquire(ctx)
		if b == a || a.closed.Load() != 1 {
			t.Fatal("a resource idle past Keep was lent, not retired")
		}
		p.Release(b)
		p.Close()
		synctest.Wait()
		checkClosed(t, c)
	})
}

// A coarse clock only where the ages allow it, and never with an injected clock.
func TestCoarseGran(t *testing.T) {
	for _, c := range []struct {
		keep, life, want time.Duration
	}{
		{0, 0, time.Millisecond},
		{30 * time.Minute, 0, time.Millisecond},
		{0, 32 * time.Millisecond, 500 * time.Microsecond},
		{time.Second, 6400 * time.Microsecond, 100 * time.Microsecond},
		{3 * time.Millisecond, 0, 0},
	} {
		if got := coarseGran(limits(1, 1, c.keep, c.life)); got != c.want {
			t.Errorf("coarseGran(Keep %v, Life %v) = %v, want %v", c.keep, c.life, got, c.want)
		}
	}
	p := newPool(t, &counts{}, DefaultLimits(), WithClock((&fakeClock{}).Now))
	defer p.Close()
	if p.timer != nil {
		t.Fatal("an injected clock is read coarsely")
	}
}
