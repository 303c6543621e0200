package adaptive

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestKneeTrace: slow start doubles; a queued window cuts to InFlight × baseline / RTT; the next
// window tells queueing (latency fell) from a slower backend (it did not: new baseline, the last
// good limit back); past the knee the step doubles, held to an eighth of the limit; the hold band.
func TestKneeTrace(t *testing.T) {
	r, err := NewKnee(DefaultKnee())
	if err != nil {
		t.Fatal(err)
	}
	runRule(t, "Knee cold start", r, []step{
		{Sample{RTT: 50 * ms, InFlight: 20}, 40},   // the baseline; slow start doubles
		{Sample{RTT: 50 * ms, InFlight: 40}, 80},   // twice the calls, same time: baseline checked
		{Sample{RTT: 50 * ms, InFlight: 80}, 160},  // still no queue
		{Sample{RTT: 100 * ms, InFlight: 160}, 80}, // queued 2×: cut to 160 × 50/100; slow start over
		{Sample{RTT: 52 * ms, InFlight: 160}, 81},  // the cut answered (in flight read at most the limit): +1
		{Sample{RTT: 50 * ms, InFlight: 81}, 83},   // +2
		{Sample{RTT: 50 * ms, InFlight: 83}, 87},   // +4
		{Sample{RTT: 50 * ms, InFlight: 87}, 95},   // +8
		{Sample{RTT: 50 * ms, InFlight: 95}, 106},  // step held to an eighth: +11.9
		{Sample{RTT: 56 * ms, InFlight: 106}, 106}, // 1.12 × baseline: past the middle of the tolerance, hold
		{Sample{RTT: 10 * ms, InFlight: 5}, 106},   // application-limited; a new, faster baseline
	})
	if r.Baseline() != 10*ms || r.SlowStart() {
		t.Fatalf("baseline %v, slow start %v; want 10ms, false", r.Baseline(), r.SlowStart())
	}

	r, _ = NewKnee(DefaultKnee())
	runRule(t, "Knee slower backend", r, []step{
		{Sample{RTT: 50 * ms, InFlight: 20}, 40},
		{Sample{RTT: 50 * ms, InFlight: 40}, 80},
		{Sample{RTT: 150 * ms, InFlight: 80}, 26}, // 3× slower: cut to 80/3 and test
		{Sample{RTT: 150 * ms, InFlight: 26}, 40}, // no faster with a third in flight: a slower backend; the last good limit
		{Sample{RTT: 150 * ms, InFlight: 80}, 41}, // the new baseline: no queue (in flight read at most the limit)
		{Sample{RTT: 50 * ms, InFlight: 81}, 43},  // faster again: the baseline follows at once
		{Sample{RTT: 100 * ms, InFlight: 83}, 21}, // queued: cut to 43 × 50/100
		{Sample{RTT: 50 * ms, InFlight: 41}, 22},  // answered: it was a queue
		{Sample{RTT: 50 * ms, Dropped: true}, 20}, // a drop latency does not explain: × 0.9
		{Sample{Dropped: true}, 18},               // a drop without latency
		{Sample{RTT: -ms, InFlight: 1000}, 18},    // no latency: nothing moves
	})

	r, _ = NewKnee(DefaultKnee())
	runRule(t, "Knee 8 slots", r, []step{
		{Sample{RTT: 125 * ms, InFlight: 20}, 40}, // 2.5 × the unknown 50 ms: read as the baseline
		{Sample{RTT: 250 * ms, InFlight: 40}, 15}, // twice the calls, twice the time: saturated at 20; probe at 3/4
		{Sample{RTT: 94 * ms, InFlight: 40}, 11},  // the same throughput at 15 (in flight read at most the limit): lower
		{Sample{RTT: 69 * ms, InFlight: 11}, 8},   // and again
		{Sample{RTT: 50 * ms, InFlight: 8}, 6},    // still 0.16 calls/ms at 8: the knee is at 8 or below
		{Sample{RTT: 50 * ms, InFlight: 6}, 6},    // the throughput fell at 6: believed from the second window
		{Sample{RTT: 50 * ms, InFlight: 6}, 8},    // fell again: the knee is 0.16/ms × 50 ms
		{Sample{RTT: 50 * ms, InFlight: 8}, 9},    // no queue at 8: probing, +1
		{Sample{RTT: 62 * ms, InFlight: 9}, 7},    // 1.24 ×: queued, cut to 9 × 50/62
	})

	// A cold start at the knee itself (Initial 20 on 20 slots of 50 ms): the doubling window
	// shows the latency doubled with the calls, two windows at 15 show the latency did not fall,
	// and the limit settles at 20 without going back to 40.
	r, _ = NewKnee(DefaultKnee())
	runRule(t, "Knee cold at the knee", r, []step{
		{Sample{RTT: 50 * ms, InFlight: 20}, 40},
		{Sample{RTT: 100 * ms, InFlight: 40}, 15}, // saturated at 20: probe at 15
		{Sample{RTT: 56 * ms, InFlight: 40}, 15},  // 15 in flight, less throughput; calls queued before the cut may explain it
		{Sample{RTT: 50 * ms, InFlight: 15}, 20},  // no faster again: 20 was the knee (0.4/ms × 50 ms)
		{Sample{RTT: 50 * ms, InFlight: 20}, 21},  // probing, +1
		{Sample{RTT: 52 * ms, InFlight: 21}, 23},  // +2
		{Sample{RTT: 57 * ms, InFlight: 23}, 23},  // 1.14 ×: hold
	})
	if r.SlowStart() || r.Baseline() != 50*ms {
		t.Fatalf("slow start %v, baseline %v; want false, 50ms", r.SlowStart(), r.Baseline())
	}

	// The backend gets faster during the test: the test ends, that window is the baseline, and
	// probing goes on from the limit the test held.
	r, _ = NewKnee(DefaultKnee())
	runRule(t, "Knee faster during the test", r, []step{
		{Sample{RTT: 50 * ms, InFlight: 20}, 40},
		{Sample{RTT: 100 * ms, InFlight: 40}, 15},
		{Sample{RTT: 20 * ms, InFlight: 15}, 15}, // 0.75 calls/ms where 20 in flight gave 0.4
		{Sample{RTT: 20 * ms, InFlight: 15}, 16},
	})
	if r.Baseline() != 20*ms {
		t.Fatalf("baseline %v, want 20ms", r.Baseline())
	}

	// Saturated at Min: the test cannot go lower, so it ends there, and probing resumes.
	p := DefaultKnee()
	p.Initial = 1
	r, _ = NewKnee(p)
	runRule(t, "Knee saturated at Min", r, []step{
		{Sample{RTT: 50 * ms, InFlight: 1}, 2},
		{Sample{RTT: 100 * ms, InFlight: 2}, 1}, // twice the time with twice the calls: saturated at 1
		{Sample{RTT: 50 * ms, InFlight: 1}, 1},  // the same throughput at 1, the least limit: the test ends
		{Sample{RTT: 50 * ms, InFlight: 1}, 2},  // no queue at 1: probing, +1
	})
}

func TestKneeConstructionErrors(t *testing.T) {
	for _, c := range []struct {
		field string
		edit  func(*Knee)
	}{
		{"Knee.Min", func(p *Knee) { p.Min = 0 }},
		{"Knee.Max", func(p *Knee) { p.Max = 0 }},
		{"Knee.Initial", func(p *Knee) { p.Initial = 1001 }},
		{"Knee.Backoff", func(p *Knee) { p.Backoff = 0 }},
		{"Knee.Tolerance", func(p *Knee) { p.Tolerance = 1 }},
		{"Knee.Tolerance", func(p *Knee) { p.Tolerance = 1 / zero }},
	} {
		p := DefaultKnee()
		c.edit(&p)
		_, err := NewKnee(p)
		if err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("NewKnee(%+v) = %v, want an error naming %s", p, err, c.field)
		}
	}
}

var zero float64

// TestKneeLimiterMatchesCore: a Limiter on Knee, driven from one goroutine with an injected clock
// and every call timed, gives a Core's decisions and snapshots on a random run.
func TestKneeLimiterMatchesCore(t *testing.T) {
	p := DefaultKnee()
	p.Initial, p.Max = 4, 60
	a, _ := NewKnee(p)
	b, _ := NewKnee(p)
	clk := &manual{}
	l, err := New(a, WithClock(clk.read), WithSampleEvery(1))
	if err != nil {
		t.Fatal(err)
	}
	c, _ := NewCore(b, DefaultWindow(), 0)
	rnd := rand.New(rand.NewPCG(3, 18))
	var leases []Lease
	var tickets []Ticket
	for i := 0; i < 200000; i++ {
		switch op := rnd.IntN(10); {
		case op < 4:
			lease, ok := l.Acquire()
			ticket, ok2 := c.Acquire(clk.now)
			if ok != ok2 {
				t.Fatalf("op %d: Limiter %v, Core %v", i, ok, ok2)
			}
			if ok {
				leases, tickets = append(leases, lease), append(tickets, ticket)
			}
		case op < 8 && len(leases) > 0:
			k := rnd.IntN(len(leases))
			if op == 7 {
				leases[k].Fail()
				tickets[k].Fail(clk.now)
			} else {
				leases[k].Pass()
				tickets[k].Pass(clk.now)
			}
			leases, tickets = append(leases[:k], leases[k+1:]...), append(tickets[:k], tickets[k+1:]...)
		default:
			// latency grows with the calls in flight past 20: the rule finds a knee
			clk.advance(time.Duration(1+max(0, len(leases)-20)) * ms)
		}
		if ls, cs := l.Snapshot(), c.Snapshot(); ls != cs {
			t.Fatalf("op %d: Limiter %+v, Core %+v", i, ls, cs)
		}
	}
	if w := c.Snapshot().Windows; w < 20 {
		t.Fatalf("%d windows closed; the test needs 20", w)
	}
}

// kneeRun offers Poisson arrivals at load × the throughput of a backend of `slots` workers at
// 50 ms a call (calls beyond the slots queue, first come first served) through a Core on Knee's
// preset for `secs` seconds of event time, and returns the limit after each window closed with
// the instant it closed, and the share of the backend's throughput completed in each second.
func kneeRun(t *testing.T, slots int, load float64, secs int, seed uint64) (limits []int, at []int64, goodput []float64) {
	t.Helper()
	r, _ := NewKnee(DefaultKnee())
	c, err := NewCore(r, DefaultWindow(), 0)
	if err != nil {
		t.Fatal(err)
	}
	const service = int64(50 * time.Millisecond)
	rate := load * float64(slots) / 0.05
	rnd := rand.New(rand.NewPCG(seed, 23))
	type call struct {
		t    Ticket
		done int64
	}
	var running []call // at most slots, by completion
	var queue []Ticket // admitted, waiting for a slot
	done := make([]int, secs)
	windows := int64(0)
	end := int64(secs) * int64(time.Second)
	complete := func(upTo int64) {
		for len(running) > 0 {
			k := 0
			for i := range running {
				if running[i].done < running[k].done {
					k = i
				}
			}
			if running[k].done > upTo {
				return
			}
			cl := running[k]
			running = append(running[:k], running[k+1:]...)
			cl.t.Pass(cl.done)
			done[cl.done/int64(time.Second)]++
			if w := c.Snapshot().Windows; w != windows {
				windows = w
				limits, at = append(limits, c.Limit()), append(at, cl.done)
			}
			if len(queue) > 0 {
				running = append(running, call{queue[0], cl.done + service})
				queue = queue[1:]
			}
		}
	}
	for now := int64(0); ; {
		now += int64(rnd.ExpFloat64() / rate * 1e9)
		if now >= end {
			break
		}
		complete(now)
		tk, ok := c.Acquire(now)
		if !ok {
			continue
		}
		if len(running) < slots {
			running = append(running, call{tk, now + service})
		} else {
			queue = append(queue, tk)
		}
	}
	for i := range done {
		goodput = append(goodput, float64(done[i])/(float64(slots)/0.05))
	}
	return limits, at, goodput
}

// TestSimKneeColdAtTheKnee: from a cold start whose initial limit (20) is the backend's own size
// (20 slots of 50 ms), under 4× its throughput, Knee never goes back to 40 after its first cut,
// never holds fewer than 15 (no second under 70% goodput), and from 4 s on keeps its limit within
// [20, 40] and at least 95% goodput every second. With 8 slots it holds the limit within [6, 11]
// from 7 s on. The run is deterministic (event time, a fixed seed).
func TestSimKneeColdAtTheKnee(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		limits, at, goodput := kneeRun(t, 20, 4, 30, seed)
		t.Logf("seed %d, 20 slots: limits %v, goodput by second %.2f", seed, limits[:min(len(limits), 10)], goodput[:8])
		cut := false
		for i, l := range limits {
			if cut && l >= 40 {
				t.Errorf("seed %d: the limit went back to %d at %v after its first cut", seed, l, time.Duration(at[i]))
			}
			cut = cut || (i > 0 && l < limits[i-1])
			if l < 15 || at[i] >= int64(4*time.Second) && l < 20 || l > 40 {
				t.Errorf("seed %d: limit %d at %v, want >= 15, and within [20, 40] from 4 s on", seed, l, time.Duration(at[i]))
			}
		}
		for s, g := range goodput {
			if g < 0.7 || s >= 4 && g < 0.95 {
				t.Errorf("seed %d: goodput %.2f in second %d, want >= 0.7, and >= 0.95 from 4 s on", seed, g, s)
			}
		}

		limits, at, _ = kneeRun(t, 8, 4, 30, seed)
		t.Logf("seed %d, 8 slots: limits %v", seed, limits[:min(len(limits), 16)])
		for i, l := range limits {
			if at[i] >= int64(7*time.Second) && (l < 6 || l > 11) {
				t.Errorf("seed %d, 8 slots: limit %d at %v, want within [6, 11] from 7 s on", seed, l, time.Duration(at[i]))
			}
		}
	}
}
