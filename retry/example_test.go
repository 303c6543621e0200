package retry_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/wardgo/ward/failurewindow"
	"github.com/wardgo/ward/retry"
)

func ExampleBackoff_Schedule() {
	b := retry.DefaultBackoff()
	b.Attempts = 5
	fmt.Println(b.Schedule([]float64{0.5, 0.5, 0.5, 0.5}))
	b.Jitter = retry.Full
	fmt.Println(b.Schedule([]float64{0.1, 0.9}))
	// Output:
	// [100ms 200ms 400ms 800ms]
	// [10ms 180ms 0s 0s]
}

func ExampleDo() {
	calls := 0
	err := retry.Do(context.Background(), retry.DefaultBackoff(),
		func(context.Context) error {
			calls++
			if calls < 3 {
				return errors.New("unavailable")
			}
			return nil
		},
		retry.WithSleep(func(_ context.Context, d time.Duration) error { fmt.Println("wait", d); return nil }),
		retry.WithRand(func() float64 { return 0.5 }),
	)
	fmt.Println(calls, err)
	// Output:
	// wait 100ms
	// wait 200ms
	// 3 <nil>
}

func ExampleDeadline() {
	sec := int64(time.Second)
	d := retry.NewDeadline(2*time.Second, 10*sec)
	left, _ := d.Remaining(11 * sec)
	fmt.Println(left, d.Expired(12*sec))
	// Output: 1s true
}

// A call guarded by a failure window: its refusal carries the wait until the key passes, and Do
// sleeps exactly that before the next try. A refusal without a wait would be returned at once.
func ExampleDo_refusal() {
	now := int64(0) // an injected clock, moved by the sleep below
	w, _ := failurewindow.New(1, time.Minute, failurewindow.WithClock(func() int64 { return now }))
	w.Record("db") // one failure: the key is at its limit for a minute
	now += int64(15 * time.Second)
	err := retry.Do(context.Background(), retry.DefaultBackoff(),
		func(ctx context.Context) error {
			return w.Do(ctx, "db", func(context.Context) error { fmt.Println("called"); return nil })
		},
		retry.WithSleep(func(_ context.Context, d time.Duration) error { fmt.Println("wait", d); now += int64(d); return nil }),
	)
	fmt.Println(err)
	// Output:
	// wait 45s
	// called
	// <nil>
}
