package pool

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/wardgo/ward"
	"github.com/wardgo/ward/rate"
)

// TestCounts: a pool driven from one goroutine (and one waiter) with an injected clock counts
// each call of Acquire by how it ended, step by step: a loan when it ends (Release a pass,
// Destroy a fail, a failed open a fail), a refusal by the ward, an abandoned wait; a stale
// Release, a dead context and a closed pool count nothing.
func TestCounts(t *testing.T) {
	clk := &fakeClock{}
	fail := false
	c := &counts{fail: func() bool { return fail }}
	b, err := rate.NewBucket(1e-9, 2, 0) // two makes, then none for ages: the ward says Later
	if err != nil {
		t.Fatal(err)
	}
	bp, err := FromBucket(b)
	if err != nil {
		t.Fatal(err)
	}
	p := newPool(t, c, limits(2, 2, 0, 0), WithClock(clk.Now), WithRand(func() float64 { return 0.5 }), WithWard(Ward{Bucket: bp}))
	ctx := context.Background()
	check := func(step string, want ward.Counts) {
		t.Helper()
		if got := p.Counts(); got != want {
			t.Fatalf("after %s: Counts = %+v, want %+v", step, got, want)
		}
	}
	l1, err := p.Acquire(ctx) // opens the first resource
	if err != nil {
		t.Fatal(err)
	}
	check("an Acquire whose loan has not ended", ward.Counts{})
	l1.Release()
	check("Release", ward.Counts{Admitted: 1, Passed: 1})
	l1.Release()
	l1.Destroy()
	check("a second Release and a Destroy of the same loan", ward.Counts{Admitted: 1, Passed: 1})
	l2, err := p.Acquire(ctx) // the idle one
	if err != nil {
		t.Fatal(err)
	}
	l2.Destroy()
	check("Destroy", ward.Counts{Admitted: 2, Passed: 1, Failed: 1})
	fail = true
	if _, err := p.Acquire(ctx); err == nil {
		t.Fatal("Acquire with a failing open succeeded")
	}
	check("a failed open", ward.Counts{Admitted: 3, Passed: 1, Failed: 2})
	fail = false
	if _, err := p.Acquire(ctx); !errors.Is(err, ErrRefused) {
		t.Fatalf("Acquire with the ward's bucket spent = %v, want ErrRefused", err)
	}
	check("a refusal", ward.Counts{Admitted: 3, Refused: 1, Passed: 1, Failed: 2})
	dead, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := p.Acquire(dead); !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire(dead) = %v", err)
	}
	check("Acquire with a context done", ward.Counts{Admitted: 3, Refused: 1, Passed: 1, Failed: 2})
	p.Close()
	if _, err := p.Acquire(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("Acquire on a closed pool = %v", err)
	}
	check("Acquire on a closed pool", ward.Counts{Admitted: 3, Refused: 1, Passed: 1, Failed: 2})
}

// TestCountsAbandoned: an Acquire that waits for the only resource and whose context ends first
// is abandoned; the loan it waited for still counts when it ends.
func TestCountsAbandoned(t *testing.T) {
	p := newPool(t, &counts{}, limits(1, 1, 0, 0))
	defer p.Close()
	held, err := p.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { _, err := p.Acquire(ctx); done <- err }()
	waitFor(t, "the waiter", func() bool { return p.Stats().Waiting == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the waiter's Acquire = %v, want context.Canceled", err)
	}
	held.Release()
	if got, want := p.Counts(), (ward.Counts{Admitted: 1, Abandoned: 1, Passed: 1}); got != want {
		t.Fatalf("Counts = %+v, want %+v", got, want)
	}
}

// TestCountsConcurrent: many goroutines borrow from a small pool, some giving up while they wait
// and some destroying what they borrowed; once every loan has ended, admitted + refused +
// abandoned is every call made, the outcomes add up to the loans, and each count is what the
// callers saw.
func TestCountsConcurrent(t *testing.T) {
	const goroutines, calls = 8, 500
	var opens atomic.Int64
	c := &counts{fail: func() bool { return opens.Add(1)%5 == 0 }} // every fifth open fails
	p := newPool(t, c, limits(3, 3, 0, 0))
	defer p.Close()
	var seen [goroutines]ward.Counts
	var wg sync.WaitGroup
	start := make(chan struct{})
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			k := &seen[g]
			for i := range calls {
				ctx, cancel := context.WithCancel(context.Background())
				if i%7 == 3 {
					cancel() // may end while it waits; a call whose context was done on entry is not made
				}
				if ctx.Err() != nil {
					cancel()
					continue
				}
				l, err := p.Acquire(ctx)
				cancel()
				switch {
				case errors.Is(err, context.Canceled):
					k.Abandoned++
				case errors.Is(err, ErrRefused):
					k.Refused++
				case err != nil: // a failed open: a loan that failed at once
					k.Admitted++
					k.Failed++
				case i%3 == 0:
					l.Destroy()
					k.Admitted++
					k.Failed++
				default:
					runtime.Gosched()
					l.Release()
					k.Admitted++
					k.Passed++
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	var want ward.Counts
	made := uint64(0)
	for g := range goroutines {
		s := seen[g]
		want.Admitted += s.Admitted
		want.Refused += s.Refused
		want.Abandoned += s.Abandoned
		want.Passed += s.Passed
		want.Failed += s.Failed
		made += s.Admitted + s.Refused + s.Abandoned
	}
	got := p.Counts()
	if got != want || got.Admitted+got.Refused+got.Abandoned != made || got.Unsettled() != 0 ||
		got.Passed+got.Failed != got.Admitted {
		t.Fatalf("Counts = %+v, want %+v (%d calls made)", got, want, made)
	}
	if got.Failed == 0 || got.Passed == 0 {
		t.Fatalf("Counts = %+v: the test made no passes or no fails", got)
	}
}

// TestCountsAllocs: counting keeps an idle loan allocation-free.
func TestCountsAllocs(t *testing.T) {
	p := newPool(t, &counts{}, limits(2, 2, 0, 0))
	defer p.Close()
	ctx := context.Background()
	l, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l.Release()
	if n := testing.AllocsPerRun(1000, func() {
		l, _ := p.Acquire(ctx)
		l.Release()
	}); n != 0 {
		t.Errorf("%v allocations an Acquire and Release, want 0", n)
	}
	if c := p.Counts(); c.Passed < 1000 {
		t.Errorf("Counts = %+v, want every loan counted", c)
	}
}
