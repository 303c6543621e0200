package adaptive_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/wardgo/ward/adaptive"
)

// A fixed limit of two: the third call at once is refused without waiting.
func ExampleLimiter_Acquire() {
	limiter, _ := adaptive.New(adaptive.Fixed(2))
	a, _ := limiter.Acquire()
	b, _ := limiter.Acquire()
	_, ok := limiter.Acquire()
	fmt.Println("third admitted:", ok)
	a.Pass()
	b.Ignore()
	fmt.Println("in flight:", limiter.InFlight())
	// Output:
	// third admitted: false
	// in flight: 0
}

// AIMD with an injected clock: one window of ten calls, one of them a timeout.
func ExampleNewAIMD() {
	now := int64(0)
	p := adaptive.DefaultAIMD()
	p.Initial, p.Min = 50, 1
	rule, _ := adaptive.NewAIMD(p)
	limiter, _ := adaptive.New(rule, adaptive.WithClock(func() int64 { return now }), adaptive.WithSampleEvery(1))
	for i := 0; i < 10; i++ {
		lease, _ := limiter.Acquire()
		now += int64(100 * time.Millisecond)
		if i == 3 {
			lease.Drop()
		} else {
			lease.Pass()
		}
	}
	s := limiter.Snapshot()
	fmt.Println("windows:", s.Windows, "limit:", s.Limit, "latency:", s.Latency)
	// Output: windows: 1 limit: 45 latency: 100ms
}

// The rules are plain arithmetic: feed them samples.
func ExampleNewGradient() {
	rule, _ := adaptive.NewGradient(adaptive.DefaultGradient())
	for i := 0; i < 20; i++ {
		rule.Sample(adaptive.Sample{RTT: 10 * time.Millisecond, InFlight: rule.Limit()})
	}
	fmt.Println("steady latency, limit grows:", rule.Limit()) // 20 + 0.8 a sample
	for i := 0; i < 5; i++ {
		rule.Sample(adaptive.Sample{RTT: 40 * time.Millisecond, InFlight: rule.Limit()})
	}
	fmt.Println("4x slower, limit falls:", rule.Limit()) // gradient held at 0.5: ×0.9 + 0.8 a sample
	// Output:
	// steady latency, limit grows: 36
	// 4x slower, limit falls: 24
}

func ExampleLimiter_Do() {
	limiter, _ := adaptive.New(adaptive.Fixed(1))
	err := limiter.Do(context.Background(), func(ctx context.Context) error {
		inner := limiter.Do(ctx, func(context.Context) error { return nil })
		fmt.Println("nested call refused:", errors.Is(inner, adaptive.ErrLimitExceeded))
		return nil
	})
	fmt.Println("outer:", err)
	// Output:
	// nested call refused: true
	// outer: <nil>
}
