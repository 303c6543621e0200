package pool

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// waiters audits the pool's wait objects under its lock and returns how many it holds: every
// spare out of the queue with an empty channel, none twice among the spares, none both a spare
// and a slot's, none with two slots.
func (p *Pool[T]) waiters(t *testing.T) int {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	seen := map[*waiter]string{}
	for w := p.b.spares; w != nil; w = w.spare {
		if was, ok := seen[w]; ok {
			t.Fatalf("a spare twice among the spares (first as %s)", was)
		}
		seen[w] = "a spare"
		if len(w.ch) != 0 || p.queued(w) {
			t.Fatalf("a spare with %d grants in its channel, queued %v", len(w.ch), p.queued(w))
		}
	}
	for i := range p.b.slots {
		if w := p.b.slots[i].handed; w != nil {
			if was, ok := seen[w]; ok {
				t.Fatalf("slot %d's waiter is %s too", i, was)
			}
			seen[w] = "a slot's"
		}
	}
	return len(seen)
}

// The pool keeps a wait object for each of the most callers that have waited at once, and one
// with each resource made (the last caller handed it); only those: a wait after the first ones
// and a caller that gave up reuse them; Close lets the spares go.
func TestPoolWaitersKept(t *testing.T) {
	const size = 2
	c := &counts{}
	p := newPool(t, c, limits(size, size, 0, 0))
	bg := context.Background()
	var held [size]Loan[*res]
	for k := range held {
		l, err := p.Acquire(bg) // a make: handed through the queue
		if err != nil {
			t.Fatal(err)
		}
		held[k] = l
	}
	if n := p.waiters(t); n != size {
		t.Fatalf("after %d makes the pool keeps %d wait objects, want %d", size, n, size)
	}
	// waitOn has n callers wait at once, then hands them the held resources one by one.
	waitOn := func(n int) {
		got := make(chan Loan[*res], n)
		for k := range n {
			go func() {
				l, err := p.Acquire(bg)
				if err != nil {
					t.Error(err)
				}
				got <- l
			}()
			waitFor(t, "callers waiting", func() bool { return p.Stats().Waiting == k+1 })
		}
		for k := range n {
			held[k].Release()
			held[k] = <-got
		}
	}
	for round := range 5 {
		waitOn(1)
		if n := p.waiters(t); n != size+1 {
			t.Fatalf("round %d, one caller waiting at a time: %d wait objects, want %d", round, n, size+1)
		}
	}
	waitOn(2)
	waitOn(1)
	if n := p.waiters(t); n != size+2 {
		t.Fatalf("two callers waited at once: %d wait objects, want %d", n, size+2)
	}
	ctx, cancel := context.WithCancel(bg)
	done := make(chan error)
	go func() { _, err := p.Acquire(ctx); done <- err }()
	waitFor(t, "a caller waiting", func() bool { return p.Stats().Waiting == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire = %v, want context.Canceled", err)
	}
	if n := p.waiters(t); n != size+2 {
		t.Fatalf("after a caller gave up: %d wait objects, want %d", n, size+2)
	}
	for k := range held {
		held[k].Release()
	}
	p.Close()
	if n := p.waiters(t); n > size {
		t.Fatalf("after Close: %d wait objects, want at most %d", n, size)
	}
	checkClosed(t, c)
}

// A caller waiting when the pool closes is refused, and its wait object is not kept.
func TestPoolWaitersGoAtClose(t *testing.T) {
	c := &counts{}
	p := newPool(t, c, limits(1, 1, 0, 0))
	held, err := p.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() { _, err := p.Acquire(context.Background()); done <- err }()
	waitFor(t, "a caller waiting", func() bool { return p.Stats().Waiting == 1 })
	p.Close()
	if err := <-done; err != ErrClosed {
		t.Fatalf("Acquire = %v, want ErrClosed", err)
	}
	if n := p.waiters(t); n != 1 {
		t.Fatalf("after Close: %d wait objects kept, want 1 (the resource's)", n)
	}
	held.Release()
	checkClosed(t, c)
}

// Close refuses every caller waiting, however many wait.
func TestPoolCloseRefusesEveryWaiter(t *testing.T) {
	c, p, held := heldPool(t)
	const n = 192
	done := make(chan error, n)
	for range n {
		go func() { _, err := p.Acquire(context.Background()); done <- err }()
	}
	waitFor(t, "callers waiting", func() bool { return p.Stats().Waiting == n })
	p.Close()
	for range n {
		if err := <-done; err != ErrClosed {
			t.Fatalf("Acquire = %v, want ErrClosed", err)
		}
	}
	held.Release()
	checkClosed(t, c)
}

// A Release that finds a caller waiting hands the resource on unless it is past Life (then it is
// closed and a new one opened for the waiter); a resource handed on rests from when it next turns
// idle, not from a handoff.
func TestPoolHandOnAges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const keep, life = 10 * time.Second, 40 * time.Second
		clk := &fakeClock{}
		c := &counts{}
		p := newPool(t, c, limits(1, 1, keep, life), WithClock(clk.Now))
		bg := context.Background()
		// wait has a caller wait, lets l go with give, and returns what the caller got.
		wait := func(give func()) Loan[*res] {
			got := make(chan Loan[*res])
			go func() {
				l, err := p.Acquire(bg)
				if err != nil {
					t.Error(err)
				}
				got <- l
			}()
			synctest.Wait()
			give()
			return <-got
		}
		a, _ := p.Acquire(bg) // born at 0
		clk.now.Store(int64(15 * time.Second))
		b := wait(a.Release) // handed on at 15 s, within Life
		if b.Value() != a.Value() {
			t.Fatal("a resource within Life was not handed on")
		}
		clk.now.Store(int64(19 * time.Second))
		b.Release() // idle from 19 s
		clk.now.Store(int64(19*time.Second + keep - 1))
		d, _ := p.Acquire(bg) // idle just under Keep: lent
		if d.Value() != a.Value() {
			t.Fatal("a resource idle under Keep since it turned idle was not lent")
		}
		clk.now.Store(int64(life + 1))
		e := wait(d.Release) // past Life: closed, and a new one opened for the waiter
		if e.Value() == a.Value() || a.Value().closed.Load() != 1 {
			t.Fatalf("a resource past Life was handed on (closed %d times)", a.Value().closed.Load())
		}
		e.Release()
		p.Close()
		checkClosed(t, c)
	})
}

// heldPool returns a pool of one resource, lent.
func heldPool(t *testing.T) (*counts, *Pool[*res], Loan[*res]) {
	t.Helper()
	c := &counts{}
	p := newPool(t, c, limits(1, 1, 0, 0))
	held, err := p.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return c, p, held
}
