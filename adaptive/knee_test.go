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
		{Sample{RTT: 250 * ms, InFlight: 40}, 10}, // twice the calls, twice the time: that baseline was queued
		{Sample{RTT: 62 * ms, InFlight: 40}, 20},  // the baseline again, at 10 in flight
		{Sample{RTT: 125 * ms, InFlight: 20}, 5},  // proportional again: below 10
		{Sample{RTT: 50 * ms, InFlight: 5}, 10},   // the real baseline
		{Sample{RTT: 62 * ms, InFlight: 10}, 8},   // 1.25 ×: queued, cut to 10 × 50/62
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
