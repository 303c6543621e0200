package adaptive

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

const ms = time.Millisecond

// step is one row of a rule trace: a sample and the limit it must leave.
type step struct {
	s    Sample
	want int
}

func runRule(t *testing.T, name string, r Rule, steps []step) {
	t.Helper()
	for i, st := range steps {
		r.Sample(st.s)
		if got := r.Limit(); got != st.want {
			t.Fatalf("%s step %d: Sample(rtt=%v, inflight=%d, dropped=%v) left Limit() = %d, want %d",
				name, i, st.s.RTT, st.s.InFlight, st.s.Dropped, got, st.want)
		}
	}
}

func constRoll(v float64) func() float64 { return func() float64 { return v } }

func TestAIMDTrace(t *testing.T) {
	r, err := NewAIMD(DefaultAIMD())
	if err != nil {
		t.Fatal(err)
	}
	runRule(t, "AIMD preset", r, []step{
		{Sample{RTT: 10 * ms, InFlight: 10}, 21},                // 10×2 >= 20: +1
		{Sample{RTT: 10 * ms, InFlight: 10}, 21},                // 10×2 < 21: holds
		{Sample{RTT: 10 * ms, InFlight: 11}, 22},                // 22 >= 21
		{Sample{RTT: 10 * ms, InFlight: 11, Dropped: true}, 20}, // int(22×0.9)=19, held at Min 20
		{Sample{RTT: 5 * time.Second, InFlight: 20}, 21},        // exactly the timeout is no drop
	})
	r, _ = NewAIMD(AIMD{Initial: 100, Min: 1, Max: 101, Backoff: 0.9, Timeout: 5 * time.Second})
	runRule(t, "AIMD wide", r, []step{
		{Sample{InFlight: 100, Dropped: true}, 90},
		{Sample{RTT: 5*time.Second + 1, InFlight: 100}, 81}, // slower than the timeout: a drop
		{Sample{RTT: ms, InFlight: 100}, 82},
		{Sample{RTT: ms, InFlight: 1000}, 83},
	})
	r, _ = NewAIMD(AIMD{Initial: 101, Min: 1, Max: 101, Backoff: 0.5, Timeout: time.Second})
	runRule(t, "AIMD max", r, []step{{Sample{InFlight: 101}, 101}, {Sample{Dropped: true}, 50}})
}

func TestGradientTrace(t *testing.T) {
	r, _ := NewGradient(DefaultGradient())
	runRule(t, "Gradient preset", r, []step{
		{Sample{RTT: 100 * ms, InFlight: 20}, 20}, // 20×0.8 + (20×1+4)×0.2 = 20.8
		{Sample{RTT: 100 * ms, InFlight: 20}, 21}, // 20.8×0.8 + 24.8×0.2 = 21.6
		{Sample{RTT: 400 * ms, InFlight: 21}, 21}, // long 200ms, gradient 0.75: 21.6×0.8 + 20.2×0.2 = 21.32
		{Sample{RTT: 100 * ms, InFlight: 5}, 21},  // app-limited: 5 < 21.32/2
	})
	// The long average: a plain mean of the first 10, then exponential with 2/601; cut by 5% when
	// it is over twice the sample.
	r, _ = NewGradient(DefaultGradient())
	for i := 0; i < 10; i++ {
		r.Sample(Sample{RTT: time.Second})
	}
	if got := r.LongRTT(); got != 1e9 {
		t.Fatalf("long average after 10 × 1s = %v, want 1e9", got)
	}
	r.Sample(Sample{RTT: 100 * ms})
	want := (1e9*(1-2.0/601) + 1e8*2.0/601) * 0.95
	if got := r.LongRTT(); math.Abs(got-want) > 1e-3 {
		t.Fatalf("long average after a fast sample = %v, want %v", got, want)
	}
	// The gradient is held at 0.5: a sample 10× slower than the average cuts at most by half
	// before smoothing, and never under Min.
	r, _ = NewGradient(Gradient{Initial: 100, Min: 1, Max: 200, Smoothing: 1, Queue: 0, Window: 600, Tolerance: 1})
	runRule(t, "Gradient floor", r, []step{
		{Sample{RTT: 10 * ms, InFlight: 100}, 100},  // gradient 1: 100
		{Sample{RTT: 1000 * ms, InFlight: 100}, 50}, // long = 505ms, 505/1000 → 0.505: 50.5
	})
}

func TestVegasTrace(t *testing.T) {
	r, _ := NewVegas(DefaultVegas(), constRoll(0.5)) // jitter 0.75: probe after 0.75×30×limit samples
	runRule(t, "Vegas preset", r, []step{
		{Sample{RTT: 10 * ms, InFlight: 20}, 20},                  // first: the no-load time
		{Sample{RTT: 10 * ms, InFlight: 20}, 26},                  // queue 0 <= 1: +beta 6
		{Sample{RTT: 20 * ms, InFlight: 26}, 25},                  // queue ceil(13) > 6: -1
		{Sample{RTT: 12 * ms, InFlight: 25}, 25},                  // queue 5: between alpha and beta
		{Sample{RTT: 11 * ms, InFlight: 25}, 25},                  // queue 3: not under alpha 3
		{Sample{RTT: 10500 * time.Microsecond, InFlight: 25}, 26}, // queue 2: +1
		{Sample{RTT: 10 * ms, InFlight: 26, Dropped: true}, 25},   // a drop: -1
		{Sample{RTT: 10 * ms, InFlight: 12}, 25},                  // app-limited: 24 < 25
		{Sample{RTT: 5 * ms, InFlight: 25}, 25},                   // faster: a new no-load time
		{Sample{RTT: 0, InFlight: 25, Dropped: true}, 25},         // no latency: ignored
	})
	if r.NoLoad() != 5*ms {
		t.Fatalf("NoLoad = %v, want 5ms", r.NoLoad())
	}
	// The probe: with ProbeMultiplier 1 and a draw of 0 (jitter 0.5) the tenth sample at limit 20 is taken
	// as the new no-load time, whatever it is.
	r, _ = NewVegas(Vegas{Initial: 20, Max: 1000, Smoothing: 1, Alpha: 3, Beta: 6, Threshold: 1, Step: 1, ProbeMultiplier: 1}, constRoll(0))
	for i := 0; i < 9; i++ {
		r.Sample(Sample{RTT: 10 * ms})
	}
	r.Sample(Sample{RTT: 50 * ms})
	if r.NoLoad() != 50*ms {
		t.Fatalf("after the probe NoLoad = %v, want 50ms", r.NoLoad())
	}
	for n, want := range map[int]int{0: 1, 1: 1, 9: 1, 10: 1, 99: 1, 100: 2, 999: 2, 1000: 3} {
		if got := log10(n); got != want {
			t.Errorf("log10(%d) = %d, want %d", n, got, want)
		}
	}
}

func TestMinRTTTrace(t *testing.T) {
	r, _ := NewMinRTT(DefaultMinRTT(), constRoll(0)) // probe after 1000 samples
	runRule(t, "MinRTT preset", r, []step{
		{Sample{RTT: 10 * ms, InFlight: 50}, 57},                // gradient 1, queue 7: 57
		{Sample{RTT: 40 * ms, InFlight: 57}, 52},                // gradient 0.5: 35.5, smoothed 52.7
		{Sample{RTT: 10 * ms, InFlight: 52, Dropped: true}, 51}, // 52.7×0.9, smoothed 51.646
		{Sample{RTT: 10 * ms, InFlight: 5}, 51},                 // app-limited
	})
	r, _ = NewMinRTT(MinRTT{Initial: 50, Min: 1, Max: 1000, Smoothing: 0.2, Queue: 4, Tolerance: 2, ProbeEvery: 2, Backoff: 0.9}, constRoll(0))
	runRule(t, "MinRTT probe", r, []step{
		{Sample{RTT: 10 * ms, InFlight: 50}, 57},
		{Sample{RTT: 10 * ms, InFlight: 57}, 64}, // 57 + 7
		{Sample{RTT: 10 * ms, InFlight: 64}, 8},  // the third sample probes: limit to the queue, sqrt(64)
	})
	if r.NoLoad() != 0 {
		t.Fatalf("after the probe NoLoad = %v, want 0 (forgotten)", r.NoLoad())
	}
}

func TestFixed(t *testing.T) {
	r, err := NewFixed(8)
	if err != nil {
		t.Fatal(err)
	}
	r.Sample(Sample{RTT: time.Hour, Dropped: true})
	if r.Limit() != 8 {
		t.Fatalf("Fixed(8) moved to %d", r.Limit())
	}
	for _, n := range []int{0, -5, math.MinInt} {
		if _, err := NewFixed(n); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "Fixed.n") {
			t.Errorf("NewFixed(%d): err = %v, want ErrInvalid naming Fixed.n", n, err)
		}
	}
}

// mustFixed is NewFixed for the tests' literal, valid sizes.
func mustFixed(n int) *FixedRule {
	r, err := NewFixed(n)
	if err != nil {
		panic(err)
	}
	return r
}

func TestRuleConstructionErrors(t *testing.T) {
	aimd := func(f func(*AIMD)) error { p := DefaultAIMD(); f(&p); _, err := NewAIMD(p); return err }
	vegas := func(f func(*Vegas)) error {
		p := DefaultVegas()
		f(&p)
		_, err := NewVegas(p, constRoll(0.5))
		return err
	}
	grad := func(f func(*Gradient)) error { p := DefaultGradient(); f(&p); _, err := NewGradient(p); return err }
	minrtt := func(f func(*MinRTT)) error {
		p := DefaultMinRTT()
		f(&p)
		_, err := NewMinRTT(p, constRoll(0.5))
		return err
	}
	for _, c := range []struct {
		field string
		err   error
	}{
		{"AIMD.Min", aimd(func(p *AIMD) { p.Min = 0 })},
		{"AIMD.Max", aimd(func(p *AIMD) { p.Max = 10 })},
		{"AIMD.Initial", aimd(func(p *AIMD) { p.Initial = 500 })},
		{"AIMD.Backoff", aimd(func(p *AIMD) { p.Backoff = math.NaN() })},
		{"AIMD.Backoff", aimd(func(p *AIMD) { p.Backoff = 1.5 })},
		{"AIMD.Timeout", aimd(func(p *AIMD) { p.Timeout = 0 })},
		{"Vegas.Initial", vegas(func(p *Vegas) { p.Initial = 0 })},
		{"Vegas.Smoothing", vegas(func(p *Vegas) { p.Smoothing = 0 })},
		{"Vegas.Beta", vegas(func(p *Vegas) { p.Beta = 2 })},
		{"Vegas.Step", vegas(func(p *Vegas) { p.Step = 0 })},
		{"Vegas.ProbeMultiplier", vegas(func(p *Vegas) { p.ProbeMultiplier = 0 })},
		{"Gradient.Min", grad(func(p *Gradient) { p.Min = -1 })},
		{"Gradient.Tolerance", grad(func(p *Gradient) { p.Tolerance = 0.5 })},
		{"Gradient.Tolerance", grad(func(p *Gradient) { p.Tolerance = math.Inf(1) })},
		{"Gradient.Window", grad(func(p *Gradient) { p.Window = 0 })},
		{"Gradient.Queue", grad(func(p *Gradient) { p.Queue = -1 })},
		{"MinRTT.ProbeEvery", minrtt(func(p *MinRTT) { p.ProbeEvery = -1 })},
		{"MinRTT.Backoff", minrtt(func(p *MinRTT) { p.Backoff = 0 })},
		{"MinRTT.Max", minrtt(func(p *MinRTT) { p.Max = 0 })},
		{"MinRTT.Queue", minrtt(func(p *MinRTT) { p.Queue = 1001 })},                             // over Max: the limit could not stay within [queue, Max]
		{"roll = nil", func() error { _, err := NewVegas(DefaultVegas(), nil); return err }()},   // as WithRand(nil) is
		{"roll = nil", func() error { _, err := NewMinRTT(DefaultMinRTT(), nil); return err }()}, // an error
	} {
		if c.err == nil || !errors.Is(c.err, ErrInvalid) || !strings.Contains(c.err.Error(), c.field) {
			t.Errorf("want an error naming %s, got %v", c.field, c.err)
		}
	}
	for name, err := range map[string]error{
		"AIMD": aimd(func(*AIMD) {}), "Vegas": vegas(func(*Vegas) {}),
		"Gradient": grad(func(*Gradient) {}), "MinRTT": minrtt(func(*MinRTT) {}),
	} {
		if err != nil {
			t.Errorf("the %s preset is rejected: %v", name, err)
		}
	}
}

func TestBadRolls(t *testing.T) {
	for _, v := range []float64{math.NaN(), -1, 1, 7, math.Inf(1)} {
		r, _ := NewMinRTT(DefaultMinRTT(), constRoll(v))
		if r.countdown < 1000 || r.countdown >= 2000 {
			t.Errorf("roll %v: probe countdown %d outside [1000, 2000)", v, r.countdown)
		}
		g, _ := NewVegas(DefaultVegas(), constRoll(v))
		if g.jitter < 0.5 || g.jitter >= 1 {
			t.Errorf("roll %v: Vegas jitter %v outside [0.5, 1)", v, g.jitter)
		}
	}
}
