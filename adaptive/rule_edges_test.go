package adaptive

import (
	"math"
	"testing"
	"time"
)

// TestHugeBounds: Initial = Max = MaxInt is the limit itself, not a wrapped negative, and the
// rules stay within [Min, MaxInt] as they grow into the top and back off from it.
func TestHugeBounds(t *testing.T) {
	const top = math.MaxInt
	a, err := NewAIMD(AIMD{Initial: top, Min: 1, Max: top, Backoff: 1, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	v, err := NewVegas(Vegas{Initial: top, Max: top, Smoothing: 0.5, Alpha: 3, Beta: 6, Threshold: 1, Step: 1, ProbeMultiplier: 30}, constRoll(0.5))
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewGradient(Gradient{Initial: top, Min: 1, Max: top, Smoothing: 0.2, Queue: 4, Window: 600, Tolerance: 1.5})
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewMinRTT(MinRTT{Initial: top, Min: 1, Max: top, Smoothing: 0.2, Queue: 4, Tolerance: 2, ProbeEvery: 1000, Backoff: 1}, constRoll(0.5))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []Rule{a, v, g, m} {
		if got := r.Limit(); got != top {
			t.Errorf("%T: Limit() at Initial = Max = MaxInt is %d", r, got)
		}
	}
	// Grow at the top (the limit cannot pass Max), then keep everything on a drop (Backoff 1).
	runRule(t, "AIMD top", a, []step{
		{Sample{RTT: ms, InFlight: top}, top},
		{Sample{RTT: ms, InFlight: top / 2}, top}, // MaxInt/2 × 2 is one under the limit: holds
		{Sample{RTT: ms, InFlight: top, Dropped: true}, top},
	})
	for _, r := range []Rule{v, g, m} {
		for i, s := range []Sample{{RTT: ms, InFlight: top}, {RTT: ms, InFlight: top}, {RTT: time.Hour, InFlight: top}, {RTT: 1, InFlight: top, Dropped: true}} {
			r.Sample(s)
			if got := r.Limit(); got < 1 || (i < 2 && got != top) {
				t.Errorf("%T: after sample %d Limit() = %d", r, i, got)
			}
		}
	}
}

// TestMinRTTHugeProbe: Probe = MaxInt means a probe is (practically) never due, so the rule moves
// as one that never probes; the countdown must not wrap to a probe on every sample, which would
// hold the limit at the queue size.
func TestMinRTTHugeProbe(t *testing.T) {
	p := MinRTT{Initial: 50, Min: 1, Max: 1000, Smoothing: 0.2, Queue: 4, Tolerance: 2, ProbeEvery: 0, Backoff: 0.9}
	for _, roll := range []float64{0, 0.5, 0.999} {
		never, _ := NewMinRTT(p, constRoll(0))
		huge := p
		huge.ProbeEvery = math.MaxInt
		r, _ := NewMinRTT(huge, constRoll(roll))
		for i := 0; i < 20; i++ {
			s := Sample{RTT: 10 * ms, InFlight: r.Limit()}
			r.Sample(s)
			never.Sample(s)
			if r.Limit() != never.Limit() || r.NoLoad() != 10*ms {
				t.Fatalf("roll %v, sample %d: Limit() = %d, NoLoad = %v; want %d, 10ms (as if it never probed)",
					roll, i, r.Limit(), r.NoLoad(), never.Limit())
			}
		}
	}
}

// TestVegasHugeThresholds: thresholds and steps of MaxInt are scaled by log10(limit) without
// wrapping: a step of MaxInt takes the limit to its floor on a drop, a Beta of MaxInt jumps it to
// Max when nothing queues, a Threshold of MaxInt jumps whatever the queue.
func TestVegasHugeThresholds(t *testing.T) {
	base := Vegas{Initial: 100, Max: 1000, Smoothing: 1, Alpha: 3, Beta: 6, Threshold: 1, Step: 1, ProbeMultiplier: 30}
	for _, c := range []struct {
		name string
		edit func(*Vegas)
		s    Sample
		want int
	}{
		{"Step", func(p *Vegas) { p.Step = math.MaxInt }, Sample{RTT: 10 * ms, InFlight: 100, Dropped: true}, 1},
		{"Beta", func(p *Vegas) { p.Beta = math.MaxInt }, Sample{RTT: 10 * ms, InFlight: 100}, 1000},
		{"Threshold", func(p *Vegas) { p.Threshold = math.MaxInt }, Sample{RTT: time.Hour, InFlight: 100}, 112},
		{"Alpha", func(p *Vegas) { p.Alpha, p.Beta = math.MaxInt, math.MaxInt }, Sample{RTT: 20 * ms, InFlight: 100}, 102},
	} {
		p := base
		c.edit(&p)
		r, err := NewVegas(p, constRoll(0.5))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		r.Sample(Sample{RTT: 10 * ms, InFlight: 100}) // the no-load time
		r.Sample(c.s)
		if got := r.Limit(); got != c.want {
			t.Errorf("%s = MaxInt: Limit() = %d after %+v, want %d", c.name, got, c.s, c.want)
		}
	}
}

// TestVegasSmoothingUnrounded: with smoothing 0.5 the estimate keeps its fraction between samples,
// as VegasLimit keeps a double: from 100, four decreases (each −log10 of the truncated estimate,
// then halfway there) leave 99, 98, 98, 97 (estimates 99, 98.5, 98, 97.5).
func TestVegasSmoothingUnrounded(t *testing.T) {
	p := DefaultVegas()
	p.Initial, p.Max, p.Smoothing = 100, 200, 0.5
	r, err := NewVegas(p, constRoll(0.5))
	if err != nil {
		t.Fatal(err)
	}
	runRule(t, "Vegas smoothing 0.5", r, []step{
		{Sample{RTT: 10 * ms, InFlight: 100}, 100},               // the no-load time
		{Sample{RTT: 20 * ms, InFlight: 100}, 99},                // queue 50 > beta 12: 100 − 2, halfway: 99
		{Sample{RTT: 20 * ms, InFlight: 100}, 98},                // 99 − 1 = 98, halfway: 98.5
		{Sample{RTT: 20 * ms, InFlight: 100}, 98},                // 98.5 − 1 = 97.5, halfway: 98
		{Sample{RTT: 20 * ms, InFlight: 100}, 97},                // 98 − 1 = 97, halfway: 97.5
		{Sample{RTT: 10 * ms, InFlight: 100, Dropped: true}, 97}, // 97.5 − 1, halfway: 97
	})
}

// TestWindowHuge: a window of the largest Duration never closes (the window's end saturates
// instead of wrapping into the past), however many calls settle.
func TestWindowHuge(t *testing.T) {
	for _, start := range []int64{0, 1, math.MaxInt64 / 2, -5} {
		clk := &manual{now: start}
		rec := &recorder{limit: 10}
		l, err := New(rec, WithClock(clk.read), WithSampleEvery(1), WithWindow(Window{Duration: math.MaxInt64, MinSamples: 1}))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 100; i++ {
			lease, _ := l.Acquire()
			clk.advance(time.Hour)
			lease.Pass()
		}
		if w := l.Snapshot().Windows; w != 0 {
			t.Errorf("clock from %d: %d windows closed, want 0", start, w)
		}
	}
}
