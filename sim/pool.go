package sim

import (
	"container/heap"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/wardgo/ward/pool"
)

// PoolRow is one second of the pool scenario, read at the end of the second.
type PoolRow struct {
	Second  int
	Rate    float64 // calls a second arriving during the second
	Lent    int     // resources lent (in use)
	Idle    int     // resources sitting idle
	Waiting int     // callers waiting for a resource
	Opened  int64   // opens so far
	Closed  int64   // closes so far (evicted, over the idle cap)
	MaxWait time.Duration
}

// PoolRates are the pool scenario's arrival rates, calls a second, for each of its 24 seconds:
// steady, a burst past what Size can carry, a middle plateau, then quiet, when the pool shrinks.
var PoolRates = [24]float64{
	40, 40, 40, 40, 40, 40,
	260, 260, 260, 260, 260, 260,
	80, 80, 80, 80, 80, 80,
	4, 4, 4, 4, 4, 4,
}

// PoolLimits are the limits a server would run the pool scenario with: 8 live, all 8 allowed to
// sit idle, retired after 3 s idle. Keep, not a low Idle, is what shrinks the pool once traffic is
// quiet.
func PoolLimits() pool.Limits {
	return pool.Limits{Size: 8, Idle: 8, Keep: 3 * time.Second}
}

// PoolChurnLimits are PoolLimits with Idle 4: a resource given back while 4 sit idle is closed,
// and the next call past 4 at once opens a new one. Shown beside PoolLimits for what a low Idle
// costs.
func PoolChurnLimits() pool.Limits {
	l := PoolLimits()
	l.Idle = 4
	return l
}

// poolHold is the mean time a caller keeps a resource (exponential).
const poolHold = 30 * time.Millisecond

type simConn struct{ id int }

// Pool runs the pool scenario with lim: a synthetic client drives a real [pool.Pool] for 24 s of simulated
// time, Poisson arrivals at [PoolRates], each call holding a resource for an exponential 30 ms, and
// returns one row a second. The pool is driven from one goroutine on the simulated clock, so it
// answers exactly as its Core does; a caller the pool would block (every live resource lent and
// Size reached) is queued by the client, first come first served, and handed the next resource
// released, as Pool.Acquire's waiters are. Evict runs at every second, as WithEvictEvery would.
// The same seed gives the same rows.
func Pool(seed uint64, lim pool.Limits) []PoolRow {
	r := rand.New(rand.NewPCG(seed, 0x9001))
	var now int64
	ids := 0 // the last resource's id
	open := func(context.Context) (*simConn, error) {
		ids++
		return &simConn{ids}, nil
	}
	p, err := pool.New(open, func(*simConn) {}, lim, pool.WithClock(func() int64 { return now }), pool.WithRand(r.Float64))
	if err != nil {
		panic(err) // the caller's limits are valid
	}
	defer p.Close()
	ctx := context.Background()
	var q queue // the releases to come: client is the resource's id
	loans := map[int]pool.Loan[*simConn]{}
	var seq int64
	var waiting []int64 // arrival instants of the callers waiting, in order
	var maxWait time.Duration
	lend := func(arrived int64) {
		l, err := p.Acquire(ctx)
		if err != nil {
			panic(err) // no ward, and opens never fail here
		}
		maxWait = max(maxWait, time.Duration(now-arrived))
		seq++
		hold := time.Duration(r.ExpFloat64() * float64(poolHold))
		id := l.Value().id
		loans[id] = l
		heap.Push(&q, event{at: now + int64(hold), seq: seq, client: id})
	}
	blocked := func() bool {
		st := p.Stats()
		return st.Idle == 0 && st.Live >= lim.Size
	}
	arrival := func(from int64) int64 {
		rate := PoolRates[min(int(from/int64(time.Second)), len(PoolRates)-1)]
		return from + int64(r.ExpFloat64()*float64(time.Second)/rate)
	}
	end := int64(len(PoolRates)) * int64(time.Second)
	next, sample := arrival(0), int64(time.Second)
	var rows []PoolRow
	for sample <= end {
		switch {
		case len(q) > 0 && q[0].at <= min(next, sample):
			rel := heap.Pop(&q).(event)
			now = rel.at
			loans[rel.client].Release()
			delete(loans, rel.client)
			for len(waiting) > 0 && !blocked() {
				arrived := waiting[0]
				waiting = waiting[1:]
				lend(arrived)
			}
		case next < sample:
			now = next
			next = arrival(now)
			if len(waiting) > 0 || blocked() {
				waiting = append(waiting, now)
			} else {
				lend(now)
			}
		default:
			now = sample
			p.Evict()
			st := p.Stats()
			sec := int(sample/int64(time.Second)) - 1
			rows = append(rows, PoolRow{Second: sec + 1, Rate: PoolRates[sec], Lent: st.Lent, Idle: st.Idle,
				Waiting: len(waiting), Opened: st.Opened, Closed: st.Closed, MaxWait: maxWait})
			maxWait = 0
			sample += int64(time.Second)
		}
	}
	return rows
}

// WritePool runs the pool scenario with seed, with the limits a server would use and with the
// churning ones beside them, and prints their rows side by side, then the opens each made a
// second and per call.
func WritePool(w io.Writer, seed uint64) {
	l, c := PoolLimits(), PoolChurnLimits()
	fmt.Fprintf(w, "\npool: a client drives a real pool for 24 s; calls hold a resource ~%v\n", poolHold)
	fmt.Fprintf(w, "  server setting: Size %d, Idle %d, Keep %v (left)   churning: Idle %d (right)\n", l.Size, l.Idle, l.Keep, c.Idle)
	fmt.Fprintf(w, "%4s %7s | %5s %5s %8s %7s %7s %9s | %5s %5s %8s %7s %7s %9s\n", "sec", "calls/s",
		"lent", "idle", "waiting", "opened", "closed", "max wait", "lent", "idle", "waiting", "opened", "closed", "max wait")
	a, b := Pool(seed, l), Pool(seed, c)
	for k, row := range a {
		o := b[k]
		fmt.Fprintf(w, "%4d %7.0f | %5d %5d %8d %7d %7d %9s | %5d %5d %8d %7d %7d %9s\n", row.Second, row.Rate,
			row.Lent, row.Idle, row.Waiting, row.Opened, row.Closed, msec(row.MaxWait),
			o.Lent, o.Idle, o.Waiting, o.Opened, o.Closed, msec(o.MaxWait))
	}
	calls := PoolCalls()
	for _, run := range []struct {
		name string
		rows []PoolRow
	}{{"server setting", a}, {"churning", b}} {
		opened := run.rows[len(run.rows)-1].Opened
		fmt.Fprintf(w, "  %-14s %3d opens in 24 s: %.2f a second, %.1f%% of %.0f calls\n", run.name, opened,
			float64(opened)/float64(len(run.rows)), 100*float64(opened)/calls, calls)
	}
}

// PoolCalls is how many calls the pool scenario expects in its 24 s: the sum of [PoolRates].
func PoolCalls() float64 {
	var n float64
	for _, r := range PoolRates {
		n += r
	}
	return n
}
