package breaker_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/wardgo/ward/breaker"
)

// The pure core over explicit instants, with go-zero's numbers: ten failures, then the draw
// decides.
func ExampleCore_Allow() {
	core, _ := breaker.NewCore(breaker.GoZeroPolicy(), 0)
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

// The default policy over explicit instants: ten failures with no success between them trip the
// breaker; it refuses every call but a probe every 500 ms, and the probe's success ends the trip.
func ExampleCore_Allow_trip() {
	ms := int64(time.Millisecond)
	core, _ := breaker.NewCore(breaker.DefaultPolicy(), 0)
	for i := int64(0); i < 10; i++ {
		core.Record(i*ms, breaker.Failure)
	}
	fmt.Printf("tripped: ratio %.0f\n", core.Ratio(10*ms))
	fmt.Println("draw 0.9 at 10 ms:", core.Allow(10*ms, 0.9))   // refused; the probe counts from here
	fmt.Println("draw 0.9 at 400 ms:", core.Allow(400*ms, 0.9)) // refused
	fmt.Println("probe at 511 ms:", core.Allow(511*ms, 0.9))    // more than 500 ms after 10 ms
	core.Record(520*ms, breaker.Success)
	fmt.Printf("after the probe's success: ratio %.0f\n", core.Ratio(520*ms))
	fmt.Println("draw 0.1 at 530 ms:", core.Allow(530*ms, 0.1))
	// Output:
	// tripped: ratio 1
	// draw 0.9 at 10 ms: false
	// draw 0.9 at 400 ms: false
	// probe at 511 ms: true
	// after the probe's success: ratio 0
	// draw 0.1 at 530 ms: true
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
		// ten failures with no success between them trip the breaker: the 11th is refused
		if got := get(func(context.Context) error { return down }); got != down.Error() {
			fmt.Printf("call %d: %s (ratio %.2f)\n", i+1, got, b.Ratio())
			break
		}
	}
	fmt.Println(get(func(context.Context) error { return notFound }))
	// Output:
	// call 11: served from cache (ratio 1.00)
	// served from cache
}
