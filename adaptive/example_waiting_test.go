package adaptive_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/wardgo/ward"
	"github.com/wardgo/ward/adaptive"
)

// Knee from a cold start, through the pure core over explicit instants: a backend that carries 80
// calls at 50 ms and queues the rest (100 calls take 100×50/80 ms each), and callers that send as
// many calls as the limit allows, all at once, again as soon as they have their answers. Slow start
// doubles the limit each window (1 s) until a window shows queueing; the limit is then cut to what
// the backend carried at its unloaded speed, probes upwards while the latency stays within the
// rule's Tolerance (1.2× the baseline), and holds.
func ExampleNewKnee() {
	rule, _ := adaptive.NewKnee(adaptive.DefaultKnee())
	core, _ := adaptive.NewCore(rule, adaptive.DefaultWindow(), 0)
	const capacity, unloaded = 80, 50 * time.Millisecond
	tickets := make([]adaptive.Ticket, 0, 1000)
	now := int64(0)
	for core.Snapshot().Windows < 10 {
		tickets = tickets[:0]
		for {
			t, ok := core.Acquire(now)
			if !ok {
				break
			}
			tickets = append(tickets, t)
		}
		rtt := unloaded * time.Duration(max(len(tickets), capacity)) / capacity
		now += int64(rtt)
		windows := core.Snapshot().Windows
		for i := range tickets {
			tickets[i].Pass(now)
		}
		if s := core.Snapshot(); s.Windows != windows {
			fmt.Printf("at %v: %d in flight answered in %v; limit %d\n", time.Duration(now), len(tickets), rtt, s.Limit)
		}
	}
	// Output:
	// at 1s: 20 in flight answered in 50ms; limit 40
	// at 2s: 40 in flight answered in 50ms; limit 80
	// at 3s: 80 in flight answered in 50ms; limit 160
	// at 4s: 160 in flight answered in 100ms; limit 82
	// at 5.025s: 82 in flight answered in 51.25ms; limit 82
	// at 6.05s: 82 in flight answered in 51.25ms; limit 83
	// at 7.0875s: 83 in flight answered in 51.875ms; limit 85
	// at 8.096875s: 85 in flight answered in 53.125ms; limit 89
	// at 9.098125s: 89 in flight answered in 55.625ms; limit 89
	// at 10.099375s: 89 in flight answered in 55.625ms; limit 89
}

// A Queue lets a caller wait for a slot, however the slot is freed: here a Lease taken from the
// Limiter directly. The call that waited two seconds in line and then ran 10 ms is a 10 ms sample:
// waiting is not response time. The clock is injected (every settle closes a window here, so the
// latency each call gave the rule shows at once).
func ExampleQueue() {
	var now atomic.Int64
	rule, _ := adaptive.NewFixed(1)
	limiter, _ := adaptive.New(rule, adaptive.WithClock(now.Load), adaptive.WithSampleEvery(1),
		adaptive.WithWindow(adaptive.Window{Duration: 1, MinSamples: 1}))
	queue, _ := adaptive.NewQueue(limiter, adaptive.WithQueueSize(1), adaptive.WithMaxWait(time.Hour))

	held, _ := limiter.Acquire() // the only slot, taken from the Limiter itself
	done, release := make(chan error), make(chan struct{})
	go func() {
		done <- queue.Do(context.Background(), func(context.Context) error {
			<-release                             // runs once the held call's sample is read
			now.Add(int64(10 * time.Millisecond)) // the call runs 10 ms
			return nil
		})
	}()
	for queue.Waiting() == 0 {
		runtime.Gosched() // until the caller has lined up
	}
	_, err := queue.Acquire(context.Background())
	fmt.Println("second caller:", err, errors.Is(err, ward.ErrRefused))

	now.Add(int64(2 * time.Second))
	held.Pass() // frees the slot: the waiting caller is handed it now
	fmt.Println("held call:", limiter.Snapshot().Latency)
	close(release)
	fmt.Println("waiting caller:", <-done, limiter.Snapshot().Latency)
	// Output:
	// second caller: adaptive: queue full true
	// held call: 2s
	// waiting caller: <nil> 10ms
}

// Partitions share one limit of 10: live is guaranteed 7, batch 3. Batch borrows what live leaves
// idle; once live is refused within its guarantee, borrowers are refused and the slots batch frees
// go to live, and the two together never exceed 10.
func ExamplePartitions() {
	rule, _ := adaptive.NewFixed(10)
	limiter, _ := adaptive.New(rule)
	parts, _ := adaptive.NewPartitions(limiter, adaptive.Share{Name: "live", Fraction: 0.7}, adaptive.Share{Name: "batch", Fraction: 0.3})
	live, batch := parts.Partition("live"), parts.Partition("batch")
	fmt.Println("guarantees:", live.Guarantee(), batch.Guarantee())

	var held []adaptive.PartitionLease
	take := func(p *adaptive.Partition) bool {
		pl, ok := p.Acquire()
		if ok {
			held = append(held, pl)
		}
		return ok
	}
	for i := 0; i < 8; i++ {
		take(batch) // 3 of its own and 5 borrowed from idle live
	}
	take(live)
	take(live)
	fmt.Println("in flight: live", live.InFlight(), "batch", batch.InFlight(), "all", limiter.InFlight())
	fmt.Println("live admitted at the limit:", take(live))
	held[0].Pass() // a batch call settles
	fmt.Println("batch, borrowing while live is hungry:", take(batch))
	fmt.Println("live takes it:", take(live))
	fmt.Println("in flight: live", live.InFlight(), "batch", batch.InFlight(), "all", limiter.InFlight())
	// Output:
	// guarantees: 7 3
	// in flight: live 2 batch 8 all 10
	// live admitted at the limit: false
	// batch, borrowing while live is hungry: false
	// live takes it: true
	// in flight: live 3 batch 7 all 10
}
