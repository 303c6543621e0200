package breaker

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/wardgo/ward/internal/clock"
)

// mutexBreaker is the straightforward version of the same arithmetic: one mutex around a Core,
// the clock read on both sides of the call as a plain implementation would.
type mutexBreaker struct {
	mu   sync.Mutex
	core *Core
}

func (m *mutexBreaker) do(fn func() error) error {
	now := clock.Now()
	m.mu.Lock()
	ok := m.core.Allow(now, rand.Float64())
	m.mu.Unlock()
	if !ok {
		return ErrUnavailable
	}
	err := fn()
	now = clock.Now()
	m.mu.Lock()
	if err == nil {
		m.core.Record(now, Success)
	} else {
		m.core.Record(now, Failure)
	}
	m.mu.Unlock()
	return err
}

func ok() error { return nil }

func okCtx(context.Context) error { return nil }

// BenchmarkDo measures a healthy call through the breaker: Allow, a call doing nothing, Pass.
func BenchmarkDo(b *testing.B) {
	b.Run("impl=ward", func(b *testing.B) {
		br, _ := New()
		ctx := context.Background()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_ = br.Do(ctx, okCtx)
			}
		})
	})
	b.Run("impl=mutex", func(b *testing.B) {
		core, _ := NewCore(DefaultPolicy(), clock.Now())
		m := &mutexBreaker{core: core}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_ = m.do(ok)
			}
		})
	})
}

// BenchmarkAllow measures a healthy call without Do's wrapping: Allow, then Pass.
func BenchmarkAllow(b *testing.B) {
	br, _ := New()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			p, _ := br.Allow()
			p.Pass()
		}
	})
}

// BenchmarkRefuse measures a refusal: the backend has failed every call (the default policy
// has tripped), and the draw is under the ratio.
func BenchmarkRefuse(b *testing.B) {
	failing := func() *Core {
		c, _ := NewCore(GoZeroPolicy(), clock.Now())
		for i := 0; i < 1000; i++ {
			c.Record(clock.Now(), Failure)
		}
		return c
	}
	b.Run("impl=ward", func(b *testing.B) {
		br, _ := New(WithRand(func() float64 { return 0 }))
		for i := 0; i < 1000; i++ {
			p, _ := br.Allow()
			p.Fail()
		}
		br.refresh(clock.Now())
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_, _ = br.Allow() // refused, but a probe every ProbeAfter
			}
		})
	})
	b.Run("impl=mutex", func(b *testing.B) {
		m := &mutexBreaker{core: failing()}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_ = m.do(ok)
			}
		})
	})
}
