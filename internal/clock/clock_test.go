package clock

import (
	"runtime"
	"slices"
	"testing"
	"testing/synctest"
	"time"
	_ "unsafe" // for go:linkname, in this test only: the rival measured by BenchmarkNow
)

//go:linkname nanotime runtime.nanotime
func nanotime() int64

func TestNowIsMonotonic(t *testing.T) {
	prev := Now()
	for i := 0; i < 1000; i++ {
		n := Now()
		if n < prev {
			t.Fatalf("step %d: Now() = %d after %d", i, n, prev)
		}
		prev = n
	}
}

func TestNowFollowsSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := Now()
		time.Sleep(3 * time.Second) // fake time inside the bubble: returns at once
		b := Now()
		if got := time.Duration(b - a); got != 3*time.Second {
			t.Fatalf("Now moved %v across a 3s fake sleep, want exactly 3s", got)
		}
	})
}

func BenchmarkNow(b *testing.B) {
	b.Run("impl=since", func(b *testing.B) {
		var s int64
		for b.Loop() {
			s += Now()
		}
		_ = s
	})
	b.Run("impl=nanotime", func(b *testing.B) {
		var s int64
		for b.Loop() {
			s += nanotime()
		}
		_ = s
	})
	b.Run("impl=now", func(b *testing.B) {
		var s int64
		for b.Loop() {
			s += time.Now().UnixNano()
		}
		_ = s
	})
}

func TestCoarse(t *testing.T) {
	var c Coarse
	c.Store(100)
	c.Observe(105, 10) // under the granularity: not stored
	if c.Load() != 100 {
		t.Fatalf("Load = %d, want 100", c.Load())
	}
	c.Observe(110, 10)
	c.Observe(50, 10) // backwards: never stored
	if c.Load() != 110 {
		t.Fatalf("Load = %d, want 110", c.Load())
	}
	if Granularity(int64(time.Second)) != int64(time.Millisecond) || Granularity(2) != 1 || Granularity(400) != 100 {
		t.Fatal("Granularity")
	}
	if Refresh(int64(250*time.Millisecond)) != 62500*time.Microsecond || Refresh(1) != 1 {
		t.Fatal("Refresh")
	}
}

// TestRefusalsPace: a P's refusals read the clock on every 8th refusal in all (the 1st, 9th,
// 17th, …), and on a refusal that finds the reading moved since the P's previous one; a move does
// not restart the every-8th count.
func TestRefusalsPace(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // one P: the counts are per P
	var r Refusals
	r.Init()
	// refusals 1-28 at one reading, 29-30 at a new one, 31-36 at another
	var due []int
	for i := 1; i <= 36; i++ {
		seen := int64(5)
		if i > 30 {
			seen = 7
		} else if i > 28 {
			seen = 6
		}
		if r.Refuse(seen) {
			due = append(due, i)
		}
	}
	if want := []int{1, 9, 17, 25, 29, 31, 33}; !slices.Equal(due, want) {
		t.Fatalf("reads at refusals %v, want %v", due, want)
	}
	// at low traffic the reading moves between refusals (each read moves it): every refusal reads
	for s := int64(8); s < 12; s++ {
		if !r.Refuse(s) {
			t.Fatalf("Refuse(%d) after the reading moved: no read", s)
		}
	}
	if got := r.Load(); got != 40 {
		t.Fatalf("Load = %d, want 40", got)
	}
	r.Undo()
	if got := r.Load(); got != 39 {
		t.Fatalf("Load after Undo = %d, want 39", got)
	}
	if a := testing.AllocsPerRun(100, func() { r.Refuse(7) }); a != 0 {
		t.Fatalf("Refuse allocates %v", a)
	}
}
