// Command tour puts a failing backend behind a breaker, overloads a server behind a shedder and
// steps once through each limiter, in a few readable lines: a tour of ward's pure cores
// with explicit instants, so the output is the same every time.
package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/wardgo/ward/adaptive"
	"github.com/wardgo/ward/breaker"
	"github.com/wardgo/ward/rate"
	"github.com/wardgo/ward/retry"
	"github.com/wardgo/ward/shed"
)

const ms = int64(time.Millisecond)

func main() { tour(os.Stdout) }

func tour(w io.Writer) {
	// A breaker in front of a backend that fails every call for two seconds.
	b, _ := breaker.NewCore(breaker.DefaultPolicy(), 0)
	refused := 0
	for i := int64(0); i < 200; i++ {
		now := i * 10 * ms
		if !b.Allow(now, float64(i%10)/10) {
			refused++
			continue
		}
		b.Record(now, breaker.Failure)
	}
	fmt.Fprintf(w, "breaker: backend down 2 s, %d of 200 calls refused, ratio %.2f\n", refused, b.Ratio(2000*ms))

	// A shedder on a server at 95% CPU with calls piling up.
	s, _ := shed.NewCore(shed.DefaultPolicy(), 0)
	for i := 0; i < 20; i++ { // the first 100 ms: 20 calls of 50 ms; capacity 10
		t, _ := s.Allow(0, 300)
		t.Pass(50 * ms)
	}
	var queue []shed.Ticket
	admitted := 0
	for i := 0; i < 60; i++ {
		if t, ok := s.Allow(100*ms, 950); ok {
			admitted++
			queue = append(queue, t)
			if i%4 == 0 {
				queue[0].Fail() // now and then one ends, which moves the average in flight
				queue = queue[1:]
			}
		}
	}
	fmt.Fprintf(w, "shedder: 60 calls at 95%% CPU against a capacity of %.0f, %d admitted\n", s.Capacity(100*ms), admitted)

	// One step through each limiter rule: ten calls at 10 ms in flight 20, then a slower window.
	// Knee, ward's own, is the one to start with; the others are Netflix's.
	for _, r := range []struct {
		name string
		rule adaptive.Rule
	}{
		{"Knee", must(adaptive.NewKnee(adaptive.DefaultKnee()))},
		{"AIMD", must(adaptive.NewAIMD(adaptive.DefaultAIMD()))},
		{"Vegas", must(adaptive.NewVegas(adaptive.DefaultVegas(), func() float64 { return 0.5 }))},
		{"Gradient", must(adaptive.NewGradient(adaptive.DefaultGradient()))},
		{"MinRTT", must(adaptive.NewMinRTT(adaptive.DefaultMinRTT(), func() float64 { return 0.5 }))},
		{"Fixed", must(adaptive.NewFixed(20))},
	} {
		before := r.rule.Limit()
		for i := 0; i < 10; i++ {
			r.rule.Sample(adaptive.Sample{RTT: 10 * time.Millisecond, InFlight: r.rule.Limit()})
		}
		fast := r.rule.Limit()
		r.rule.Sample(adaptive.Sample{RTT: 40 * time.Millisecond, InFlight: r.rule.Limit(), Dropped: true})
		fmt.Fprintf(w, "%-8s limit %d, after ten fast samples %d, after a slow dropped one %d\n", r.name, before, fast, r.rule.Limit())
	}

	// A bucket, and a backoff.
	bucket, _ := rate.NewBucket(10, 5, 0)
	taken := 0
	for bucket.Acquire(0) {
		taken++
	}
	fmt.Fprintf(w, "bucket: %d taken at once, the next in %v\n", taken, bucket.Next(0, 1))
	fmt.Fprintf(w, "backoff: %v\n", retry.DefaultBackoff().Schedule([]float64{0.5, 0.5}))
}

func must[T adaptive.Rule](r T, err error) adaptive.Rule {
	if err != nil {
		panic(err)
	}
	return r
}
