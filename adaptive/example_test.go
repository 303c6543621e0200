package adaptive_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/wardgo/ward"
	"github.com/wardgo/ward/adaptive"
)

// A fixed limit of two: the third call at once is refused without waiting.
func ExampleLimiter_Acquire() {
	rule, _ := adaptive.NewFixed(2)
	limiter, _ := adaptive.New(rule)
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
			lease.Fail()
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

// Do settles each call by its error: here a not-found is the caller's own (the backend answered:
// a success's sample), and an error the backend returns when it is overloaded is a failure (a
// sample marked dropped).
func ExampleLimiter_Do() {
	errNotFound := errors.New("not found")
	errBusy := errors.New("backend busy")
	rule, _ := adaptive.NewFixed(1)
	limiter, _ := adaptive.New(rule,
		adaptive.WithOwnError(func(err error) bool { return errors.Is(err, errNotFound) }),
		adaptive.WithFailure(func(err error) bool { return errors.Is(err, errBusy) }))
	err := limiter.Do(context.Background(), func(ctx context.Context) error {
		inner := limiter.Do(ctx, func(context.Context) error { return nil })
		fmt.Println("nested call refused:", errors.Is(inner, adaptive.ErrLimitExceeded), errors.Is(inner, ward.ErrRefused))
		return errNotFound
	})
	fmt.Println("outer:", err, "in flight:", limiter.InFlight())
	// Output:
	// nested call refused: true true
	// outer: not found in flight: 0
}

// The pure core, driven by explicit instants: two windows of ten calls at 10 ms, then a window
// with a timeout. It gives the same limits a Limiter with that clock would.
func ExampleCore() {
	p := adaptive.DefaultAIMD()
	p.Initial, p.Min = 10, 1
	rule, _ := adaptive.NewAIMD(p)
	core, _ := adaptive.NewCore(rule, adaptive.DefaultWindow(), 0)
	now := int64(0)
	for window := 0; window < 3; window++ {
		for i := 0; i < 10; i++ {
			ticket, _ := core.Acquire(now)
			now += int64(100 * time.Millisecond)
			if window == 2 && i == 9 {
				ticket.Fail(now)
			} else {
				ticket.Pass(now)
			}
		}
		fmt.Println("window", window+1, "limit:", core.Limit())
	}
	// Output:
	// window 1 limit: 10
	// window 2 limit: 10
	// window 3 limit: 9
}
