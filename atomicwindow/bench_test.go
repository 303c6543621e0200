package atomicwindow

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// mutexWindow is the baseline a mutex-guarded ring gives, as go-zero's collection.RollingWindow
// does: one lock per write, shared by every goroutine.
type mutexWindow struct {
	mu sync.Mutex
	w  *Window[int64]
}

func (m *mutexWindow) add(now, v int64) {
	m.mu.Lock()
	*m.w.Slot(now) += v
	m.mu.Unlock()
}

// atomicRing is the other obvious baseline: shared buckets, one atomic add per write.
type atomicRing struct {
	head    atomic.Int64
	width   int64
	buckets []atomic.Int64
}

func (a *atomicRing) add(now, v int64) {
	idx := now / a.width
	if h := a.head.Load(); idx > h && a.head.CompareAndSwap(h, idx) {
		for i := h + 1; i <= idx && i <= h+int64(len(a.buckets)); i++ {
			a.buckets[i%int64(len(a.buckets))].Store(0)
		}
	}
	a.buckets[idx%int64(len(a.buckets))].Add(v)
}

// BenchmarkWindowAdd measures one write at an explicit instant (no clock read), each goroutine
// moving its own clock 1 µs per write so buckets turn over now and then. Every 1024 writes a
// goroutine catches its clock up with the latest any goroutine has reached, as goroutines reading
// one clock are: a goroutine left a whole window behind would read as the clock jumping back.
func BenchmarkWindowAdd(b *testing.B) {
	const size, window = 10, time.Second
	b.Run("impl=ward", func(b *testing.B) {
		w := mustStriped(b, size, window, 1, 0)
		var latest atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			now := int64(0)
			for pb.Next() {
				now += 1000
				if now&(1<<20-1) < 1000 { // every 1024 writes
					now = max(now, latest.Load())
					latest.Store(now)
				}
				w.Add(now, 0, 1)
			}
		})
	})
	b.Run("impl=mutex", func(b *testing.B) {
		m := &mutexWindow{w: mustWindow[int64](b, size, window, 0)}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			now := int64(0)
			for pb.Next() {
				now += 1000
				m.add(now, 1)
			}
		})
	})
	b.Run("impl=atomic", func(b *testing.B) {
		a := &atomicRing{width: int64(window) / size, buckets: make([]atomic.Int64, size)}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			now := int64(0)
			for pb.Next() {
				now += 1000
				a.add(now, 1)
			}
		})
	})
}

// BenchmarkBatchAdd measures the adaptive limiter's per-sample write: four counters, one pin.
func BenchmarkBatchAdd(b *testing.B) {
	w, _ := NewBatch(Sum, Sum, Max, Max)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			w.Add(Bucket{1000, 1, 7, 0})
		}
	})
}

// BenchmarkStripedSum measures a reader folding a 40-bucket window (the breaker's refresh).
func BenchmarkStripedSum(b *testing.B) {
	w := mustStriped(b, 40, 10*time.Second, 3, 0)
	for i := int64(0); i < 40; i++ {
		w.Add(i*int64(250*time.Millisecond), int(i%3), 1)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = w.Sum(int64(10*time.Second)-1, true)
	}
}
