package rate

import (
	"sync/atomic"
	"testing"
	"time"
)

// The hot paths of this package, one call each. Run with several -cpu values; the concurrent
// limiters use RunParallel, the pure cores a plain loop.

func benchClock() func() int64 {
	var now atomic.Int64
	return func() int64 { return now.Add(1) }
}

// BenchmarkBucketLimiter runs on the real clock: a shared fake clock would be the one word every
// call writes. burst=1 is one shared word by nature (a call may only take the slot at its own
// instant); a larger burst leases tokens to Ps once callers collide.
func BenchmarkBucketLimiter(b *testing.B) {
	for _, c := range []struct {
		name  string
		rate  float64
		burst int
	}{{"path=admit/burst=1", 1e9, 1}, {"path=admit/burst=10000", 1e9, 10000}, {"path=refuse", 1e-3, 1}} {
		b.Run(c.name, func(b *testing.B) {
			l, _ := NewBucketLimiter(c.rate, c.burst)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					l.Allow()
				}
			})
		})
	}
}

func BenchmarkSlidingLimiter(b *testing.B) {
	l, _ := NewSlidingLimiter(1000, time.Microsecond, WithClock(benchClock()))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l.Allow()
		}
	})
}

func BenchmarkPeriodLimiter(b *testing.B) {
	l, _ := NewPeriodLimiter(1000, time.Microsecond, true, WithClock(benchClock()))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l.Allow()
		}
	})
}

func BenchmarkBucket(b *testing.B) {
	bk, _ := NewBucket(1e6, 10, 0)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		bk.TakeAt(int64(i), 1)
	}
}

func BenchmarkSliding(b *testing.B) {
	s, _ := NewSliding(1000, time.Microsecond)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		s.TakeAt(int64(i), 1)
	}
}

func BenchmarkPeriod(b *testing.B) {
	p, _ := NewPeriod(1000, time.Microsecond, true)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		p.TakeAt(int64(i), 1)
	}
}
