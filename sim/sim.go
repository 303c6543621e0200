// Package sim is ward's overload simulator: a discrete-event simulation, in simulated time, of
// clients, an admission control (an adaptive limit, a breaker, a shedder) and a backend with a
// capacity (the concurrency at which it starts to queue), a service time, and a schedule of
// changes. An hour of traffic is a loop over now; the same seed gives the same numbers.
//
// The admission controls are ward's, driven single-threaded with the simulated clock, which by
// the differential tests of each package gives exactly their pure cores' decisions. The bench
// module drives the Netflix-style Go port's limit algorithms through the same scenarios via the
// [Admitter] interface, so the tables compare like with like.
package sim

import (
	"container/heap"
	"math/rand/v2"
	"slices"
	"time"
)

// Admitter is an adaptive concurrency limit as the simulator drives it.
type Admitter interface {
	// Admit asks to start a call at now; settle is called once when it ends.
	Admit(now int64) (settle func(now int64, dropped bool), ok bool)
	// Limit is the current limit, sampled once a second for the report.
	Limit() int
}

// Phase is a stretch of a scenario with a fixed backend.
type Phase struct {
	Length   time.Duration
	Capacity int           // calls in flight before the backend queues
	Base     time.Duration // service time while not queued
}

// Backend is the simulated server: a call starting with n in flight (itself included) takes
// Base × jitter × max(1, n / Capacity), jitter uniform in [0.9, 1.1).
type backend struct {
	flying int
	r      *rand.Rand
}

func (b *backend) serve(p Phase) time.Duration {
	b.flying++
	q := max(1, float64(b.flying)/float64(p.Capacity))
	return time.Duration(float64(p.Base) * (0.9 + 0.2*b.r.Float64()) * q)
}

type event struct {
	at     int64
	seq    int64 // ties broken by insertion order: deterministic
	client int
	done   bool // a completion (true) or an arrival / retry
	start  int64
	settle func(now int64, dropped bool)
	rt     time.Duration
}

type queue []event

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	return q[i].at < q[j].at || (q[i].at == q[j].at && q[i].seq < q[j].seq)
}
func (q queue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *queue) Push(x any)   { *q = append(*q, x.(event)) }
func (q *queue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// PhaseStats is what one phase of a run measured.
type PhaseStats struct {
	Phase
	Goodput float64       // calls completed within the timeout per second, over the phase's capacity throughput (Capacity / Base)
	P50     time.Duration // response time of the admitted calls
	P99     time.Duration
	P99Late time.Duration // p99 over the second half of the phase (settled)
	Refused float64       // refused attempts over all attempts
	Settle  time.Duration // from the phase's start until the limit first lay in [Capacity, 2 × Capacity]; -1: never
	Limit   int           // at the end of the phase
	Peak    int           // the largest limit sampled (once a second) after the phase's first 10 s
}

// Run is one admission control through one scenario.
type Run struct {
	Phases []PhaseStats
	Limits []int // once a second
	P99s   []time.Duration
}

// Closed runs a closed loop of clients against the backend through a: each client calls again as
// soon as its call ends, and comes back after half a base time when refused. A call slower than
// timeout is a drop (the client gave up; it still occupied the backend).
func Closed(a Admitter, clock *int64, clients int, timeout time.Duration, phases []Phase, seed uint64) Run {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	b := &backend{r: r}
	var q queue
	var seq int64
	push := func(e event) { seq++; e.seq = seq; heap.Push(&q, e) }
	for c := 0; c < clients; c++ {
		push(event{at: *clock + int64(c)*int64(time.Microsecond), client: c})
	}
	var run Run
	nextSample := *clock
	var secRT []time.Duration
	for _, ph := range phases {
		start, end := *clock, *clock+int64(ph.Length)
		half := start + int64(ph.Length)/2
		var rts, late []time.Duration
		var good, attempts, refused int64
		settle := time.Duration(-1)
		peak := 0
		for q.Len() > 0 && q[0].at < end {
			e := heap.Pop(&q).(event)
			*clock = e.at
			for *clock >= nextSample {
				run.Limits = append(run.Limits, a.Limit())
				run.P99s = append(run.P99s, pct(secRT, 0.99))
				secRT = secRT[:0]
				nextSample += int64(time.Second)
				lim := a.Limit()
				if settle < 0 && lim >= ph.Capacity && lim <= 2*ph.Capacity {
					settle = time.Duration(*clock - start)
				}
				if *clock-start >= int64(10*time.Second) {
					peak = max(peak, lim)
				}
			}
			if e.done {
				b.flying--
				dropped := e.rt > timeout
				e.settle(*clock, dropped)
				rts = append(rts, e.rt)
				secRT = append(secRT, e.rt)
				if *clock >= half {
					late = append(late, e.rt)
				}
				if !dropped {
					good++
				}
			}
			attempts++
			s, ok := a.Admit(*clock)
			if !ok {
				refused++
				push(event{at: *clock + int64(ph.Base)/2, client: e.client})
				continue
			}
			rt := b.serve(ph)
			push(event{at: *clock + int64(rt), client: e.client, done: true, start: *clock, settle: s, rt: rt})
		}
		*clock = end
		run.Phases = append(run.Phases, PhaseStats{
			Phase:   ph,
			Goodput: float64(good) / ph.Length.Seconds() / (float64(ph.Capacity) / ph.Base.Seconds()),
			P50:     pct(rts, 0.5),
			P99:     pct(rts, 0.99),
			P99Late: pct(late, 0.99),
			Refused: float64(refused) / float64(max(attempts, 1)),
			Settle:  settle,
			Limit:   a.Limit(),
			Peak:    peak,
		})
	}
	return run
}

// pct returns the p-quantile of v (sorting it).
func pct(v []time.Duration, p float64) time.Duration {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	return v[min(int(p*float64(len(v))), len(v)-1)]
}
