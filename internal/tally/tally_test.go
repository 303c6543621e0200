package tally

import (
	"runtime"
	"sync"
	"testing"

	"github.com/wardgo/ward"
	"github.com/wardgo/ward/internal/procs"
	"github.com/wardgo/ward/internal/stripe"
)

// observe adds a response time to the calling P's histogram in h, as a type with per-P rows of
// its own does with ObserveRow.
func observe(h *stripe.Table, d int64) {
	ObserveRow(h.Pin(), 0, d)
	stripe.Unpin()
}

// TestTableExact: counts in a Table, and a histogram in per-P rows (ObserveRow, LatencyOf),
// written by many goroutines while GOMAXPROCS changes fold to exactly what was written; an add
// and an observation allocate nothing.
func TestTableExact(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	var tb Table
	tb.Init()
	var h stripe.Table
	h.Init(LatencyWords)
	const workers, each = 16, 3000
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := 0; i < each; i++ {
				tb.Add(Admitted)
				tb.Add(Passed + i%3)
				observe(&h, int64(i)*1000)
				if i%97 == 0 {
					runtime.Gosched()
				}
			}
		}()
	}
	stop := procs.Flip()
	close(start)
	wg.Wait()
	stop()
	n := uint64(workers * each)
	want := ward.Counts{Admitted: n, Passed: n / 3, Failed: n / 3, Ignored: n / 3}
	if got := tb.Counts(); got != want {
		t.Fatalf("Counts = %+v, want %+v", got, want)
	}
	l := LatencyOf(h.All(), 0)
	var sum uint64
	for _, b := range l.Buckets {
		sum += b
	}
	if l.Count != n || sum != n {
		t.Fatalf("histogram holds %d (buckets %d), want %d", l.Count, sum, n)
	}
	if want := int64(workers) * 1000 * each * (each - 1) / 2; int64(l.Sum) != want {
		t.Fatalf("Sum = %d, want %d", l.Sum, want)
	}
	if l.Buckets[0] != workers*2 { // 0 and 1000 ns
		t.Fatalf("first bucket %d, want %d", l.Buckets[0], workers*2)
	}
	if a := testing.AllocsPerRun(100, func() { tb.Add(Refused); observe(&h, 5000) }); a != 0 {
		t.Fatalf("Add and ObserveRow allocate %v", a)
	}
}

// TestZeroTable: a Table never Init'ed reads zero.
func TestZeroTable(t *testing.T) {
	var tb Table
	if tb.Counts() != (ward.Counts{}) {
		t.Fatal("a zero Table reads counts")
	}
	var c Table
	c.Init()
	c.Add(Admitted)
	if c.Counts() != (ward.Counts{Admitted: 1}) {
		t.Fatalf("an Init'ed Table with one admission reads %+v", c.Counts())
	}
}

// TestMono: a reading lower than one before reads as the one before.
func TestMono(t *testing.T) {
	var m Mono
	for _, c := range [][2]uint64{{3, 3}, {2, 3}, {5, 5}, {0, 5}} {
		if got := m.Of(c[0]); got != c[1] {
			t.Fatalf("Of(%d) = %d, want %d", c[0], got, c[1])
		}
	}
}
