package sim

import (
	"container/heap"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/wardgo/ward/breaker"
)

// A client-side fault run: a client offers calls at a steady rate, open loop, through a breaker to
// a dependency whose behaviour follows a schedule, and counts what reached the dependency, what
// was refused and what was served. The dependency fails a background share of calls even while
// healthy, as real ones do.

// Fault is a dependency's behaviour over a stretch of time.
type Fault struct {
	Length  time.Duration
	Fails   float64       // share of calls that fail
	Latency time.Duration // how long a call takes, succeeding or failing at once
	// Slow is the share of calls that hang until the client's timeout (and fail); 0 for none.
	Slow    float64
	Timeout time.Duration
	Down    bool // the dependency counts as down (for the tallies), healthy otherwise
}

// FaultScenario is a client-side fault run.
type FaultScenario struct {
	Name   string
	About  string
	Rate   float64 // calls offered per second
	Faults []Fault
}

// Background is the share of calls a healthy dependency fails in every fault scenario.
const Background = 0.02

// FaultScenarios are the client-side scenarios at 100 calls a second, each with the 2%
// background error rate wherever the dependency is healthy: down (connection refused: every call
// fails at once) and failing (every call a 5xx at normal latency) for 20 s between 10 s of
// health before and 20 s after; partial failure of 30% and 60% of calls at normal latency; a
// slow dependency on which half the calls time out after 1 s; a dependency flapping 2 s up, 2 s
// down.
func FaultScenarios() []FaultScenario {
	const normal = 10 * time.Millisecond
	healthy := func(d time.Duration) Fault { return Fault{Length: d, Fails: Background, Latency: normal} }
	var flapping []Fault
	flapping = append(flapping, healthy(10*time.Second))
	for i := 0; i < 5; i++ {
		flapping = append(flapping, Fault{Length: 2 * time.Second, Fails: 1, Latency: normal, Down: true}, healthy(2*time.Second))
	}
	flapping = append(flapping, healthy(10*time.Second))
	return []FaultScenario{
		{"down", "connection refused for 20 s", 100, []Fault{healthy(10 * time.Second), {Length: 20 * time.Second, Fails: 1, Latency: 100 * time.Microsecond, Down: true}, healthy(20 * time.Second)}},
		{"failing", "every call a 5xx for 20 s", 100, []Fault{healthy(10 * time.Second), {Length: 20 * time.Second, Fails: 1, Latency: normal, Down: true}, healthy(20 * time.Second)}},
		{"partial30", "30% of calls fail for 30 s", 100, []Fault{healthy(10 * time.Second), {Length: 30 * time.Second, Fails: 0.3, Latency: normal, Down: true}, healthy(10 * time.Second)}},
		{"partial60", "60% of calls fail for 30 s", 100, []Fault{healthy(10 * time.Second), {Length: 30 * time.Second, Fails: 0.6, Latency: normal, Down: true}, healthy(10 * time.Second)}},
		{"slow", "half the calls time out (1 s) for 30 s", 100, []Fault{healthy(10 * time.Second), {Length: 30 * time.Second, Fails: Background, Latency: normal, Slow: 0.5, Timeout: time.Second, Down: true}, healthy(10 * time.Second)}},
		{"flapping", "2 s down, 2 s up, five times", 100, flapping},
	}
}

// Gate is a client-side breaker as a fault run drives it, on the simulated clock.
type Gate interface {
	// Allow asks to make a call at now with the draw roll; settle records its outcome.
	Allow(now int64, roll float64) (settle func(now int64, ok bool), yes bool)
}

// CoreGate drives a ward breaker Core built with p.
func CoreGate(p breaker.Policy) Gate {
	c, err := breaker.NewCore(p, 0)
	if err != nil {
		panic(err) // the presets are valid
	}
	return coreGate{c}
}

type coreGate struct{ c *breaker.Core }

func (g coreGate) Allow(now int64, roll float64) (func(int64, bool), bool) {
	if !g.c.Allow(now, roll) {
		return nil, false
	}
	return g.settle, true
}

func (g coreGate) settle(now int64, ok bool) {
	if ok {
		g.c.Record(now, breaker.Success)
	} else {
		g.c.Record(now, breaker.Failure)
	}
}

// StateMachine is a model of sony/gobreaker v2's circuit breaker with its defaults: closed until
// more than 5 failures in a row, then open for Timeout (gobreaker's default 60 s), then half-open
// letting one call through: its success closes the breaker, its failure opens it again. Outcomes
// of calls made before the state last changed are ignored, as gobreaker's generations do.
func StateMachine(timeout time.Duration) Gate { return &stateMachine{timeout: int64(timeout)} }

type stateMachine struct {
	timeout  int64
	state    int // 0 closed, 1 open, 2 half-open
	gen      int64
	fails    int
	openedAt int64
	trial    bool // the half-open call is in flight
}

func (s *stateMachine) Allow(now int64, _ float64) (func(int64, bool), bool) {
	if s.state == 1 && now-s.openedAt >= s.timeout {
		s.state, s.gen, s.trial = 2, s.gen+1, false
	}
	switch {
	case s.state == 1, s.state == 2 && s.trial:
		return nil, false
	case s.state == 2:
		s.trial = true
	}
	gen := s.gen
	return func(now int64, ok bool) {
		if gen != s.gen {
			return
		}
		switch {
		case ok && s.state == 2:
			s.state, s.gen, s.fails = 0, s.gen+1, 0
		case ok:
			s.fails = 0
		case s.state == 2:
			s.state, s.gen, s.openedAt = 1, s.gen+1, now
		default:
			if s.fails++; s.fails > 5 {
				s.state, s.gen, s.openedAt, s.fails = 1, s.gen+1, now, 0
			}
		}
	}, true
}

// FaultStats is what a client saw through one fault run. Shares are of the calls offered in the
// stretch named.
type FaultStats struct {
	Offered, Reached, Refused, Served int64 // over the whole run
	// DownReached is the share that reached the dependency while it was down, from 2 s after it
	// went down (the first 2 s of each down stretch are the breaker's to notice).
	DownReached float64
	// DownAll is the share that reached the dependency while it was down, over whole stretches.
	DownAll float64
	// DownServed is the share served (succeeded) while it was down: goodput under partial failure.
	DownServed float64
	// UpRefused is the share refused while the dependency was healthy after its first fault.
	UpRefused float64
	// After is the share refused in the 10 s after the dependency's last fault ended.
	After float64
	// Last is how long after the last fault ended the client last refused a call; -1: never.
	Last time.Duration
	// PerSecond holds, for each second, the calls that reached the dependency and the calls refused.
	PerSecond [][2]int64
}

type completion struct {
	at     int64
	seq    int64
	ok     bool
	settle func(int64, bool)
}

type completions []completion

func (q completions) Len() int { return len(q) }
func (q completions) Less(i, j int) bool {
	return q[i].at < q[j].at || q[i].at == q[j].at && q[i].seq < q[j].seq
}
func (q completions) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *completions) Push(x any)   { *q = append(*q, x.(completion)) }
func (q *completions) Pop() any {
	old := *q
	c := old[len(old)-1]
	*q = old[:len(old)-1]
	return c
}

// RunFaults offers sc's calls, evenly spaced with a seeded jitter of up to half the spacing,
// through g, settling each call when the dependency answers it. Each fault of 10 s or more is
// lengthened by a seeded draw of up to 1 s, so that where a recovery falls between a breaker's
// probes varies with the seed as it does between real runs.
func RunFaults(sc FaultScenario, g Gate, seed uint64) FaultStats {
	r := rand.New(rand.NewPCG(seed, 0xfa17))
	faults := append([]Fault(nil), sc.Faults...)
	var ends []int64
	var total int64
	for i, f := range faults {
		if f.Down && f.Length >= 10*time.Second {
			faults[i].Length += time.Duration(r.Float64() * float64(time.Second))
		}
		total += int64(faults[i].Length)
		ends = append(ends, total)
	}
	sc.Faults = faults
	lastFaultEnd := int64(0)
	for i, f := range sc.Faults {
		if f.Down {
			lastFaultEnd = ends[i]
		}
	}
	var s FaultStats
	s.Last = -1
	s.PerSecond = make([][2]int64, (total+int64(time.Second)-1)/int64(time.Second))
	var downOffered, downReached, downAll, downAllReached, downServed, upOffered, upRefused, afterOffered, afterRefused int64
	var q completions
	var seq int64
	spacing := 1e9 / sc.Rate
	seenFault := false
	phase := 0
	for i := int64(0); ; i++ {
		now := int64(float64(i)*spacing + (r.Float64()-0.5)*spacing/2)
		now = max(now, 0)
		if now >= total {
			break
		}
		for len(q) > 0 && q[0].at <= now {
			c := heap.Pop(&q).(completion)
			c.settle(c.at, c.ok)
			if c.ok && c.at >= ends[0] { // served: count by the instant it answered
				s.Served++
				if f := faultAt(sc.Faults, ends, c.at); f.Down {
					downServed++
				}
			}
		}
		for phase < len(ends)-1 && now >= ends[phase] {
			phase++
		}
		f := sc.Faults[phase]
		start := int64(0)
		if phase > 0 {
			start = ends[phase-1]
		}
		seenFault = seenFault || f.Down
		sec := now / int64(time.Second)
		s.Offered++
		if f.Down {
			downAll++
			if now-start >= int64(2*time.Second) {
				downOffered++
			}
		} else if seenFault {
			upOffered++
		}
		inAfter := lastFaultEnd > 0 && now >= lastFaultEnd && now < lastFaultEnd+int64(10*time.Second)
		if inAfter {
			afterOffered++
		}
		settle, ok := g.Allow(now, r.Float64())
		if !ok {
			s.Refused++
			s.PerSecond[sec][1]++
			if !f.Down && seenFault {
				upRefused++
			}
			if inAfter {
				afterRefused++
			}
			if lastFaultEnd > 0 && now >= lastFaultEnd {
				s.Last = time.Duration(now - lastFaultEnd)
			}
			continue
		}
		s.Reached++
		s.PerSecond[sec][0]++
		if f.Down {
			downAllReached++
		}
		if f.Down && now-start >= int64(2*time.Second) {
			downReached++
		}
		lat, good := f.Latency, r.Float64() >= f.Fails
		if f.Slow > 0 && r.Float64() < f.Slow {
			lat, good = f.Timeout, false
		}
		seq++
		heap.Push(&q, completion{at: now + int64(lat), seq: seq, ok: good, settle: settle})
	}
	share := func(n, d int64) float64 { return float64(n) / float64(max(d, 1)) }
	s.DownReached = share(downReached, downOffered)
	s.DownAll = share(downAllReached, downAll)
	s.DownServed = share(downServed, downAll)
	s.UpRefused = share(upRefused, upOffered)
	s.After = share(afterRefused, afterOffered)
	return s
}

func faultAt(faults []Fault, ends []int64, at int64) Fault {
	for i, e := range ends {
		if at < e {
			return faults[i]
		}
	}
	return faults[len(faults)-1]
}

// FaultClient is a breaker a fault run compares.
type FaultClient struct {
	Name string
	New  func() Gate
}

// FaultClients are the breakers every fault scenario runs: ward's default policy, go-zero's exact
// numbers, go-zero's numbers with a 1 s recovery, and the gobreaker model with its default 60 s
// open timeout and with 5 s.
func FaultClients() []FaultClient {
	return []FaultClient{
		{"ward default", func() Gate { return CoreGate(breaker.DefaultPolicy()) }},
		{"go-zero", func() Gate { return CoreGate(breaker.GoZeroPolicy()) }},
		{"ward recovery", func() Gate { return CoreGate(breaker.RecoveryPolicy()) }},
		{"gobreaker 60s", func() Gate { return StateMachine(60 * time.Second) }},
		{"gobreaker 5s", func() Gate { return StateMachine(5 * time.Second) }},
	}
}

// WriteFaults runs every fault scenario for every client with seed and prints a table per
// scenario.
func WriteFaults(w io.Writer, seed uint64) {
	fmt.Fprintf(w, "\nclient-side faults: 100 calls/s, open loop, %.0f%% background errors while healthy; seed %d\n", 100*Background, seed)
	fmt.Fprintf(w, "reached: share of offered calls reaching the down dependency after its first 2 s; served: share served while faulty;\n")
	fmt.Fprintf(w, "refused up: share refused while healthy after the first fault; after: refused in the 10 s after the last fault; last: last refusal after it\n")
	for _, sc := range FaultScenarios() {
		fmt.Fprintf(w, "\n%s: %s\n", sc.Name, sc.About)
		fmt.Fprintf(w, "%-14s %8s %8s %10s %7s %7s\n", "client", "reached", "served", "refused up", "after", "last")
		for _, c := range FaultClients() {
			s := RunFaults(sc, c.New(), seed)
			last := "-"
			if s.Last >= 0 {
				last = secs(s.Last)
			}
			fmt.Fprintf(w, "%-14s %7.1f%% %7.1f%% %9.1f%% %6.1f%% %7s\n", c.Name, 100*s.DownReached, 100*s.DownServed, 100*s.UpRefused, 100*s.After, last)
		}
	}
}
