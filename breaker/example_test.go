package breaker_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/wardgo/ward/breaker"
)

// The pure core over explicit instants: ten failures, then the draw decides.
func ExampleCore_Allow() {
	core, _ := breaker.NewCore(breaker.DefaultPolicy(), 0)
	for i := 0; i < 10; i++ {
		core.Record(int64(i)*int64(time.Millisecond), breaker.Failure)
	}
	now := int64(10 * time.Millisecond)
	fmt.Printf("ratio %.3f\n", core.Ratio(now)) // (10 − 5) / 11
	fmt.Println("draw 0.2:", core.Allow(now, 0.2))
	fmt.Println("draw 0.9:", core.Allow(now, 0.9))
	// Output:
	// ratio 0.455
	// draw 0.2: false
	// draw 0.9: true
}

// A failing backend behind a breaker with an injected clock and draw. The caller's own errors
// (a not found) are the backend answering; a refusal is served from a cache.
func ExampleBreaker_Do() {
	now := int64(0)
	notFound := errors.New("not found")
	b, _ := breaker.New(
		breaker.WithClock(func() int64 { return now }),
		breaker.WithRand(func() float64 { return 0.5 }),
		breaker.WithRefresh(0),
		breaker.WithOwnError(func(err error) bool { return errors.Is(err, notFound) }),
	)
	ctx := context.Background()
	down := errors.New("connection refused")
	get := func(call func(context.Context) error) string {
		err := b.Do(ctx, call)
		if errors.Is(err, breaker.ErrUnavailable) {
			return "served from cache"
		}
		return fmt.Sprint(err)
	}
	for i := 0; i < 20; i++ {
		now += int64(10 * time.Millisecond)
		// twelve failures: (12 − 5) / 13 = 0.54 > the draw 0.5, so the 13th is refused
		if got := get(func(context.Context) error { return down }); got != down.Error() {
			fmt.Printf("call %d: %s (ratio %.2f)\n", i+1, got, b.Ratio())
			break
		}
	}
	fmt.Println(get(func(context.Context) error { return notFound }))
	// Output:
	// call 13: served from cache (ratio 0.57)
	// served from cache
}
