package sim

import (
	"container/heap"
	"math/rand/v2"
	"time"

	"github.com/wardgo/ward/adaptive"
	"github.com/wardgo/ward/breaker"
	"github.com/wardgo/ward/shed"
)

// Rule names a ward rule the simulator knows how to build.
type Rule struct {
	Name string
	New  func() adaptive.Rule
}

// Rules are the rules every limiter scenario runs: the presets, and a Fixed limit at the first
// phase's capacity (what an operator who measured the backend once would set).
func Rules(fixed int) []Rule {
	return []Rule{
		{"AIMD", func() adaptive.Rule { p := adaptive.DefaultAIMD(); p.Min = 1; r, _ := adaptive.NewAIMD(p); return r }},
		{"Vegas", func() adaptive.Rule { r, _ := adaptive.NewVegas(adaptive.DefaultVegas(), constRoll(0.5)); return r }},
		{"Gradient", func() adaptive.Rule { r, _ := adaptive.NewGradient(adaptive.DefaultGradient()); return r }},
		{"MinRTT", func() adaptive.Rule { r, _ := adaptive.NewMinRTT(adaptive.DefaultMinRTT(), constRoll(0.5)); return r }},
		{"Knee", func() adaptive.Rule { r, _ := adaptive.NewKnee(adaptive.DefaultKnee()); return r }},
		{"Fixed", func() adaptive.Rule {
			r, err := adaptive.NewFixed(fixed)
			if err != nil {
				panic(err) // a scenario's capacity is at least 1
			}
			return r
		}},
	}
}

func constRoll(v float64) func() float64 { return func() float64 { return v } }

// Ward wraps an adaptive.Limiter, on the simulated clock, as an Admitter. Every call is timed, so
// the run replays exactly.
func Ward(rule adaptive.Rule, clock *int64) Admitter {
	l, err := adaptive.New(rule, adaptive.WithClock(func() int64 { return *clock }), adaptive.WithSampleEvery(1))
	if err != nil {
		panic(err)
	}
	return wardLimiter{l}
}

type wardLimiter struct{ l *adaptive.Limiter }

func (w wardLimiter) Admit(int64) (func(int64, bool), bool) {
	lease, ok := w.l.Acquire()
	if !ok {
		return nil, false
	}
	return func(_ int64, dropped bool) {
		if dropped {
			lease.Fail()
		} else {
			lease.Pass()
		}
	}, true
}

func (w wardLimiter) Limit() int { return w.l.Limit() }

// Scenario is a limiter scenario: a closed loop of clients through a schedule of backend phases.
type Scenario struct {
	Name    string
	About   string
	Clients int
	Timeout time.Duration
	Phases  []Phase
}

// Scenarios are the limiter scenarios: the capacity steps down and back up; the latency spikes; a
// cold start; sustained overload of a small backend; a backend of 8 slots.
func Scenarios() []Scenario {
	base := 50 * time.Millisecond
	return []Scenario{
		{
			Name: "capacity", About: "capacity 80 → 40 → 80, 100 s each; 300 clients; calls over 200 ms time out",
			Clients: 300, Timeout: 4 * base,
			Phases: []Phase{{100 * time.Second, 80, base}, {100 * time.Second, 40, base}, {100 * time.Second, 80, base}},
		},
		{
			Name: "spike", About: "service time 50 ms → 150 ms for 30 s → 50 ms, capacity 80; 300 clients; calls over 600 ms time out",
			Clients: 300, Timeout: 12 * base,
			Phases: []Phase{{100 * time.Second, 80, base}, {30 * time.Second, 80, 3 * base}, {100 * time.Second, 80, base}},
		},
		{
			Name: "cold", About: "a cold start at capacity 80 for 30 s; 300 clients; calls over 200 ms time out",
			Clients: 300, Timeout: 4 * base,
			Phases: []Phase{{30 * time.Second, 80, base}},
		},
		{
			Name: "overload", About: "capacity 20, 80 clients (4× what it carries) for 90 s; calls over 200 ms time out",
			Clients: 80, Timeout: 4 * base,
			Phases: []Phase{{90 * time.Second, 20, base}},
		},
		{
			Name: "small", About: "a backend of 8 slots for 60 s; 40 clients; calls over 200 ms time out",
			Clients: 40, Timeout: 4 * base,
			Phases: []Phase{{60 * time.Second, 8, base}},
		},
	}
}

// OutageStats is what the breaker scenario measured.
type OutageStats struct {
	Recovery     time.Duration // from the backend's recovery until the refusal ratio read 0; -1: never
	RefusedDown  float64       // share of calls refused while the backend was down
	RefusedUp    float64       // share refused after it recovered
	FailedDown   int           // calls let through to the failing backend
	Ratios       []float64     // once a second
	HealthyRatio float64       // the largest ratio in a healthy stretch failing 20% of calls
}

// Outage offers 100 calls a second to a backend that fails every call from 30 s to 60 s, through
// ward's breaker core, with a seeded draw; then 120 s of a backend failing one call in five.
func Outage(seed uint64) OutageStats {
	r := rand.New(rand.NewPCG(seed, 0x0b7a))
	core, _ := breaker.NewCore(breaker.GoZeroPolicy(), 0)
	ms := int64(time.Millisecond)
	down, up := 30*int64(time.Second), 60*int64(time.Second)
	var s OutageStats
	s.Recovery = -1
	var downCalls, downRefused, upCalls, upRefused int
	for i := 0; i < 120*100; i++ {
		now := int64(i) * 10 * ms
		failing := now >= down && now < up
		if now%int64(time.Second) == 0 {
			s.Ratios = append(s.Ratios, core.Ratio(now))
		}
		ok := core.Allow(now, r.Float64())
		switch {
		case failing:
			downCalls++
			if !ok {
				downRefused++
			} else {
				s.FailedDown++
				core.Record(now+5*ms, breaker.Failure)
			}
		default:
			if now >= up {
				upCalls++
				if !ok {
					upRefused++
				}
			}
			if ok {
				core.Record(now+5*ms, breaker.Success)
			}
		}
		if now >= up && s.Recovery < 0 && core.Ratio(now+5*ms) == 0 {
			s.Recovery = time.Duration(now - up)
		}
	}
	s.RefusedDown = float64(downRefused) / float64(max(downCalls, 1))
	s.RefusedUp = float64(upRefused) / float64(max(upCalls, 1))
	healthy, _ := breaker.NewCore(breaker.GoZeroPolicy(), 0)
	for i := 0; i < 120*100; i++ {
		now := int64(i) * 10 * ms
		if healthy.Allow(now, r.Float64()) {
			o := breaker.Success
			if r.IntN(5) == 0 {
				o = breaker.Failure
			}
			healthy.Record(now+5*ms, o)
		}
		s.HealthyRatio = max(s.HealthyRatio, healthy.Ratio(now))
	}
	return s
}

// OverloadStats is what an open-loop overload run measured.
type OverloadStats struct {
	Goodput    float64       // completed within the timeout per second in the 3× stretch, over capacity throughput
	Refused    float64       // share of the 3× stretch's calls refused
	InFlight   float64       // the largest 100 ms mean of calls in flight over what the server showed it can carry (shedder), or over the capacity (limiters)
	P50, P99   time.Duration // response time of admitted calls in the 3× stretch
	FlyingMean float64       // mean calls in flight in the 3× stretch
}

// overloadGate is what an open-loop run admits through: a shedder or a limiter.
type overloadGate interface {
	admit(now int64, flying int) (settle func(now int64, ok bool), yes bool)
	shown(now int64) float64 // capacity shown, for the in-flight bound (0: use the backend's)
}

// Overload offers Poisson arrivals rising from half the backend's throughput to three times it
// over 60 s, then holds 3× for 60 s; capacity 50, service time 20 ms; calls over 80 ms time out.
func overload(g overloadGate, seed uint64) OverloadStats {
	const capacity = 50
	base := 20 * time.Millisecond
	timeout := 4 * base
	r := rand.New(rand.NewPCG(seed, 0x10ad))
	b := &backend{r: r}
	ph := Phase{Capacity: capacity, Base: base}
	throughput := float64(capacity) / base.Seconds()
	ramp, hold := int64(60*time.Second), int64(60*time.Second)
	rate := func(now int64) float64 { return throughput * (0.5 + 2.5*min(float64(now)/float64(ramp), 1)) }
	var q queue
	var seq int64
	var s OverloadStats
	var good, offered, refused, flySum, flyN int64
	var rts []time.Duration
	bucket := int64(100 * time.Millisecond)
	var bSum, bN int64
	now := int64(0)
	for now < ramp+hold {
		next := now + int64(r.ExpFloat64()/rate(now)*1e9)
		for q.Len() > 0 && q[0].at <= next {
			e := heap.Pop(&q).(event)
			b.flying--
			e.settle(e.at, e.rt <= timeout)
			if e.at >= ramp {
				rts = append(rts, e.rt)
				if e.rt <= timeout {
					good++
				}
			}
		}
		if next/bucket != now/bucket && bN > 0 {
			if rate(now) >= throughput {
				limit := float64(capacity)
				if shown := g.shown(now); shown > 0 {
					limit = shown
				}
				s.InFlight = max(s.InFlight, float64(bSum)/float64(bN)/limit)
			}
			bSum, bN = 0, 0
		}
		now = next
		bSum += int64(b.flying)
		bN++
		if now >= ramp {
			offered++
			flySum += int64(b.flying)
			flyN++
		}
		settle, ok := g.admit(now, b.flying)
		if !ok {
			if now >= ramp {
				refused++
			}
			continue
		}
		rt := b.serve(ph)
		seq++
		heap.Push(&q, event{at: now + int64(rt), seq: seq, rt: rt, settle: settle})
	}
	s.Goodput = float64(good) / (float64(hold) / 1e9) / throughput
	s.Refused = float64(refused) / float64(max(offered, 1))
	s.P50, s.P99 = pct(rts, 0.5), pct(rts, 0.99)
	s.FlyingMean = float64(flySum) / float64(max(flyN, 1))
	return s
}

type shedGate struct {
	c        *shed.Core
	capacity int
}

func (g shedGate) admit(now int64, flying int) (func(int64, bool), bool) {
	cpu := min(1000, 1000*flying/g.capacity)
	t, ok := g.c.Allow(now, cpu)
	if !ok {
		return nil, false
	}
	return func(now int64, good bool) {
		if good {
			t.Pass(now)
		} else {
			t.Fail()
		}
	}, true
}

func (g shedGate) shown(now int64) float64 { return g.c.Capacity(now) }

// OverloadShed runs the overload through ward's shedder core; the CPU reads in proportion to the
// calls in flight (1000 at capacity).
func OverloadShed(seed uint64) OverloadStats {
	c, _ := shed.NewCore(shed.DefaultPolicy(), 0)
	return overload(shedGate{c: c, capacity: 50}, seed)
}

type limitGate struct {
	a     Admitter
	clock *int64
}

func (g limitGate) admit(now int64, _ int) (func(int64, bool), bool) {
	*g.clock = now
	s, ok := g.a.Admit(now)
	if !ok {
		return nil, false
	}
	return func(now int64, good bool) { *g.clock = now; s(now, !good) }, true
}

func (g limitGate) shown(int64) float64 { return 0 }

// OverloadLimit runs the overload through an adaptive limit on the clock it reads.
func OverloadLimit(a Admitter, clock *int64, seed uint64) OverloadStats {
	return overload(limitGate{a: a, clock: clock}, seed)
}
