package breaker_test

import (
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

// A failing backend behind a breaker with an injected clock and draw.
func ExampleBreaker_DoWith() {
	now := int64(0)
	b, _ := breaker.New(
		breaker.WithClock(func() int64 { return now }),
		breaker.WithRand(func() float64 { return 0.5 }),
		breaker.WithRefresh(0),
	)
	down := errors.New("connection refused")
	notFound := errors.New("not found")
	acceptable := func(err error) bool { return errors.Is(err, notFound) }
	fallback := func(error) error { return errors.New("served from cache") }
	for i := 0; i < 20; i++ {
		now += int64(10 * time.Millisecond)
		// twelve failures: (12 − 5) / 13 = 0.54 > the draw 0.5, so the 13th is refused
		err := b.DoWith(func() error { return down }, acceptable, fallback)
		if err != down {
			fmt.Printf("call %d: %v (ratio %.2f)\n", i+1, err, b.Ratio())
			break
		}
	}
	fmt.Println(b.DoWith(func() error { return notFound }, acceptable, fallback))
	// Output:
	// call 13: served from cache (ratio 0.57)
	// served from cache
}
