package rate_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/wardgo/ward"
	"github.com/wardgo/ward/rate"
)

// One burst of forty calls every two seconds, straddling the second boundary, through a bucket, a
// sliding window and a period of twenty a second.
func Example() {
	ms := int64(time.Millisecond)
	bucket, _ := rate.NewBucket(20, 20, 0)
	sliding, _ := rate.NewSliding(20, time.Second)
	period, _ := rate.NewPeriod(20, time.Second, true)
	fmt.Println("burst bucket sliding period")
	for b := int64(0); b < 4; b++ {
		var passed [3]int
		for i := int64(0); i < 40; i++ {
			now := b*2000*ms + 970*ms + i*3*ms/2 // 40 calls 1.5 ms apart from 0.970 s
			for j, l := range []rate.Taker{bucket, sliding, period} {
				if ok, _ := l.TakeAt(now, 1); ok {
					passed[j]++
				}
			}
		}
		fmt.Println(b, passed[0], passed[1], passed[2])
	}
	last := 3*2000*ms + 970*ms + 39*3*ms/2
	// What is left after the burst, refilled at 20 a second, to the microsecond: the bucket counts
	// tokens in units of about a nanosecond's refill.
	fmt.Println("five tokens in", bucket.Next(last, 5).Round(time.Microsecond))
	// Output:
	// burst bucket sliding period
	// 0 21 20 40
	// 1 21 20 40
	// 2 21 20 40
	// 3 21 20 40
	// five tokens in 241.5ms
}

// A bucket shared through a store: Step answers against the stored state.
func ExampleBucket_Step() {
	bucket, _ := rate.NewBucket(10, 20, 0)
	stored := bucket.Opening(0) // what a key that is not in the store starts as
	grant := bucket.Step(0, stored, 1)
	if grant.Granted {
		// write grant.State back, if the row still holds `stored`
	}
	fmt.Println(grant.State.Tokens, grant.Wait)
	// Output: 19 0s
}

// Do runs the call if a token is there; a refusal matches rate.ErrLimited and ward.ErrRefused and
// carries the wait, for a Retry-After header.
func ExampleBucketLimiter_Do() {
	now := int64(0)
	limiter, _ := rate.NewBucketLimiter(10, 1, rate.WithClock(func() int64 { return now }))
	call := func(context.Context) error { return nil }
	fmt.Println(limiter.Do(context.Background(), call))
	err := limiter.Do(context.Background(), call)
	wait, _ := ward.RetryAfter(err)
	fmt.Println(errors.Is(err, rate.ErrLimited), errors.Is(err, ward.ErrRefused), wait)
	now += int64(wait)
	fmt.Println(limiter.Do(context.Background(), call))
	// Output:
	// <nil>
	// true true 100ms
	// <nil>
}

// TakeQuota tells the last event of a period apart, to warn when a quota is spent.
func ExamplePeriodLimiter_TakeQuota() {
	day, _ := rate.NewPeriodLimiter(2, 24*time.Hour, true, rate.WithClock(func() int64 { return 0 }))
	for range 3 {
		fmt.Print(day.TakeQuota(day.Now()), " ")
	}
	fmt.Println("reset in", day.Reset(day.Now()))
	// Output: Under Hit Over reset in 24h0m0s
}

func ExampleChain() {
	at := func() int64 { return 0 } // the instants below are on this clock
	perSecond, _ := rate.NewBucketLimiter(100, 10, rate.WithClock(at))
	inFlight, _ := rate.NewGate(1)
	both := rate.Chain(perSecond, inFlight)
	fmt.Println(both.Acquire(0), both.Acquire(0), inFlight.Held())
	both.Release(0)
	fmt.Println(inFlight.Held())
	// Output:
	// true false 1
	// 0
}
