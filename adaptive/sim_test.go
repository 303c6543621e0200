package adaptive

import (
	"container/heap"
	"testing"
	"time"

	"github.com/wardgo/ward/internal/testkit"
)

// A closed loop of clients against a backend whose response time is base while at most capacity
// calls are in flight and grows in proportion beyond (base × inflight / capacity), simulated in
// event time with the limiter's clock injected.

type event struct {
	at     int64
	client int
	lease  Lease
	admit  bool // a completion (true) or a retry after a refusal (false)
	drop   bool
}

type events []event

func (e events) Len() int { return len(e) }
func (e events) Less(i, j int) bool {
	return e[i].at < e[j].at || (e[i].at == e[j].at && e[i].client < e[j].client)
}
func (e events) Swap(i, j int) { e[i], e[j] = e[j], e[i] }
func (e *events) Push(x any)   { *e = append(*e, x.(event)) }
func (e *events) Pop() any     { old := *e; x := old[len(old)-1]; *e = old[:len(old)-1]; return x }

type phase struct {
	capacity int
	length   time.Duration
}

type phaseResult struct {
	limit          int     // at the end of the phase
	enterWindows   int64   // windows from the phase's start until the limit first was inside [C, 2C]; -1 never
	refusedShare   float64 // of attempts
	windowsInPhase int64
}

// simulate runs the loop and returns one result per phase. dropOver > 0 makes a call slower than
// dropOver × base a drop (a timeout the client imposes). onWindow, if set, sees each closed window.
func simulate(t *testing.T, l *Limiter, clk *manual, clients int, base time.Duration, dropOver float64, phases []phase,
	onWindow func(before, after int, dropped bool)) []phaseResult {
	t.Helper()
	var q events
	for c := 0; c < clients; c++ {
		heap.Push(&q, event{at: clk.now + int64(c), client: c})
	}
	retry := base / 2 // a refused client comes back after half a response time
	backend := 0
	var out []phaseResult
	windowDropped := false
	for _, ph := range phases {
		end := clk.now + int64(ph.length)
		startWindows := l.Snapshot().Windows
		enter := int64(-1)
		var attempts, refused int64
		for q.Len() > 0 && q[0].at < end {
			ev := heap.Pop(&q).(event)
			clk.now = ev.at
			if ev.admit { // a completion
				backend--
				before, w := l.Limit(), l.Snapshot().Windows
				if ev.drop {
					windowDropped = true
					ev.lease.Fail()
				} else {
					ev.lease.Pass()
				}
				if nw := l.Snapshot().Windows; nw != w {
					if onWindow != nil {
						onWindow(before, l.Limit(), windowDropped)
					}
					windowDropped = false
					if lim := l.Limit(); enter < 0 && lim >= ph.capacity && lim <= 2*ph.capacity {
						enter = nw - startWindows
					}
				}
			}
			attempts++
			lease, ok := l.Acquire()
			if !ok {
				refused++
				heap.Push(&q, event{at: clk.now + int64(retry), client: ev.client})
				continue
			}
			backend++
			rtt := float64(base) * max(1, float64(backend)/float64(ph.capacity))
			heap.Push(&q, event{at: clk.now + int64(rtt), client: ev.client, lease: lease, admit: true,
				drop: dropOver > 0 && rtt > dropOver*float64(base)})
		}
		clk.now = end
		out = append(out, phaseResult{
			limit:          l.Limit(),
			enterWindows:   enter,
			refusedShare:   float64(refused) / float64(max(attempts, 1)),
			windowsInPhase: l.Snapshot().Windows - startWindows,
		})
	}
	return out
}

// TestSimGradientFindsCapacity: 300 clients against a backend that queues beyond C = 80, then 40,
// then 80 again, 100 s a phase. With the Gradient preset the limit enters [C, 2C] after every
// change (the preset tolerates 1.5× latency; the test reports how many windows it took) and ends
// every phase inside it. The third phase shows Gradient2 learning a new normal: its long average
// has absorbed the queueing of the second phase, so on recovery it climbs well past its first
// phase's level at 0.8 a window (156 at the end here, against 99 in the first phase; phases of
// 120 s end at 173, over 2C: see the package doc).
func TestSimGradientFindsCapacity(t *testing.T) {
	testkit.SkipRace(t)
	clk := &manual{}
	rule, _ := NewGradient(DefaultGradient())
	// every call timed: which calls a sampled limiter times depends on the P a goroutine runs on,
	// and this test must replay exactly
	l, _ := New(rule, WithClock(clk.read), WithSampleEvery(1))
	phases := []phase{{80, 100 * time.Second}, {40, 100 * time.Second}, {80, 100 * time.Second}}
	res := simulate(t, l, clk, 300, 50*time.Millisecond, 0, phases, nil)
	for i, r := range res {
		c := phases[i].capacity
		t.Logf("phase %d (C=%d): entered [C, 2C] after %d windows, limit %d at the end of %d windows, %.0f%% of attempts refused",
			i, c, r.enterWindows, r.limit, r.windowsInPhase, 100*r.refusedShare)
		if r.enterWindows < 0 {
			t.Errorf("phase %d: the limit never entered [%d, %d]", i, c, 2*c)
		}
		if r.limit < c || r.limit > 2*c {
			t.Errorf("phase %d: limit %d at the end, want within [%d, %d]", i, r.limit, c, 2*c)
		}
	}
}

// TestSimAIMDBacksOffOnDrops: calls slower than 1.5 × base time out (drops). AIMD multiplies the limit
// by its backoff on every window with a drop, and climbs back one a window when drops stop.
func TestSimAIMDBacksOffOnDrops(t *testing.T) {
	testkit.SkipRace(t)
	clk := &manual{}
	p := DefaultAIMD()
	p.Min = 1
	rule, _ := NewAIMD(p)
	l, _ := New(rule, WithClock(clk.read), WithSampleEvery(1))
	var cuts, climbs, windows int
	check := func(before, after int, dropped bool) {
		windows++
		switch {
		case dropped:
			cuts++
			if want := max(p.Min, int(float64(before)*p.Backoff)); after != want {
				t.Errorf("window %d with a drop: limit %d → %d, want %d", windows, before, after, want)
			}
		case after == before+1:
			climbs++
		case after != before:
			t.Errorf("window %d without a drop: limit %d → %d", windows, before, after)
		}
	}
	phases := []phase{{80, 200 * time.Second}, {40, 200 * time.Second}}
	res := simulate(t, l, clk, 300, 50*time.Millisecond, 1.5, phases, check)
	t.Logf("%d windows: %d cut by a drop, %d climbed; limits at the phase ends %d, %d", windows, cuts, climbs, res[0].limit, res[1].limit)
	if cuts == 0 || climbs == 0 {
		t.Fatalf("AIMD never cut (%d) or never climbed (%d)", cuts, climbs)
	}
	for i, r := range res {
		if c := phases[i].capacity; r.limit > 3*c/2+1 {
			t.Errorf("phase %d: limit %d, over the 1.5 × C = %d at which calls time out", i, r.limit, 3*c/2)
		}
	}
}
