package shed_test

import (
	"fmt"
	"time"

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
