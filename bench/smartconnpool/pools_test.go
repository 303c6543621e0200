package smartconnpool

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// size is the pools' size: every resource opened, then lent by turns.
const size = 8

// BenchmarkContended is one pool of size resources shared by 8x, 64x and 512x size goroutines,
// each acquiring, yielding its P while it holds the resource (as a caller waiting on the
// connection's reply does) and releasing, in a loop: ns per acquire+release in the steady state
// (see the package doc). Without the yield a goroutine would run its whole loop in one turn at
// -cpu 1 and never meet another.
func BenchmarkContended(b *testing.B) {
	for _, mult := range []int{8, 64, 512} {
		for _, impl := range rotated(Impls, *rotate) {
			b.Run(fmt.Sprintf("goroutines=%dx/impl=%s", mult, impl), func(b *testing.B) {
				borrow, closePool, err := New(impl, size)
				if err != nil {
					b.Fatal(err)
				}
				defer closePool()
				b.ReportAllocs()
				b.StopTimer() // started again by the borrow that ends the warm-up
				b.ResetTimer()
				goroutines := mult * size
				if err := contend(borrow, runtime.Gosched, goroutines, warmup(goroutines), b.N, b.StartTimer, b.StopTimer); err != nil {
					b.Fatal(err)
				}
			})
		}
	}
}

// rotate is how many places the pools' order is turned in a run (make bench-pool turns it by the
// round's number): the pool run first in a row meets a runtime that had fewer goroutines just
// before, the later ones reuse the goroutines and stacks the earlier ones left, so no pool is
// always first.
var rotate = flag.Int("rotate", 0, "run the pools in Impls' order turned left by this many places")

// rotated returns s turned left by k places (k taken modulo its length).
func rotated(s []string, k int) []string {
	k = (k%len(s) + len(s)) % len(s)
	return append(append([]string(nil), s[k:]...), s[:k]...)
}

// warmup is how many borrows go unmeasured before the timed ones with goroutines callers: enough
// that every caller has waited its turn a few times, so that what a wait needs the first time
// (a goroutine's stack grown, the runtime's wait records, a pool's waiter objects) is in place.
func warmup(goroutines int) int { return 4 * goroutines }

// contend runs borrows from goroutines goroutines, each borrowing in a loop and holding with
// hold, until warm+n borrows have ended; start runs when the warm-th ends and stop when the
// (warm+n)-th does (start at once if warm is 0). Between the two, every goroutine is borrowing
// in the loop: none has yet to start or has run out of work, so the n borrows timed are all in
// the steady state. The goroutines borrowing when the last timed one ends finish theirs
// unmeasured. It returns the first error a borrow returned.
func contend(borrow Borrow, hold func(), goroutines, warm, n int, start, stop func()) error {
	var wg sync.WaitGroup
	var ended atomic.Int64
	total := int64(warm + n)
	errs := make(chan error, goroutines)
	ctx := context.Background()
	if warm == 0 {
		start()
	}
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ended.Load() < total {
				if err := borrow(ctx, hold); err != nil {
					errs <- err
					return
				}
				switch ended.Add(1) {
				case int64(warm):
					start()
				case total:
					stop()
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// TestContend: every pool lends and takes back every call, with many more callers than
// resources.
func TestContend(t *testing.T) {
	for _, impl := range Impls {
		borrow, closePool, err := New(impl, size)
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		held, most, calls := 0, 0, 0
		use := func() {
			mu.Lock()
			held++
			most = max(most, held)
			calls++
			mu.Unlock()
			runtime.Gosched()
			mu.Lock()
			held--
			mu.Unlock()
		}
		var starts, stops int
		var atStart, atStop int
		start := func() { starts++; mu.Lock(); atStart = calls; mu.Unlock() }
		stop := func() { stops++; mu.Lock(); atStop = calls; mu.Unlock() }
		const goroutines, warm, n = 64, 100, 1000
		if err := contend(borrow, use, goroutines, warm, n, start, stop); err != nil {
			t.Error(err)
		}
		closePool()
		// A borrow's use has run before the borrow ends: the calls seen at start and stop are
		// at least the borrows ended then, and at most those plus one per goroutine under way.
		switch {
		case starts != 1 || stops != 1:
			t.Errorf("%s: start ran %d times, stop %d (want once each)", impl, starts, stops)
		case atStart < warm || atStart > warm+goroutines:
			t.Errorf("%s: %d calls when the timing started, want %d to %d", impl, atStart, warm, warm+goroutines)
		case atStop < warm+n || atStop > warm+n+goroutines:
			t.Errorf("%s: %d calls when the timing stopped, want %d to %d", impl, atStop, warm+n, warm+n+goroutines)
		case calls < warm+n || calls > warm+n+goroutines:
			t.Errorf("%s: %d calls in all, want %d to %d", impl, calls, warm+n, warm+n+goroutines)
		case most > size:
			t.Errorf("%s: %d held at once, want <= %d", impl, most, size)
		}
	}
}

// TestContendNoWarmup: with no warm-up the timing starts before the first borrow.
func TestContendNoWarmup(t *testing.T) {
	borrow, closePool, err := New("chan", size)
	if err != nil {
		t.Fatal(err)
	}
	defer closePool()
	var calls atomic.Int64
	atStart, atStop := int64(-1), int64(-1)
	use := func() { calls.Add(1) }
	if err := contend(borrow, use, 4, 0, 10, func() { atStart = calls.Load() }, func() { atStop = calls.Load() }); err != nil {
		t.Fatal(err)
	}
	if atStart != 0 || atStop < 10 {
		t.Errorf("calls at start %d (want 0), at stop %d (want >= 10)", atStart, atStop)
	}
}

// TestContendError: a borrow's error is returned, and the goroutines stop.
func TestContendError(t *testing.T) {
	borrow, closePool, err := New("ward", size)
	if err != nil {
		t.Fatal(err)
	}
	closePool() // every Acquire now fails
	if err := contend(borrow, func() {}, 4, 2, 10, func() {}, func() {}); err == nil {
		t.Error("contend on a closed pool: no error")
	}
}

func TestNewUnknown(t *testing.T) {
	if _, _, err := New("nope", size); err == nil {
		t.Error("New(nope): no error")
	}
}

// TestRotated: every turn of the order holds each pool once, the first turned by k places.
func TestRotated(t *testing.T) {
	const all = "ward smartconnpool chan chan-guarded"
	for k, want := range map[int]string{0: all, 1: "smartconnpool chan chan-guarded ward", 2: "chan chan-guarded ward smartconnpool", 3: "chan-guarded ward smartconnpool chan", 4: all, 9: "smartconnpool chan chan-guarded ward", -1: "chan-guarded ward smartconnpool chan"} {
		if got := fmt.Sprint(rotated(Impls, k)); got != "["+want+"]" {
			t.Errorf("rotated(Impls, %d) = %s, want [%s]", k, got, want)
		}
	}
	if fmt.Sprint(Impls) != "["+all+"]" {
		t.Errorf("rotated changed Impls: %v", Impls)
	}
}

// TestGuardedDoubleRelease: the guarded channel pool takes a loan back once; a second release of
// it, or of a copy, hands nothing back, even after the resource is lent again.
func TestGuardedDoubleRelease(t *testing.T) {
	g := &guarded{ch: make(chan *guardedConn, 1)}
	g.ch <- new(guardedConn)
	ctx := context.Background()
	c, w, err := g.acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !g.release(c, w) {
		t.Fatal("first release refused")
	}
	if g.release(c, w) {
		t.Fatal("second release of the same loan taken")
	}
	c2, w2, err := g.acquire(ctx) // the same resource, lent again
	if err != nil || c2 != c || w2 == w {
		t.Fatalf("lent again: %p %d %v, want %p and a word other than %d", c2, w2, err, c, w)
	}
	if g.release(c, w) { // the old loan's copy
		t.Fatal("a stale loan's release taken while the resource is lent again")
	}
	if len(g.ch) != 0 {
		t.Fatalf("%d resources idle while the one is lent", len(g.ch))
	}
	if !g.release(c2, w2) || len(g.ch) != 1 {
		t.Fatalf("the live loan's release: %d idle, want 1", len(g.ch))
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	<-g.ch // none idle: the acquire waits until its context ends
	if _, _, err := g.acquire(cancelled); err != context.Canceled {
		t.Fatalf("acquire with nothing idle and a cancelled context: %v, want context.Canceled", err)
	}
}
