package rate_test

import (
	"fmt"
	"time"

	"github.com/wardgo/ward/rate"
)

// The seeds' "limiters" run: one burst of forty calls every two seconds, straddling the second
// boundary, through a bucket, a sliding window and a period of twenty a second.
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
			if bucket.Take(now, 1) {
				passed[0]++
			}
			if sliding.Take(now) {
				passed[1]++
			}
			if period.Take(now) != rate.Over {
				passed[2]++
			}
		}
		fmt.Println(b, passed[0], passed[1], passed[2])
	}
	last := 3*2000*ms + 970*ms + 39*3*ms/2
	fmt.Println("five tokens in", bucket.Next(last, 5)) // what is left after the burst, refilled at 20 a second
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
	grant := bucket.Step(stored, 0, 1)
	if grant.Granted {
		// write grant.State back, if the row still holds `stored`
	}
	fmt.Println(grant.State.Tokens, grant.Wait)
	// Output: 19 0s
}

func ExampleChain() {
	at := func() int64 { return 0 } // the instants below are on this clock
	perSecond, _ := rate.NewBucketLimiter(100, 10, rate.WithClock(at))
	inFlight := rate.NewGate(1)
	both := rate.Chain(perSecond, inFlight)
	fmt.Println(both.Acquire(0), both.Acquire(0), inFlight.Held())
	both.Release(0)
	fmt.Println(inFlight.Held())
	// Output:
	// true false 1
	// 0
}
