package calls

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wardgo/ward/adaptive"
	"github.com/wardgo/ward/breaker"
	"github.com/wardgo/ward/failurewindow"
	"github.com/wardgo/ward/pool"
	"github.com/wardgo/ward/rate"
	"github.com/wardgo/ward/shed"
)

// Load is one guard of each kind an exporter exports, all on one injected clock (every reading
// a millisecond later), sized so that a few goroutines make each both admit and refuse, and the
// calls [Load.Run] made of each.
type Load struct {
	Clock   func() int64
	Limiter *adaptive.Limiter // limit 3, every call timed
	Parts   *adaptive.Partitions
	Queue   *adaptive.Queue
	Breaker *breaker.Breaker
	Shedder *shed.Shedder // on a CPU always hot, every call timed
	Bucket  *rate.BucketLimiter
	Sliding *rate.SlidingLimiter
	Period  *rate.PeriodLimiter
	Logins  *failurewindow.Window // settles ErrOwn as an ignore
	Pool    *pool.Pool[int]

	// the calls Run made of each guard, by the guard above of the same name
	L, B, Q, S, BucketT, SlidingT, PeriodT, LoginsT, PoolT Tallies
	PartsT                                                 map[string]*Tallies // "live" and "batch"
}

// NewLoad builds the guards; Close the Load to close its pool.
func NewLoad() (*Load, error) {
	var tick atomic.Int64
	l := &Load{Clock: func() int64 { return tick.Add(int64(time.Millisecond)) },
		PartsT: map[string]*Tallies{"live": {}, "batch": {}}}
	clk := l.Clock
	var errs []error
	keep := func(err error) { errs = append(errs, err) }
	fixed, err := adaptive.NewFixed(3)
	keep(err)
	l.Limiter, err = adaptive.New(fixed, adaptive.WithClock(clk), adaptive.WithSampleEvery(1))
	keep(err)
	plim, err := adaptive.New(fixed, adaptive.WithClock(clk))
	keep(err)
	l.Parts, err = adaptive.NewPartitions(plim, adaptive.Share{Name: "live", Fraction: 0.5}, adaptive.Share{Name: "batch", Fraction: 0.5})
	keep(err)
	qlim, err := adaptive.New(fixed, adaptive.WithClock(clk))
	keep(err)
	l.Queue, err = adaptive.NewQueue(qlim, adaptive.WithQueueSize(2), adaptive.WithMaxWait(time.Millisecond))
	keep(err)
	var roll atomic.Uint64
	l.Breaker, err = breaker.New(breaker.WithClock(clk), breaker.WithRand(func() float64 { return float64(roll.Add(1)%100) / 100 }))
	keep(err)
	// it refuses when the calls held at once outgrow what its window shows
	l.Shedder, err = shed.New(shed.WithClock(clk), shed.WithCPU(func() int { return 1000 }), shed.WithSampleEvery(1))
	keep(err)
	l.Bucket, err = rate.NewBucketLimiter(10, 5, rate.WithClock(clk), rate.WithCounts())
	keep(err)
	l.Sliding, err = rate.NewSlidingLimiter(5, 100*time.Millisecond, rate.WithClock(clk))
	keep(err)
	l.Period, err = rate.NewPeriodLimiter(5, 100*time.Millisecond, false, rate.WithClock(clk), rate.WithCounts())
	keep(err)
	l.Logins, err = failurewindow.New(3, time.Second, failurewindow.WithClock(clk),
		failurewindow.WithOwnError(func(err error) bool { return errors.Is(err, ErrOwn) }))
	keep(err)
	makes, err := rate.NewBucket(1, 2, 0) // the pool's ward: a make a second of its clock, 2 at once
	keep(err)
	part, err := pool.FromBucket(makes)
	keep(err)
	var ids atomic.Int64 // every resource opened is a new one
	l.Pool, err = pool.New(func(context.Context) (int, error) { return int(ids.Add(1)), nil }, func(int) {}, pool.Limits{Size: 4, Idle: 4},
		pool.WithClock(clk), pool.WithWard(pool.Ward{Bucket: part}))
	keep(err)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return l, nil
}

// Close closes the pool.
func (l *Load) Close() { l.Pool.Close() }

// Run calls every guard each times from each of workers goroutines at once, then extra(w, i)
// when it is not nil, and returns when all are done. Every seventh call of a guard that holds
// its admissions is made while holding three more: past the limit of 3.
func (l *Load) Run(workers, each int, extra func(w, i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range workers {
		wg.Go(func() {
			<-start
			ctx := context.Background()
			part := []string{"live", "batch"}[w%2]
			for i := range each {
				nested := 0
				if i%7 == 0 {
					nested = 3
				}
				l.L.Call(ctx, l.Limiter, i+w, nested)
				l.PartsT[part].Call(ctx, l.Parts.Partition(part), i, nested)
				l.B.Call(ctx, l.Breaker, []int{0, 1, 1, 2, 1, 1}[i%6], 0) // mostly failures: the breaker opens
				l.Q.Call(ctx, l.Queue, i, nested)
				l.S.Call(ctx, l.Shedder, i, nested)
				l.BucketT.Gate(ctx, l.Bucket)
				l.SlidingT.Gate(ctx, l.Sliding)
				l.PeriodT.Gate(ctx, l.Period)
				l.LoginsT.Login(ctx, l.Logins, fmt.Sprint("10.0.0.", w), i)
				l.PoolT.Borrow(ctx, l.Pool, i)
				if extra != nil {
					extra(w, i)
				}
			}
		})
	}
	close(start)
	wg.Wait()
}

// All are the tallies of every guard, for checks that each admitted and refused.
func (l *Load) All() []*Tallies {
	return []*Tallies{&l.L, l.PartsT["live"], l.PartsT["batch"], &l.B, &l.Q, &l.S, &l.BucketT, &l.SlidingT, &l.PeriodT, &l.LoginsT, &l.PoolT}
}
