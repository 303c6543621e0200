package sim

import (
	"container/heap"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/wardgo/ward/shed"
)

// RunawayStats is what a sustained overload of a worker-pool server measured through a shedder
// whose CPU check is bypassed (the CPU always reads at the threshold: always hot, never scaled).
type RunawayStats struct {
	Capacity []float64     // the capacity the shedder shows, once every 10 s
	P99      time.Duration // of the admitted calls in the last 30 s
	Slow     float64       // share of the admitted calls in the last 30 s slower than 1 s
	Goodput  float64       // calls completed within 1 s per second in the last 30 s, over the pool's throughput
}

// ShedRunaway offers Poisson arrivals at 4× the throughput of a server with a pool of 20 workers
// at 50 ms a call (400 calls a second; calls beyond 20 queue, so a call's time grows with the
// calls in flight) for 90 s, through a shedder built with p whose CPU reading is always
// p.CPU. Every call the server finishes passes, however late, as a handler returning 200 would.
func ShedRunaway(p shed.Policy, seed uint64) RunawayStats {
	const workers = 20
	base := 50 * time.Millisecond
	length := int64(90 * time.Second)
	late := length - int64(30*time.Second)
	c, err := shed.NewCore(p, 0)
	if err != nil {
		panic(err)
	}
	r := rand.New(rand.NewPCG(seed, 0x5bed))
	b := &backend{r: r}
	ph := Phase{Capacity: workers, Base: base}
	throughput := float64(workers) / base.Seconds()
	rate := 4 * throughput
	type done struct {
		t  shed.Ticket
		rt time.Duration
	}
	var q queue
	var seq int64
	tickets := map[int64]*done{}
	var s RunawayStats
	var rts []time.Duration
	var good, slow int64
	next := int64(0)
	for now := int64(0); now < length; {
		at := now + int64(r.ExpFloat64()/rate*1e9)
		for q.Len() > 0 && q[0].at <= at {
			e := heap.Pop(&q).(event)
			b.flying--
			d := tickets[e.seq]
			delete(tickets, e.seq)
			d.t.Pass(e.at)
			if e.at >= late {
				rts = append(rts, d.rt)
				if d.rt <= time.Second {
					good++
				} else {
					slow++
				}
			}
		}
		now = at
		for now >= next {
			s.Capacity = append(s.Capacity, c.Capacity(now))
			next += int64(10 * time.Second)
		}
		t, ok := c.Allow(now, p.CPU)
		if !ok {
			continue
		}
		rt := b.serve(ph)
		seq++
		tickets[seq] = &done{t: t, rt: rt}
		heap.Push(&q, event{at: now + int64(rt), seq: seq})
	}
	s.P99 = pct(rts, 0.99)
	s.Slow = float64(slow) / float64(max(good+slow, 1))
	s.Goodput = float64(good) / 30 / throughput
	return s
}

// StepStats is what a step overload of a CPU-bound server measured through a shedder.
type StepStats struct {
	FirstCPU int           // the sampler's first value, thousandths
	ToHot    time.Duration // from the step to the first refusal; -1: never
	CPUAtHot int           // the CPU reading at the first refusal
	Goodput  float64       // calls completed within 1 s of arriving, per second of the overload, over capacity
	P50, P99 time.Duration // of the calls admitted during the overload
	Settled  time.Duration // p99 of the calls admitted from 3 s after the step on
	Peak     int           // the most calls in flight during the overload
}

// ShedStep runs a server of one CPU whose calls each need work of CPU time (capacity 1/work calls a
// second), shared equally by the calls in flight as Go's scheduler shares one P between runnable
// goroutines, through a shedder built with p whose CPU reading is a sampler folding with cp: one
// reading every cp.Every of the CPU's busy share over the interval, from the first call on, as
// [shed.CPU] reads a process's own time. Poisson arrivals come at `before` × capacity for pre
// (so the sampler's first readings are low: about before × 1000), then step to `load` ×
// capacity for hold; before must be > 0. Refusals cost nothing; admitted calls run to completion (a CPU-bound
// handler does not notice the client giving up), and count toward goodput only if they finish
// within 1 s of arriving.
func ShedStep(p shed.Policy, cp shed.CPUPolicy, work time.Duration, before, load float64, pre, hold time.Duration, seed uint64) StepStats {
	c, err := shed.NewCore(p, 0)
	if err != nil {
		panic(err)
	}
	avg, err := shed.NewCPUAverage(cp)
	if err != nil {
		panic(err)
	}
	r := rand.New(rand.NewPCG(seed, 0x57e9))
	capacity := 1 / work.Seconds()
	step, end := int64(pre), int64(pre+hold)
	// Processor sharing in virtual time: v grows at 1/K per nanosecond while K calls are in
	// flight, and a call that arrived at virtual time v0 finishes when v reaches v0 + work.
	var q queue
	type call struct {
		t  shed.Ticket
		at int64
	}
	calls := map[int64]call{}
	var v, seq int64
	var vFrac float64 // the fraction of a virtual nanosecond not yet added to v
	now := int64(0)
	var busy, lastBusy int64 // busy nanoseconds so far, and at the last reading
	nextRead := int64(cp.Every)
	cpu := -1
	s := StepStats{ToHot: -1, FirstCPU: -1}
	var rts, late []time.Duration
	var good int64
	// advance runs the CPU from now to t, completing calls and taking readings on the way.
	advance := func(t int64) {
		for now < t {
			k := int64(q.Len())
			next := min(t, nextRead)
			if k > 0 {
				// the next completion, in real time
				if done := now + (q[0].at-v)*k; done < next {
					next = max(done, now)
				}
				d := float64(next-now)/float64(k) + vFrac
				v += int64(d)
				vFrac = d - float64(int64(d))
				busy += next - now
			}
			now = next
			for q.Len() > 0 && q[0].at <= v {
				e := heap.Pop(&q).(event)
				cl := calls[e.seq]
				delete(calls, e.seq)
				cl.t.Pass(now)
				if cl.at >= step && cl.at < end {
					rt := time.Duration(now - cl.at)
					rts = append(rts, rt)
					if cl.at >= step+int64(3*time.Second) {
						late = append(late, rt)
					}
					if rt <= time.Second {
						good++
					}
				}
			}
			if now == nextRead {
				cpu = avg.Add(1000 * float64(busy-lastBusy) / float64(cp.Every))
				if s.FirstCPU < 0 {
					s.FirstCPU = cpu
				}
				lastBusy = busy
				nextRead += int64(cp.Every)
			}
		}
	}
	for {
		rate := before * capacity
		if now >= step {
			rate = load * capacity
		}
		at := now + int64(r.ExpFloat64()/rate*1e9)
		if at >= end {
			break
		}
		advance(at)
		t, ok := c.Allow(now, cpu)
		if !ok {
			if s.ToHot < 0 && now >= step {
				s.ToHot, s.CPUAtHot = time.Duration(now-step), cpu
			}
			continue
		}
		seq++
		calls[seq] = call{t: t, at: now}
		heap.Push(&q, event{at: v + int64(work), seq: seq})
		if now >= step {
			s.Peak = max(s.Peak, q.Len())
		}
	}
	advance(end + int64(time.Second)) // calls that arrived before the end and finish within 1 s
	s.Goodput = float64(good) / hold.Seconds() / capacity
	s.P50, s.P99, s.Settled = pct(rts, 0.5), pct(rts, 0.99), pct(late, 0.99)
	return s
}

// WriteShedStep prints ShedStep for the preset sampler and go-zero's, from a low first reading
// (0.444 × capacity for 500 ms) to 4× capacity for 30 s, on a server of one CPU at 2 ms a call.
func WriteShedStep(w io.Writer, seed uint64) {
	fmt.Fprintf(w, "\nshedder, step overload: one CPU, 2 ms a call (500/s), 0.44x for 0.5 s then 4x for 30 s\n")
	fmt.Fprintf(w, "%-8s %9s %11s %8s %8s %8s %14s %6s\n", "sampler", "first cpu", "hot after", "goodput", "p50", "p99", "p99 from 3 s", "peak")
	for _, c := range []struct {
		name string
		p    shed.CPUPolicy
	}{{"preset", shed.DefaultCPUPolicy()}, {"go-zero", shed.GoZeroCPUPolicy()}} {
		s := ShedStep(shed.DefaultPolicy(), c.p, 2*time.Millisecond, 0.444, 4, 500*time.Millisecond, 30*time.Second, seed)
		fmt.Fprintf(w, "%-8s %9d %11v %7.0f%% %8v %8v %14v %6d\n", c.name, s.FirstCPU, s.ToHot.Round(time.Millisecond), 100*s.Goodput,
			s.P50.Round(time.Millisecond), s.P99.Round(time.Millisecond), s.Settled.Round(time.Millisecond), s.Peak)
	}
}
