package shed

import (
	"errors"
	"sync"
	"testing"

	"github.com/wardgo/ward/internal/clock"
)

// mutexShedder is the straightforward version of the same arithmetic: one mutex around a Core,
// the clock read on both sides of the call.
type mutexShedder struct {
	mu   sync.Mutex
	core *Core
	cpu  func() int
}

func (m *mutexShedder) do() error {
	now := clock.Now()
	m.mu.Lock()
	t, ok := m.core.Allow(now, m.cpu())
	m.mu.Unlock()
	if !ok {
		return ErrOverloaded
	}
	now = clock.Now()
	m.mu.Lock()
	t.Pass(now)
	m.mu.Unlock()
	return nil
}

func cool() int { return 300 }

// BenchmarkAllow measures an admitted call: Allow, a call doing nothing, Pass.
func BenchmarkAllow(b *testing.B) {
	b.Run("impl=ward", func(b *testing.B) {
		s, _ := New(WithCPU(cool))
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if p, err := s.Allow(); err == nil {
					p.Pass()
				}
			}
		})
	})
	b.Run("impl=mutex", func(b *testing.B) {
		c, _ := NewCore(DefaultPolicy(), clock.Now())
		m := &mutexShedder{core: c, cpu: cool}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_ = m.do()
			}
		})
	})
}

// BenchmarkRefuse measures a refusal: the CPU at 100% and a thousand calls in flight.
func BenchmarkRefuse(b *testing.B) {
	hot := func() int { return 1000 }
	b.Run("impl=ward", func(b *testing.B) {
		cpu := 0
		s, _ := New(WithCPU(func() int { return cpu }))
		for i := 0; i < 1000; i++ {
			s.Allow()
		}
		for i := 0; i < 100; i++ { // settle nothing but raise the average: fail and re-admit
			p, _ := s.Allow()
			p.Fail()
		}
		cpu = 1000
		if _, err := s.Allow(); !errors.Is(err, ErrOverloaded) {
			b.Fatal("not refusing")
		}
		s.cpu = hot
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := s.Allow(); err == nil {
					b.Fatal("admitted")
				}
			}
		})
	})
	b.Run("impl=mutex", func(b *testing.B) {
		c, _ := NewCore(DefaultPolicy(), clock.Now())
		for i := 0; i < 1000; i++ {
			c.Allow(clock.Now(), 0)
		}
		for i := 0; i < 100; i++ {
			t, _ := c.Allow(clock.Now(), 0)
			t.Fail()
		}
		m := &mutexShedder{core: c, cpu: hot}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if m.do() == nil {
					b.Fatal("admitted")
				}
			}
		})
	})
}
