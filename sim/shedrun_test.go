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

// TestShedStep: a CPU-bound server of one CPU (2 ms a call: 500 calls a second) offered 4× its
// capacity in a step after a quiet start, whatever its sampler's first readings were (from an idle
// CPU to just under the threshold, the step at or between readings). With the preset sampler the
// shedder refuses within 1 s of the step, goodput holds at least 90% of capacity, and the p99 of
// the calls admitted from 3 s after the step on stays under 1 s. go-zero's sampler, from the same low first reading, turns hot 8 s or
// more late, and by then the calls queued behind the CPU have taken goodput down.
func TestShedStep(t *testing.T) {
	work := 2 * time.Millisecond
	hold := 30 * time.Second
	for _, c := range []struct {
		before float64
		pre    time.Duration
	}{
		{0.444, 500 * time.Millisecond}, // a first reading of about 444, the step at a reading
		{0.1, 600 * time.Millisecond},   // almost idle, the step between readings
		{0.85, 1100 * time.Millisecond}, // just under the threshold
		{0.01, 300 * time.Millisecond},  // idle: a first reading near 0
	} {
		for seed := uint64(1); seed <= 2; seed++ {
			ward := ShedStep(shed.DefaultPolicy(), shed.DefaultCPUPolicy(), work, c.before, 4, c.pre, hold, seed)
			zero := ShedStep(shed.DefaultPolicy(), shed.GoZeroCPUPolicy(), work, c.before, 4, c.pre, hold, seed)
			t.Logf("before %.2f, seed %d: preset: first CPU %d, hot %v after the step (CPU %d), goodput %.2f, p50 %v p99 %v (from 3 s on %v), peak %d in flight",
				c.before, seed, ward.FirstCPU, ward.ToHot, ward.CPUAtHot, ward.Goodput, ward.P50, ward.P99, ward.Settled, ward.Peak)
			t.Logf("before %.2f, seed %d: go-zero: first CPU %d, hot %v after the step (CPU %d), goodput %.2f, p50 %v p99 %v (from 3 s on %v), peak %d in flight",
				c.before, seed, zero.FirstCPU, zero.ToHot, zero.CPUAtHot, zero.Goodput, zero.P50, zero.P99, zero.Settled, zero.Peak)
			if ward.ToHot < 0 || ward.ToHot > time.Second {
				t.Errorf("before %.2f, seed %d: the preset turned hot %v after the step, want within 1s", c.before, seed, ward.ToHot)
			}
			if ward.Goodput < 0.9 || ward.Goodput < zero.Goodput || ward.Settled > time.Second {
				t.Errorf("before %.2f, seed %d: preset goodput %.2f (go-zero's sampler %.2f), p99 from 3 s on %v; want >= 0.9, >= go-zero's, <= 1s",
					c.before, seed, ward.Goodput, zero.Goodput, ward.Settled)
			}
			if c.before < 0.5 && (zero.ToHot >= 0 && zero.ToHot < 8*time.Second) {
				t.Errorf("before %.2f, seed %d: go-zero's sampler turned hot %v after the step: the lag this scenario shows no longer reproduces", c.before, seed, zero.ToHot)
			}
		}
	}
}
