package sim

import (
	"container/heap"
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
