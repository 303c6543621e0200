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
	p.b.h.spread.Store(true) // as after a collision
	ctx := context.Background()
	a, _ := p.Acquire(ctx)
	b, _ := p.Acquire(ctx)
	x, _ := p.Acquire(ctx)
	a.Release() // the P's cache
	b.Release() // the stack
	x.Release() // over the idle cap: closed
	if st := p.Stats(); st.Idle != 2 || st.Closed != 1 || x.Value().closed.Load() != 1 {
		t.Fatalf("Stats = %+v, want 2 idle and the third closed", st)
	}
	if a, _ = p.Acquire(ctx); a.Value().id != 1 {
		t.Fatalf("Acquire = %d, want 1 (the P's cached one)", a.Value().id)
	}
	if b, _ = p.Acquire(ctx); b.Value().id != 2 {
		t.Fatalf("Acquire = %d, want 2 (the stack's top)", b.Value().id)
	}
	b.Release() // cached again
	clk.now.Add(int64(2 * time.Second))
	if n := p.Evict(); n != 1 || b.Value().closed.Load() != 1 {
		t.Fatalf("Evict = %d, want the cached resource evicted", n)
	}
	// a waiter is served from a cache
	y, _ := p.Acquire(ctx)
	z, _ := p.Acquire(ctx)
	done := make(chan Loan[*res])
	go func() { w, _ := p.Acquire(ctx); done <- w }()
	waitFor(t, "waiter queued", func() bool { return p.Stats().Waiting == 1 })
	y.Release()
	w := <-done
	if w.Value() != y.Value() {
		t.Fatalf("waiter got %v, want %d", w.Value(), y.Value().id)
	}
	w.Release()
	p.Close()
	if y.Value().closed.Load() != 1 {
		t.Fatal("Close left the cached resource open")
	}
	a.Release()
	z.Release()
	checkClosed(t, c)
}

// With the default clock, the idle path's coarse reading still finds a resource stale after the
// pool sat unused (the timer stopped, so Acquire reads the clock), and Close stops the timer.
func TestPoolCoarseClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &counts{}
		p := newPool(t, c, limits(2, 2, time.Minute, 0))
		if p.b.timer == nil || p.b.gran != time.Millisecond {
			t.Fatalf("timer %v, gran %v: want a coarse clock ticking every millisecond", p.b.timer, p.b.gran)
		}
		ctx := context.Background()
		a, _ := p.Acquire(ctx)
		a.Release()
		if !p.b.h.awake.Load() {
			t.Fatal("the coarse clock is not ticking after an idle-path read")
		}
		time.Sleep(30 * time.Second)
		synctest.Wait()
		if p.b.h.awake.Load() {
			t.Fatal("the coarse clock still ticks after 30 s unused")
		}
		b, _ := p.Acquire(ctx)
		if b.Value() != a.Value() {
			t.Fatal("a resource idle 30 s of a minute's Keep was not lent")
		}
		b.Release()
		time.Sleep(time.Minute + time.Millisecond)
		b, _ = p.Acquire(ctx)
		if b.Value() == a.Value() || a.Value().closed.Load() != 1 {
			t.Fatal("a resource idle past Keep was lent, not retired")
		}
		b.Release()
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
	if p.b.timer != nil {
		t.Fatal("an injected clock is read coarsely")
	}
}
