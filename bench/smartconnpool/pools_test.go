package smartconnpool

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
)

// size is the pools' size: every resource opened, then lent by turns.
const size = 8

// BenchmarkContended is one pool of size resources shared by 8x, 64x and 512x size goroutines,
// each acquiring, yielding its P while it holds the resource (as a caller waiting on the
// connection's reply does) and releasing, in a loop: ns per acquire+release. Without the yield a
// goroutine would run its whole loop in one turn at -cpu 1 and never meet another.
func BenchmarkContended(b *testing.B) {
	for _, mult := range []int{8, 64, 512} {
		for _, impl := range Impls {
			b.Run(fmt.Sprintf("goroutines=%dx/impl=%s", mult, impl), func(b *testing.B) {
				borrow, closePool, err := New(impl, size)
				if err != nil {
					b.Fatal(err)
				}
				defer closePool()
				warm(b, borrow)
				b.ReportAllocs()
				if err := contend(borrow, mult*size, b.N, b.ResetTimer); err != nil {
					b.Fatal(err)
				}
			})
		}
	}
}

// warm opens every resource: size callers hold one each at once.
func warm(tb testing.TB, borrow Borrow) {
	tb.Helper()
	if err := contend(borrow, size, size, func() {}); err != nil {
		tb.Fatal(err)
	}
}

// contend runs n acquire+release pairs from goroutines goroutines, started together once ready
// has run (so that starting them is not measured).
func contend(borrow Borrow, goroutines, n int, ready func()) error {
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, goroutines)
	ctx := context.Background()
	for g := range goroutines {
		k := n / goroutines
		if g < n%goroutines {
			k++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for range k {
				if err := borrow(ctx, runtime.Gosched); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	ready()
	close(start)
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
			held--
			mu.Unlock()
		}
		var wg sync.WaitGroup
		for range 64 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 50 {
					if err := borrow(context.Background(), use); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		closePool()
		if calls != 64*50 || most > size {
			t.Errorf("%s: %d calls (want %d), at most %d held at once (want <= %d)", impl, calls, 64*50, most, size)
		}
	}
}

func TestNewUnknown(t *testing.T) {
	if _, _, err := New("nope", size); err == nil {
		t.Error("New(nope): no error")
	}
}
