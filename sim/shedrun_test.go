package sim

import (
	"testing"
	"time"

	"github.com/wardgo/ward/shed"
)

// TestShedRunaway: a worker-pool server (20 workers, 50 ms a call) offered 4× its throughput for
// 90 s through a shedder whose CPU check is bypassed. Without a memory of its fastest response
// time (Policy.Memory 0, go-zero's arithmetic) the capacity it shows follows the queue upward:
// it ends many times the pool and most calls take over a second. With the preset's memory it stays
// near the pool, p99 near two service times, and goodput holds.
func TestShedRunaway(t *testing.T) {
	const workers = 20
	for seed := uint64(1); seed <= 3; seed++ {
		p := shed.DefaultPolicy()
		p.Memory = 0
		old := ShedRunaway(p, seed)
		fixed := ShedRunaway(shed.DefaultPolicy(), seed)
		t.Logf("seed %d: Memory 0: capacity every 10 s %.0f, p99 %v, %.0f%% over 1 s, goodput %.2f", seed, old.Capacity, old.P99, 100*old.Slow, old.Goodput)
		t.Logf("seed %d: preset:   capacity every 10 s %.0f, p99 %v, %.0f%% over 1 s, goodput %.2f", seed, fixed.Capacity, fixed.P99, 100*fixed.Slow, fixed.Goodput)
		if last := old.Capacity[len(old.Capacity)-1]; last < 10*workers || old.Slow < 0.2 {
			t.Errorf("seed %d: Memory 0 ended at capacity %.0f with %.0f%% over 1 s: the runaway no longer reproduces", seed, last, 100*old.Slow)
		}
		for i, c := range fixed.Capacity {
			if c > 1.5*workers {
				t.Errorf("seed %d: capacity %.1f at %d s, want <= %d (1.5 × the pool)", seed, c, 10*i, 3*workers/2)
			}
		}
		if fixed.P99 > 150*time.Millisecond || fixed.Slow > 0 || fixed.Goodput < 0.95 {
			t.Errorf("seed %d: p99 %v, %.1f%% over 1 s, goodput %.2f; want p99 <= 150ms, none over 1 s, goodput >= 0.95", seed, fixed.P99, 100*fixed.Slow, fixed.Goodput)
		}
	}
}
