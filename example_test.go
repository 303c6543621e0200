package ward_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/wardgo/ward"
	"github.com/wardgo/ward/adaptive"
	"github.com/wardgo/ward/rate"
)

// A rate limit and an adaptive limit composed: the rate limit (the cheaper refusal) is asked
// first, so a call it refuses never takes a slot of the adaptive limit; Get returns the call's
// result.
func ExampleWith() {
	now := int64(0) // a clock the example moves
	bucket, _ := rate.NewBucketLimiter(1, 2, rate.WithClock(func() int64 { return now }))
	rule, _ := adaptive.NewKnee(adaptive.DefaultKnee())
	limiter, _ := adaptive.New(rule)
	guard, _ := ward.With(bucket, limiter)

	for i := 1; i <= 3; i++ {
		n, err := ward.Get(context.Background(), guard, func(context.Context) (int, error) { return i * 10, nil })
		wait, _ := ward.RetryAfter(err)
		fmt.Println(n, err, errors.Is(err, ward.ErrQuota), wait, limiter.InFlight())
	}
	// Output:
	// 10 <nil> false 0s 0
	// 20 <nil> false 0s 0
	// 0 rate: limited (retry in 1s) true 1s 0
}

// Admit and settle by hand: the admission is held by value and settled once, here by how the
// call ended.
func ExampleGuard_admit() {
	rule, _ := adaptive.NewFixed(1)
	limiter, _ := adaptive.New(rule)
	var g ward.Guard = limiter

	a, err := g.Admit(context.Background())
	fmt.Println(err, limiter.InFlight())
	_, err = g.Admit(context.Background())
	fmt.Println(err)
	a.End(context.Background(), nil) // a success: the slot is free again
	a.Fail()                         // settled already: nothing
	fmt.Println(limiter.InFlight())
	// Output:
	// <nil> 1
	// adaptive: limit exceeded
	// 0
}
