package atomicwindow

import (
	"errors"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/wardgo/ward/internal/stripe"
)

// pureStriped folds a pure Window of Buckets the way a Striped is read, for differential tests.
func pureEach(w *Window[Bucket], now int64, current bool) []Bucket {
	var out []Bucket
	w.Each(now, current, func(b Bucket) { out = append(out, b) })
	return out
}

func stripedEach(w *Striped, now int64, current bool) []Bucket {
	var out []Bucket
	w.Each(now, current, func(b Bucket) { out = append(out, b) })
	return out
}

func sumOf(bs []Bucket) (s Bucket) {
	for _, b := range bs {
		for k := range s {
			s[k] += b[k]
		}
	}
	return s
}

// differential drives a Window and a Striped with the same steps decoded from data and fails at
// the first reading that differs.
func differential(t *testing.T, size int, window time.Duration, fields int, data []byte) {
	t.Helper()
	origin := int64(1_000_000)
	pw, werr := NewWindow[Bucket](size, window, origin)
	sw, serr := NewStriped(size, window, fields, origin)
	if (werr == nil) != (serr == nil) {
		t.Fatalf("NewWindow(%d, %v) = %v but NewStriped = %v", size, window, werr, serr)
	}
	if werr != nil {
		return
	}
	now := origin
	for i := 0; i+2 < len(data); i += 3 {
		// step: -1/4 of a bucket up to ~2 windows forward, sometimes backwards
		width := int64(pw.Width())
		step := (int64(data[i]) - 16) * width / 8
		now += step
		field := int(data[i+1]) % (fields + 1) // one past the end: a read
		if field < fields {
			v := int64(data[i+2])
			if v%5 == 0 { // now and then, every counter at once
				var all Bucket
				for k := 0; k < fields; k++ {
					all[k] = v + int64(k)
					pw.Slot(now)[k] += all[k]
				}
				sw.AddAll(now, all)
				continue
			}
			pw.Slot(now)[field] += v
			sw.Add(now, field, v)
			continue
		}
		current := data[i+2]&1 == 1
		pe, se := pureEach(pw, now, current), stripedEach(sw, now, current)
		if len(pe) != len(se) {
			t.Fatalf("step %d at %d (shape %d×%v): Each visits %d buckets, pure window %d", i/3, now, size, pw.Width(), len(se), len(pe))
		}
		for k := range pe {
			if pe[k] != se[k] {
				t.Fatalf("step %d at %d: bucket %d = %v, pure window %v", i/3, now, k, se[k], pe[k])
			}
		}
		if s, p := sw.Sum(now, current), sumOf(pe); s != p {
			t.Fatalf("step %d at %d: Sum(current=%v) = %v, pure window %v", i/3, now, current, s, p)
		}
	}
}

func TestStripedMatchesWindow(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 300; trial++ {
		size := 1 + r.IntN(60)
		window := time.Duration(1 + r.Int64N(int64(10*time.Second)))
		fields := 1 + r.IntN(MaxFields)
		data := make([]byte, 3*500)
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		differential(t, size, window, fields, data)
	}
}

func FuzzStripedMatchesWindow(f *testing.F) {
	f.Add(uint8(40), int64(10*time.Second), uint8(3), []byte{16, 0, 1, 20, 3, 1, 40, 1, 2, 16, 3, 0})
	f.Add(uint8(1), int64(1), uint8(1), []byte{0, 0, 5, 255, 1, 1, 17, 0, 9})
	f.Fuzz(func(t *testing.T, size uint8, window int64, fields uint8, data []byte) {
		differential(t, int(size%70), time.Duration(window), 1+int(fields)%MaxFields, data)
	})
}

func TestStripedIgnoresBadField(t *testing.T) {
	w := mustStriped(t, 4, time.Second, 2, 0)
	w.Add(0, -1, 5)
	w.Add(0, 2, 5)
	w.Add(0, MaxFields, 5)
	if s := w.Sum(0, true); s != (Bucket{}) {
		t.Fatalf("writes to fields out of range landed: %v", s)
	}
}

// TestStripedStress has many goroutines write known amounts. Goroutines sharing a P never write
// at once (a pinned add cannot be preempted), so the total is exact whenever each P has a stripe of
// its own; with the random fallback, it may only be short.
func TestStripedStress(t *testing.T) {
	const goroutines, writes = 64, 2000
	w := mustStriped(t, 10, time.Hour, 2, 0)
	var start, done sync.WaitGroup
	start.Add(1)
	for g := 0; g < goroutines; g++ {
		done.Add(1)
		go func() {
			defer done.Done()
			start.Wait()
			for i := 0; i < writes; i++ {
				w.AddAll(int64(i), Bucket{1, 3})
			}
		}()
	}
	start.Done()
	done.Wait()
	got, want := w.Sum(writes, true), Bucket{goroutines * writes, 3 * goroutines * writes}
	if stripe.Pinned && got != want {
		t.Fatalf("Sum = %v, want exactly %v", got, want)
	}
	if got[0] > want[0] || got[1] > want[1] {
		t.Fatalf("Sum = %v, more than the %v written", got, want)
	}
}

// TestStripedStressSharedStripes raises GOMAXPROCS after construction so Ps share stripes: writes
// may be lost, never invented.
func TestStripedStressSharedStripes(t *testing.T) {
	prev := runtime.GOMAXPROCS(1)
	w := mustStriped(t, 10, time.Hour, 1, 0)
	b := mustBatch(t, Sum)
	runtime.GOMAXPROCS(max(4, 2*prev))
	defer runtime.GOMAXPROCS(prev)
	const goroutines, writes = 32, 5000
	var start, done sync.WaitGroup
	start.Add(1)
	var folded int64
	var mu sync.Mutex
	for g := 0; g < goroutines; g++ {
		done.Add(1)
		go func() {
			defer done.Done()
			start.Wait()
			for i := 0; i < writes; i++ {
				w.Add(int64(i), 0, 1)
				b.Add(Bucket{1})
				if i%500 == 0 {
					f := b.Fold()
					mu.Lock()
					folded += f[0]
					mu.Unlock()
				}
			}
		}()
	}
	start.Done()
	done.Wait()
	folded += b.Fold()[0]
	if got := w.Sum(writes, true)[0]; got > goroutines*writes || got <= 0 {
		t.Fatalf("Striped sum = %d, want in (0, %d]", got, goroutines*writes)
	}
	if folded > goroutines*writes || folded <= 0 {
		t.Fatalf("Batch folds = %d, want in (0, %d]", folded, goroutines*writes)
	}
}

func TestBatch(t *testing.T) {
	b := mustBatch(t, Sum, Sum, Max, Max)
	b.Add(Bucket{100, 1, 7, 0})
	b.Add(Bucket{300, 1, 3, 1})
	if got, want := b.Peek(), (Bucket{400, 2, 7, 1}); got != want {
		t.Fatalf("Peek = %v, want %v", got, want)
	}
	if got, want := b.Fold(), (Bucket{400, 2, 7, 1}); got != want {
		t.Fatalf("Fold = %v, want %v", got, want)
	}
	if got := b.Fold(); got != (Bucket{}) {
		t.Fatalf("Fold after Fold = %v, want empty", got)
	}
	b.Add(Bucket{50, 1, 2, 0})
	if got, want := b.Fold(), (Bucket{50, 1, 2, 0}); got != want {
		t.Fatalf("Fold of the next generation = %v, want %v", got, want)
	}
	if mustBatch(t).Fields() != 1 || mustBatch(t, Sum, Sum, Sum, Sum).Fields() != MaxFields {
		t.Fatal("NewBatch field count")
	}
}

func mustBatch(t testing.TB, kinds ...Kind) *Batch {
	t.Helper()
	b, err := NewBatch(kinds...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestNewBatchInvalid: more kinds than MaxFields, or a kind that is neither Sum nor Max, is an
// error matching ErrInvalid that names the argument; nothing is dropped or guessed.
func TestNewBatchInvalid(t *testing.T) {
	for _, c := range []struct {
		kinds []Kind
		field string
	}{
		{[]Kind{Sum, Sum, Sum, Sum, Sum}, "kinds = 5"},
		{[]Kind{Sum, Max, Max, Max, Sum, Sum}, "kinds = 6"},
		{[]Kind{Sum, 7}, "kinds[1] = 7"},
		{[]Kind{Max + 1}, "kinds[0] = 2"},
	} {
		b, err := NewBatch(c.kinds...)
		if b != nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.field) {
			t.Errorf("NewBatch(%v) = %v, %v; want ErrInvalid naming %s", c.kinds, b, err, c.field)
		}
	}
}

// TestBatchStressFolds folds while many goroutines write: every write is counted at most once.
func TestBatchStressFolds(t *testing.T) {
	const goroutines, writes = 32, 5000
	b := mustBatch(t, Sum, Max)
	var start, done sync.WaitGroup
	start.Add(1)
	var mu sync.Mutex
	var total int64
	for g := 0; g < goroutines; g++ {
		done.Add(1)
		go func() {
			defer done.Done()
			start.Wait()
			for i := 0; i < writes; i++ {
				b.Add(Bucket{1, int64(i)})
				if i%100 == 99 {
					f := b.Fold()
					if f[1] >= writes {
						t.Errorf("Max field %d was never written", f[1])
					}
					mu.Lock()
					total += f[0]
					mu.Unlock()
				}
			}
		}()
	}
	start.Done()
	done.Wait()
	total += b.Fold()[0]
	if total > goroutines*writes || total <= 0 {
		t.Fatalf("folds counted %d writes, want in (0, %d]", total, goroutines*writes)
	}
}

func TestStripedAllocs(t *testing.T) {
	w := mustStriped(t, 50, 5*time.Second, 2, 0)
	b := mustBatch(t, Sum, Sum, Max, Max)
	now := int64(0)
	if a := testing.AllocsPerRun(1000, func() { now += 3 * ms; w.Add(now, 0, 1); w.AddAll(now, Bucket{1, 5}) }); a != 0 {
		t.Fatalf("Add allocates %v per call", a)
	}
	var s int64
	if a := testing.AllocsPerRun(100, func() {
		w.Each(now, false, func(b Bucket) { s += b[0] })
		s += w.Sum(now, true)[1]
	}); a != 0 {
		t.Fatalf("Each/Sum allocate %v per call", a)
	}
	if a := testing.AllocsPerRun(1000, func() { b.Add(Bucket{1, 2, 3, 4}); _ = b.Fold() }); a != 0 {
		t.Fatalf("Batch Add/Fold allocate %v per call", a)
	}
}

// TestLayout: every padded header starts one cache line in and ends on a line boundary, so the
// words the hot path reads share no line with a neighbour. The pads are sized from unsafe.Sizeof,
// so this holds on 32-bit targets too (make test-arm64 runs it under GOARCH=arm). The Striped's
// own headers are checked where they live (internal/swin).
func TestLayout(t *testing.T) {
	line := uintptr(stripe.CacheLine)
	var b Batch
	if off := unsafe.Offsetof(b.batchHeader); off != line {
		t.Errorf("Batch.batchHeader at offset %d, want %d (one line of padding before it)", off, line)
	}
	if size := unsafe.Sizeof(b); size%line != 0 {
		t.Errorf("Batch: size %d, not a whole number of %d-byte lines", size, line)
	}
	if size := unsafe.Sizeof(Striped{}); size%line != 0 {
		t.Errorf("Striped: size %d, not a whole number of %d-byte lines", size, line)
	}
	if b.rows.Words()*8%stripe.CacheLine != 0 {
		t.Errorf("rows of %d words are not whole lines", b.rows.Words())
	}
	if stripe.Count()&(stripe.Count()-1) != 0 || stripe.Count() < runtime.GOMAXPROCS(0) {
		t.Errorf("stripe.Count() = %d, want a power of two >= GOMAXPROCS %d", stripe.Count(), runtime.GOMAXPROCS(0))
	}
}
