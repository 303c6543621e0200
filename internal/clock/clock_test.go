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

func TestRefusalsPace(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // one P: the counts are per P
	var r Refusals
	r.Init()
	// the reading stays at 5: reads at the 1st, 2nd, 4th refusal, then every 8th
	var due []int
	for i := 1; i <= 32; i++ {
		if r.Refuse(5) {
			due = append(due, i)
		}
	}
	if want := []int{1, 2, 4, 8, 16, 24, 32}; !slices.Equal(due, want) {
		t.Fatalf("reads at refusals %v, want %v", due, want)
	}
	// the reading moved: the next refusal reads again, and so on at every move
	for s := int64(6); s < 10; s++ {
		if !r.Refuse(s) {
			t.Fatalf("Refuse(%d) after the reading moved: no read", s)
		}
	}
	if got := r.Load(); got != 36 {
		t.Fatalf("Load = %d, want 36", got)
	}
	r.Undo()
	if got := r.Load(); got != 35 {
		t.Fatalf("Load after Undo = %d, want 35", got)
	}
	if a := testing.AllocsPerRun(100, func() { r.Refuse(7) }); a != 0 {
		t.Fatalf("Refuse allocates %v", a)
	}
}
