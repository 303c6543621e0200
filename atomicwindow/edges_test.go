package atomicwindow

import (
	"math"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestStripedReadsEndAtMaxInt64: a read at the last instant int64 holds, with 1 ns buckets,
// returns. Its loop used to count bucket indexes up to a head of MaxInt64, which never ends.
func TestStripedReadsEndAtMaxInt64(t *testing.T) {
	w := mustStriped(t, 4, 4, 1, 0)
	w.Add(math.MaxInt64, 0, 5)
	w.Add(math.MaxInt64-1, 0, 2) // before the head bucket: written into it
	if got := w.Sum(math.MaxInt64, true)[0]; got != 7 {
		t.Fatalf("Sum at MaxInt64 = %d, want 7", got)
	}
	n := 0
	w.Each(math.MaxInt64, true, func(Bucket) { n++ })
	if n != 4 {
		t.Fatalf("Each at MaxInt64 visited %d buckets, want 4", n)
	}
	// an origin at MinInt64: the distance to MaxInt64 overflows int64; the index saturates
	v := mustStriped(t, 2, 2*time.Nanosecond, 1, math.MinInt64)
	v.Add(math.MaxInt64, 0, 1)
	if got := v.Sum(math.MaxInt64, true)[0]; got != 1 {
		t.Fatalf("Sum across the whole int64 range = %d, want 1", got)
	}
}

// TestZeroValuesPanicBeforePinning: a zero Batch or Striped panics with a message, and the panic
// can be recovered: nothing was pinned. A zero Batch used to fault while pinned to its P, which
// kills the process.
func TestZeroValuesPanicBeforePinning(t *testing.T) {
	for name, f := range map[string]func(){
		"Batch.Add":       func() { var b Batch; b.Add(Bucket{1}) },
		"Striped.AddAll":  func() { var w Striped; w.AddAll(0, Bucket{1}) },
		"Striped.Add":     func() { var w Striped; w.Add(0, 0, 1) }, // no fields: ignored, no panic
		"Batch.Fold zero": func() { var b Batch; _ = b.Fold() },
	} {
		msg := func() (msg string) {
			defer func() {
				if r := recover(); r != nil {
					msg, _ = r.(string)
					if msg == "" {
						msg = "non-string panic"
					}
				}
			}()
			f()
			return ""
		}()
		switch name {
		case "Batch.Add", "Striped.AddAll":
			if !strings.HasPrefix(msg, "atomicwindow: ") {
				t.Errorf("%s on a zero value: panic %q, want one starting %q", name, msg, "atomicwindow: ")
			}
		default:
			if msg != "" {
				t.Errorf("%s on a zero value panicked: %q", name, msg)
			}
		}
	}
}

// TestClockJumpsFarBack: after a write at a far-future instant (a Unix time among monotonic
// ones), writes back at the present neither vanish into the far-future head bucket nor stay there
// forever: the window restarts at the present, and ages out as usual. Window and Striped agree.
func TestClockJumpsFarBack(t *testing.T) {
	const sec = int64(time.Second)
	future := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	w := mustWindow[Bucket](t, 10, 10*time.Second, 0)
	s := mustStriped(t, 10, 10*time.Second, 1, 0)
	add := func(now, v int64) { w.Slot(now)[0] += v; s.Add(now, 0, v) }
	sum := func(now int64) int64 {
		var pw int64
		w.Each(now, true, func(b Bucket) { pw += b[0] })
		if sw := s.Sum(now, true)[0]; sw != pw {
			t.Fatalf("at %d: Striped sums %d, Window %d", now, sw, pw)
		}
		return pw
	}
	add(1*sec, 1)
	add(future, 100) // a far-future instant is written
	if got := sum(future); got != 100 {
		t.Fatalf("sum at the future instant = %d, want 100", got)
	}
	if got := sum(2 * sec); got != 0 {
		t.Fatalf("read back at 2s = %d, want 0 (every bucket lies in its future)", got)
	}
	add(2*sec, 5) // the clock jumped back: the window restarts at 2s
	add(3*sec, 7)
	if got := sum(3 * sec); got != 12 {
		t.Fatalf("sum at 3s = %d, want 12", got)
	}
	if got := sum(12*sec + sec/2); got != 7 {
		t.Fatalf("sum at 12.5s = %d, want 7 (the write at 2s aged out)", got)
	}
	if got := sum(20 * sec); got != 0 {
		t.Fatalf("sum at 20s = %d, want 0 (everything aged out)", got)
	}
	add(9*sec, 1) // a write slightly in the past (under a window) goes into the newest bucket
	if got := sum(12*sec + sec/2); got != 8 {
		t.Fatalf("sum at 12.5s after a late write = %d, want 8", got)
	}
}

// TestStripedJumpsConcurrently: goroutines writing at two origins at once (one far ahead of the
// other) restart the window over and over; nothing panics, and no read sums more than was written.
func TestStripedJumpsConcurrently(t *testing.T) {
	s := mustStriped(t, 4, time.Second, 1, 0)
	const goroutines, writes = 8, 2000
	far := int64(1) << 60
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < writes; i++ {
				now := int64(i)
				if (g+i)%7 == 0 {
					now += far
				}
				s.Add(now, 0, 1)
				if got := s.Sum(now, true)[0]; got > goroutines*writes || got < 0 {
					t.Errorf("Sum = %d, more than the %d written", got, goroutines*writes)
					return
				}
			}
		}()
	}
	wg.Wait()
}
