package pool_test

import (
	"fmt"
	"time"

	"github.com/wardgo/ward/pool"
	"github.com/wardgo/ward/retry"
)

type conn struct{ id int }

// The six answers, driven by explicit instants.
func ExampleCore_Take() {
	l := pool.DefaultLimits()
	l.Size, l.Idle, l.Keep = 2, 2, time.Minute
	c, _ := pool.NewCore[*conn](l, pool.Ward{}, 0)

	t := c.Take(0, 0.42)
	fmt.Println(t.Kind) // room: open one
	a := &conn{1}
	c.Made(a, 0)
	fmt.Println(c.Give(a, 0)) // lend, then take it back

	t = c.Take(int64(30*time.Second), 0.42)
	fmt.Println(t.Kind, t.Item.id)
	c.Give(t.Item, int64(30*time.Second))

	t = c.Take(int64(2*time.Minute), 0.42) // idle past Keep: close it, ask again
	fmt.Println(t.Kind, t.Item.id, c.Live())
	// Output:
	// Make
	// true
	// Ready 1
	// Stale 1 0
}

// Birth survives loans: Life retires a resource that has been reused all along.
func ExampleCore_Give() {
	l := pool.DefaultLimits()
	l.Life = time.Hour
	c, _ := pool.NewCore[*conn](l, pool.Ward{}, 0)
	c.Take(0, 0)
	a := &conn{1}
	c.Made(a, 0)
	for m := 10; m <= 60; m += 10 {
		now := int64(time.Duration(m) * time.Minute)
		c.Give(a, now)
		c.Take(now, 0)
	}
	fmt.Println(c.Give(a, int64(61*time.Minute)), c.Live())
	// Output: false 0
}

// A backoff in the ward holds making back after a failed make.
func ExampleCore_Unmade() {
	backoff, _ := pool.FromBackoff(retry.DefaultBackoff())
	c, _ := pool.NewCore[*conn](pool.DefaultLimits(), pool.Ward{Backoff: backoff}, 0)
	c.Take(0, 0)
	c.Unmade(0, 0.5) // roll 0.5: the middle of the jitter
	t := c.Take(0, 0)
	fmt.Println(t.Kind, t.Wait)
	fmt.Println(c.Take(int64(100*time.Millisecond), 0).Kind)
	// Output:
	// Later 100ms
	// Make
}

func ExamplePick() {
	refusal := []float64{0.0, 0.3, 0.0}
	busy := []int{7, 1, 2}
	fmt.Println(pool.Pick(refusal, busy, 0.1, 0.6)) // pools 0 and 2: neither refuses, 2 is less busy
	fmt.Println(pool.Pick(refusal, busy, 0.5, 0.9)) // pools 1 and 2: 1 refuses more
	// Output:
	// 2
	// 2
}
