package stripe

import (
	"runtime"
	"sync"
	"testing"
	"unsafe"

	"github.com/wardgo/ward/internal/procs"
)

func TestRoundUp(t *testing.T) {
	for _, c := range [][2]int{{0, 0}, {1, Words}, {Words, Words}, {Words + 1, 2 * Words}} {
		if got := RoundUp(c[0]); got != c[1] {
			t.Errorf("RoundUp(%d) = %d, want %d", c[0], got, c[1])
		}
	}
}

func TestOps(t *testing.T) {
	var x int64
	Store(&x, 5)
	Add(&x, 3)
	if Load(&x) != 8 {
		t.Fatalf("Load = %d, want 8", Load(&x))
	}
}

// TestPlainOnlyWhereSafe: plain (non-atomic) stripe words only on a 64-bit target with a real P
// index and no race detector.
func TestPlainOnlyWhereSafe(t *testing.T) {
	if Plain && (unsafe.Sizeof(uintptr(0)) != 8 || !Pinned || Race) {
		t.Fatalf("Plain = true with pointer size %d, Pinned %v, Race %v", unsafe.Sizeof(uintptr(0)), Pinned, Race)
	}
}

// BenchmarkPin measures a table's Pin+Unpin, the floor under every striped write.
func BenchmarkPin(b *testing.B) {
	var t Table
	t.Init(1)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			t.Pin()
			Unpin()
		}
	})
}

// add adds d to the calling P's first word, as every per-P type in ward writes its row.
func add(tb *Table, d int64) {
	Add((*int64)(tb.Pin()), d)
	Unpin()
}

// sum adds up the first word of every row ever made, as every reader does.
func sum(tb *Table) int64 {
	var s int64
	for row := range tb.All() {
		s += Load((*int64)(row))
	}
	return s
}

func TestTableAdd(t *testing.T) {
	var tb Table
	tb.Init(1)
	for i := 0; i < 100; i++ {
		add(&tb, 2)
	}
	if got := sum(&tb); got != 200 {
		t.Fatalf("sum = %d, want 200", got)
	}
	if a := testing.AllocsPerRun(100, func() { add(&tb, 1) }); a != 0 {
		t.Fatalf("a pinned add allocates %v", a)
	}
}

func TestTableRows(t *testing.T) {
	var tb Table
	tb.Init(Words + 1)
	if got := tb.Words(); got != 2*Words {
		t.Fatalf("Words = %d, want %d", got, 2*Words)
	}
	if got := tb.Rows(); got != Count() {
		t.Fatalf("Rows = %d, want %d", got, Count())
	}
	// rows never overlap and sit on whole cache lines
	seen := map[uintptr]bool{}
	for row := range tb.All() {
		a := uintptr(row)
		if seen[a] {
			t.Fatalf("row %#x yielded twice", a)
		}
		seen[a] = true
	}
	tb.grow(2*Count() + 1)
	if got := tb.Rows(); got < 3*Count() {
		t.Fatalf("after growing, Rows = %d, want old and new rows (>= %d)", got, 3*Count())
	}
}

// TestTableExactAcrossGOMAXPROCS changes GOMAXPROCS up and down while goroutines add and
// subtract on every P: every update must survive (the count returns to exactly what was added),
// in every build. Before tables grew, Ps past the first stripes shared one and plain += lost
// updates.
func TestTableExactAcrossGOMAXPROCS(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	runtime.GOMAXPROCS(1)
	var tb Table
	tb.Init(1)
	const workers, each = 64, 2000
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := 0; i < each; i++ {
				add(&tb, 3)
				if i%7 == 0 {
					runtime.Gosched()
				}
				add(&tb, -1)
			}
		}()
	}
	stop := procs.Flip()
	close(start)
	wg.Wait()
	stop()
	if got, want := sum(&tb), int64(workers*each*2); got != want {
		t.Fatalf("sum = %d, want %d: updates lost while GOMAXPROCS changed", got, want)
	}
	if tb.Rows() < 32 {
		t.Logf("table rows %d: GOMAXPROCS 32 never pinned a P past the first rows (scheduling)", tb.Rows())
	}
}

// TestZeroTablePanicsBeforePinning: Pin on a Table never Init'ed panics, and the panic can be
// recovered: nothing was pinned.
func TestZeroTablePanicsBeforePinning(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Pin on a zero Table did not panic")
		}
	}()
	var tb Table
	tb.Pin()
}
