package shed_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/wardgo/ward"
	"github.com/wardgo/ward/shed"
)

// The pure core over explicit instants: hot alone, full alone and both.
func ExampleCore_Allow() {
	ms := int64(time.Millisecond)
	core, _ := shed.NewCore(shed.DefaultPolicy(), 0)
	// The first 100 ms bucket: 20 calls of 50 ms each. Capacity: 20 × 50 / 100 = 10 in flight.
	for i := 0; i < 20; i++ {
		t, _ := core.Allow(0, 300)
		t.Pass(50 * ms)
	}
	fmt.Println("capacity:", core.Capacity(100*ms))
	_, ok := core.Allow(100*ms, 990)
	fmt.Println("CPU at 99%, nothing queued, admitted:", ok)
	var queue []shed.Ticket
	for i := 0; i < 40; i++ {
		t, _ := core.Allow(100*ms, 300)
		queue = append(queue, t)
	}
	queue[0].Fail() // a settle moves the average of calls in flight
	fmt.Println("40 queued at 30% CPU: nothing refused, in flight", core.InFlight())
	queue[1].Fail()
	_, ok = core.Allow(110*ms, 950)
	fmt.Println("40 queued at 95% CPU, admitted:", ok)
	// Output:
	// capacity: 10
	// CPU at 99%, nothing queued, admitted: true
	// 40 queued at 30% CPU: nothing refused, in flight 40
	// 40 queued at 95% CPU, admitted: false
}

// A shedder on a hot server with an injected clock and CPU reading: once the calls in flight
// exceed what the window shows the server can carry, Do refuses without calling fn.
func ExampleShedder_Do() {
	ms := int64(time.Millisecond)
	now, cpu := int64(0), 300
	s, _ := shed.New(
		shed.WithClock(func() int64 { return now }),
		shed.WithCPU(func() int { return cpu }),
		shed.WithRefresh(0), shed.WithSampleEvery(1),
	)
	ctx := context.Background()
	for i := 0; i < 20; i++ { // the first 100 ms: 20 calls of 50 ms, so a capacity of 10
		_ = s.Do(ctx, func(context.Context) error { now += 50 * ms; return nil })
		now -= 50 * ms
	}
	now, cpu = 100*ms, 950
	var held []shed.Promise // calls pile up in flight
	for i := 0; i < 60; i++ {
		p, err := s.Allow()
		if err != nil {
			break
		}
		held = append(held, p)
		if i%2 == 1 {
			held[0].Fail() // a settle moves the average of calls in flight
			held = held[1:]
		}
	}
	fmt.Println("in flight:", s.Snapshot().InFlight)
	err := s.Do(ctx, func(context.Context) error { fmt.Println("served"); return nil })
	fmt.Println(errors.Is(err, shed.ErrOverloaded), errors.Is(err, ward.ErrRefused))
	// Output:
	// in flight: 12
	// true true
}

// A step to a saturated CPU after low readings, through the preset sampler arithmetic and
// through go-zero's: the preset reads hot at the first saturated interval.
func ExampleCPUAverage() {
	ward, _ := shed.NewCPUAverage(shed.DefaultCPUPolicy())
	zero, _ := shed.NewCPUAverage(shed.GoZeroCPUPolicy())
	for _, use := range []float64{400, 400, 1000, 1000, 1000, 300} {
		fmt.Println(ward.Add(use), zero.Add(use))
	}
	// Output:
	// 400 400
	// 400 400
	// 1000 430
	// 1000 459
	// 1000 486
	// 965 476
}
