package adaptive

import (
	"sync/atomic"
	"testing"
)

// semaphore is the floor a fixed bulkhead gives: one CAS loop in, one atomic add out.
type semaphore struct {
	n     atomic.Int64
	limit int64
}

func (s *semaphore) acquire() bool {
	for {
		n := s.n.Load()
		if n >= s.limit {
			return false
		}
		if s.n.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func (s *semaphore) release() { s.n.Add(-1) }

// BenchmarkAcquire measures an admitted call: Acquire and Pass, with no work in between, through
// the Gradient rule (the limit is set high so nothing is refused).
func BenchmarkAcquire(b *testing.B) {
	p := DefaultGradient()
	p.Initial, p.Min, p.Max = 1<<20, 1<<20, 1<<20
	for _, c := range []struct {
		name  string
		every int
	}{{"impl=ward", DefaultSampleEvery}, {"impl=ward-every", 1}} {
		b.Run(c.name, func(b *testing.B) {
			rule, _ := NewGradient(p)
			l, _ := New(rule, WithSampleEvery(c.every))
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if lease, ok := l.Acquire(); ok {
						lease.Pass()
					}
				}
			})
		})
	}
	b.Run("impl=semaphore", func(b *testing.B) {
		s := &semaphore{limit: 1 << 20}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if s.acquire() {
					s.release()
				}
			}
		})
	})
}

// BenchmarkRefuse measures a refusal: the limit is full.
func BenchmarkRefuse(b *testing.B) {
	b.Run("impl=ward", func(b *testing.B) {
		l, _ := New(mustFixed(1))
		hold, _ := l.Acquire()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, ok := l.Acquire(); ok {
					b.Fatal("admitted over the limit")
				}
			}
		})
		hold.Pass()
	})
	b.Run("impl=semaphore", func(b *testing.B) {
		s := &semaphore{limit: 0}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if s.acquire() {
					b.Fatal("admitted over the limit")
				}
			}
		})
	})
}
