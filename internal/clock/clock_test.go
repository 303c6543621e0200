package clock

import (
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
