package shed

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

const ms = int64(time.Millisecond)

// loaded returns a core (preset: 100 ms buckets) whose first bucket holds 100 passes of 50 ms
// each, so from 100 ms on it shows a capacity of 100 × 50 ms / 100 ms = 50 calls in flight; then
// admits `flying` more calls at a cool CPU and fails `settle` of them, which raises the average.
func loaded(t *testing.T, flying, settle int) (*Core, []Ticket) {
	t.Helper()
	c, err := NewCore(DefaultPolicy(), 0)
	if err != nil {
		t.Fatal(err)
	}
	var ts []Ticket
	for i := 0; i < 100; i++ {
		tk, ok := c.Allow(0, 0)
		if !ok {
			t.Fatal("refused at a cool CPU")
		}
		ts = append(ts, tk)
	}
	for i := range ts {
		ts[i].Pass(50 * ms)
	}
	ts = ts[:0]
	for i := 0; i < flying; i++ {
		tk, _ := c.Allow(100*ms, 0)
		ts = append(ts, tk)
	}
	for i := 0; i < settle; i++ {
		ts[i].Fail()
	}
	if got := c.Capacity(150 * ms); got != 50 {
		t.Fatalf("capacity %v, want 50", got)
	}
	return c, ts[settle:]
}

func TestSpikeWithNothingInFlight(t *testing.T) {
	c, _ := loaded(t, 0, 0)
	for i := int64(0); i < 1000; i++ {
		tk, ok := c.Allow(150*ms+i*ms, 1000)
		if !ok {
			t.Fatalf("call %d refused at 100%% CPU with nothing in flight", i)
		}
		tk.Pass(150*ms + i*ms)
	}
}

func TestDeepQueueAtLowCPU(t *testing.T) {
	c, _ := loaded(t, 1000, 100)
	if c.InFlight() != 900 || c.Average() < 50 {
		t.Fatalf("setup: flying %d average %v", c.InFlight(), c.Average())
	}
	for _, cpu := range []int{0, 500, 899} {
		if _, ok := c.Allow(150*ms, cpu); !ok {
			t.Fatalf("refused at CPU %d with a deep queue: a cool server refuses nothing", cpu)
		}
	}
}

func TestHotAndFullRefuses(t *testing.T) {
	c, _ := loaded(t, 200, 20) // 180 in flight, average ~158, capacity 50
	if _, ok := c.Allow(150*ms, 900); ok {
		t.Fatal("admitted while hot and full")
	}
	// 950 thousandths halves the capacity: 25. In flight at 30 with the average over it is full.
	c2, _ := loaded(t, 60, 30) // 30 in flight, average ~28
	if _, ok := c2.Allow(150*ms, 900); !ok {
		t.Fatalf("refused at 30 in flight against a capacity of 50 (average %v)", c2.Average())
	}
	if _, ok := c2.Allow(150*ms, 950); ok {
		t.Fatalf("admitted at 31 in flight against a capacity of 25 at 950 (average %v)", c2.Average())
	}
	if c2.Refused() != 1 {
		t.Fatalf("Refused = %d, want 1", c2.Refused())
	}
}

func TestCooling(t *testing.T) {
	c, _ := loaded(t, 200, 20)
	if _, ok := c.Allow(150*ms, 900); ok { // hot at 150 ms, and refuses
		t.Fatal("admitted while hot and full")
	}
	if _, ok := c.Allow(1149*ms, 500); ok {
		t.Fatal("admitted 999 ms after the CPU was last hot, having refused: still cooling")
	}
	if _, ok := c.Allow(1150*ms, 500); !ok {
		t.Fatal("refused exactly 1 s after the CPU was last hot: cool")
	}
	if _, ok := c.Allow(1151*ms, 500); !ok {
		t.Fatal("refused after cooling")
	}
	// A core that was hot but never refused does not stay hot.
	e, _ := loaded(t, 0, 0)
	if _, ok := e.Allow(150*ms, 950); !ok { // hot, not full: admitted, no refusal
		t.Fatal("refused with one in flight")
	}
	for i := 0; i < 300; i++ { // fill it at a cool CPU
		e.Allow(160*ms, 100)
	}
	if _, ok := e.Allow(170*ms, 100); !ok {
		t.Fatal("cool CPU 20 ms after a hot reading refused, though the shedder never refused since")
	}
}

// TestMinShare: at 100% CPU the factor is 0, held at MinShare: the server keeps admitting a tenth of
// its capacity of 50, and refuses only past it.
func TestMinShare(t *testing.T) {
	c, _ := loaded(t, 0, 0)
	now := 150 * ms // every second admitted call stays in flight
	for step := 0; step < 100; step++ {
		a, ok1 := c.Allow(now, 1000)
		b, ok2 := c.Allow(now, 1000)
		if !ok1 || !ok2 {
			if c.InFlight() <= 5 {
				t.Fatalf("refused with %d in flight, under MinShare of 5", c.InFlight())
			}
			t.Logf("first refusal at %d in flight, average %.2f", c.InFlight(), c.Average())
			return
		}
		a.Fail()
		_ = b
	}
	t.Fatalf("never refused at 100%% CPU with %d in flight", c.InFlight())
}

func TestTicketSettlesOnce(t *testing.T) {
	c, _ := NewCore(DefaultPolicy(), 0)
	tk, _ := c.Allow(0, 0)
	tk.Pass(10 * ms)
	tk.Pass(20 * ms)
	tk.Fail()
	tk.Ignore()
	var zero Ticket
	zero.Pass(0)
	zero.Fail()
	zero.Ignore()
	if c.InFlight() != 0 {
		t.Fatalf("InFlight = %d after one ticket settled three times", c.InFlight())
	}
	back, _ := c.Allow(100*ms, 0)
	back.Pass(0) // a clock before the start: response time 0, never negative
	if c.InFlight() != 0 {
		t.Fatal("a backwards settle corrupted flight")
	}
}

// TestTicketVerbs: Pass leaves flight, moves the average and counts a response time; Fail leaves
// flight and moves the average; Ignore only leaves flight.
func TestTicketVerbs(t *testing.T) {
	c, _ := NewCore(DefaultPolicy(), 0)
	var tk [4]Ticket
	for i := range tk {
		tk[i], _ = c.Allow(0, 0)
	}
	tk[0].Ignore()
	if c.InFlight() != 3 || c.Average() != 0 || c.Capacity(200*ms) != 10 {
		t.Fatalf("after Ignore: in flight %d, average %v, capacity %v; want 3, 0, the idle 10", c.InFlight(), c.Average(), c.Capacity(200*ms))
	}
	tk[1].Fail()
	if c.InFlight() != 2 || c.Average() == 0 || c.Capacity(200*ms) != 10 {
		t.Fatalf("after Fail: in flight %d, average %v, capacity %v; want 2, moved, 10", c.InFlight(), c.Average(), c.Capacity(200*ms))
	}
	avg := c.Average()
	tk[2].Pass(50 * ms)
	if c.InFlight() != 1 || c.Average() == avg || c.Capacity(200*ms) != 1 {
		t.Fatalf("after Pass: in flight %d, average %v, capacity %v; want 1, moved, 1 (1 pass of 50 ms per 100 ms)", c.InFlight(), c.Average(), c.Capacity(200*ms))
	}
}

func TestPolicyErrors(t *testing.T) {
	for _, c := range []struct {
		field string
		edit  func(*Policy)
	}{
		{"Policy.Buckets", func(p *Policy) { p.Buckets = 0 }},
		{"Policy.Window", func(p *Policy) { p.Window = 10 }},
		{"Policy.CPU", func(p *Policy) { p.CPU = 1000 }},
		{"Policy.CPU", func(p *Policy) { p.CPU = 0 }},
		{"Policy.Latency", func(p *Policy) { p.Latency = 0 }},
		{"Policy.Beta", func(p *Policy) { p.Beta = 1 }},
		{"Policy.Cool", func(p *Policy) { p.Cool = -1 }},
		{"Policy.MinShare", func(p *Policy) { p.MinShare = 0 }},
	} {
		p := DefaultPolicy()
		c.edit(&p)
		_, err := NewCore(p, 0)
		_, err2 := New(WithPolicy(p), WithCPU(func() int { return 0 }))
		for _, e := range []error{err, err2} {
			if !errors.Is(e, ErrInvalid) || !strings.Contains(e.Error(), c.field) {
				t.Errorf("want an error naming %s, got %v", c.field, e)
			}
		}
	}
	for name, o := range map[string]Option{"WithClock": WithClock(nil), "WithCPU": WithCPU(nil), "WithSampleEvery": WithSampleEvery(6), "WithRefresh": WithRefresh(-1)} {
		if _, err := New(o); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestMemory: the capacity is taken over the remembered shape (Policy.Memory), so a server that
// really got four times slower while hot is held at the capacity it showed (and refused what that
// cannot carry) until the memory forgets, within two Memory spans; Memory 0 credits the new speed
// within a window (go-zero's arithmetic).
func TestMemory(t *testing.T) {
	for _, memory := range []time.Duration{time.Minute, 0} {
		p := DefaultPolicy()
		p.Memory = memory
		c, err := NewCore(p, 0)
		if err != nil {
			t.Fatal(err)
		}
		type due struct {
			at int64
			t  Ticket
		}
		var flying []due
		ms := int64(time.Millisecond)
		capAt := map[int64]float64{}
		for now := int64(0); now <= 200e9; now += ms { // one call a millisecond, hot, never full
			for len(flying) > 0 && flying[0].at <= now {
				flying[0].t.Pass(flying[0].at)
				flying = flying[1:]
			}
			rt := 10 * ms
			if now >= 30e9 {
				rt = 40 * ms // the server got slower for good at 30 s
			}
			if tk, ok := c.Allow(now, p.CPU); ok {
				flying = append(flying, due{now + rt, tk})
			}
			if now%(10e9) == 0 {
				capAt[now/1e9] = c.Capacity(now)
			}
		}
		t.Logf("Memory %v: capacity at 20 s %.1f, 40 s %.1f, 200 s %.1f", memory, capAt[20], capAt[40], capAt[200])
		if capAt[20] < 9 || capAt[20] > 12 {
			t.Errorf("Memory %v: capacity %.1f at 20 s, want about 10", memory, capAt[20])
		}
		if memory > 0 && capAt[40] > 12 {
			t.Errorf("Memory %v: capacity %.1f at 40 s, want held at about 10 by the floor", memory, capAt[40])
		}
		if memory == 0 && capAt[40] < 36 {
			t.Errorf("Memory 0: capacity %.1f at 40 s, want about 40 at once", capAt[40])
		}
		if capAt[200] < 36 || capAt[200] > 44 {
			t.Errorf("Memory %v: capacity %.1f at 200 s, want about 40 (within 2 × Memory of the change)", memory, capAt[200])
		}
	}
}

// TestFactorMatchesBuiltins: factor's compares give, bit for bit, min(max(f, MinShare), 1) for
// every reading from far below 0 to far above 1000, at the threshold's and MinShare's extremes.
func TestFactorMatchesBuiltins(t *testing.T) {
	cpus := []int{math.MinInt, math.MinInt / 2, math.MaxInt, math.MaxInt / 2} // far from 0 on 32- and 64-bit ints alike
	for c := -3000; c <= 3000; c++ {
		cpus = append(cpus, c)
	}
	for _, threshold := range []int{1, 500, 900, 999} {
		for _, share := range []float64{math.SmallestNonzeroFloat64, 0.1, 0.5, 1} {
			p := DefaultPolicy()
			p.CPU, p.MinShare = threshold, share
			for _, c := range cpus {
				f := (1000 - float64(c)) / float64(1000-p.CPU)
				if got, want := p.factor(c), min(max(f, p.MinShare), 1); math.Float64bits(got) != math.Float64bits(want) {
					t.Fatalf("CPU %d, MinShare %v: factor(%d) = %v, want %v", threshold, share, c, got, want)
				}
			}
		}
	}
}
