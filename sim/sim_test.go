package sim

import (
	"bytes"
	"testing"
	"time"

	"github.com/wardgo/ward/internal/testkit"
)

// TestSimCapacityGradient: Gradient's limit ends each phase between the backend's queueing point
// and twice it, and once settled p99 stays within 2× the unloaded response time.
func TestSimCapacityGradient(t *testing.T) {
	testkit.SkipRace(t)
	sc := Scenarios()[0]
	var clock int64
	rule := Rules(80)[2]
	run := Closed(Ward(rule.New(), &clock), &clock, sc.Clients, sc.Timeout, sc.Phases, 1)
	unloaded := time.Duration(float64(sc.Phases[0].Base) * 1.1)
	for i, p := range run.Phases {
		t.Logf("phase %d C=%d: limit %d, settled in %v, goodput %.0f%%, p99 late %v", i+1, p.Capacity, p.Limit, p.Settle, 100*p.Goodput, p.P99Late)
		if p.Limit < p.Capacity || p.Limit > 2*p.Capacity {
			t.Errorf("phase %d: limit %d, want within [%d, %d]", i+1, p.Limit, p.Capacity, 2*p.Capacity)
		}
		if p.P99Late > 2*unloaded {
			t.Errorf("phase %d: settled p99 %v, over 2 × the unloaded %v", i+1, p.P99Late, unloaded)
		}
	}
}

// TestSimOutage: the breaker's refusal ratio returns to 0 within 11 s of recovery, and a backend
// failing 20% of calls is never throttled.
func TestSimOutage(t *testing.T) {
	o := Outage(1)
	t.Logf("refused while down %.0f%%, ratio 0 again %v after recovery", 100*o.RefusedDown, o.Recovery)
	if o.Recovery < 0 || o.Recovery > 11*time.Second {
		t.Errorf("ratio back to 0 after %v, want within 11s", o.Recovery)
	}
	if o.RefusedDown < 0.5 {
		t.Errorf("only %.0f%% refused while the backend was down", 100*o.RefusedDown)
	}
	if o.HealthyRatio != 0 {
		t.Errorf("a backend failing 20%% of calls throttled at %v", o.HealthyRatio)
	}
}

// TestSimOverload: under 3× offered load the shedder keeps admitted in flight within 1.2× of the
// capacity shown and goodput at 90% of capacity or more; so does Gradient's goodput.
func TestSimOverload(t *testing.T) {
	testkit.SkipRace(t)
	sh := OverloadShed(1)
	t.Logf("shedder: goodput %.0f%%, in flight %.2f× capacity shown, refused %.0f%%", 100*sh.Goodput, sh.InFlight, 100*sh.Refused)
	if sh.InFlight > 1.2 || sh.InFlight == 0 {
		t.Errorf("shedder: in flight %.2f× the capacity shown, want <= 1.2×", sh.InFlight)
	}
	if sh.Goodput < 0.9 {
		t.Errorf("shedder: goodput %.0f%% of capacity, want >= 90%%", 100*sh.Goodput)
	}
	var clock int64
	g := OverloadLimit(Ward(Rules(50)[2].New(), &clock), &clock, 1)
	t.Logf("gradient: goodput %.0f%%, mean in flight %.1f, refused %.0f%%", 100*g.Goodput, g.FlyingMean, 100*g.Refused)
	if g.Goodput < 0.9 {
		t.Errorf("gradient: goodput %.0f%% of capacity under 3× load, want >= 90%%", 100*g.Goodput)
	}
}

func TestBursts(t *testing.T) {
	for i, row := range Bursts(3) {
		if row != [3]int{21, 20, 40} {
			t.Fatalf("burst %d: %v, want [21 20 40]", i, row)
		}
	}
}

// TestSimReportIsDeterministic: the same seed gives the same numbers, run to run.
func TestSimReportIsDeterministic(t *testing.T) {
	testkit.SkipRace(t)
	sc := Scenarios()[1]
	runs := map[string]Run{}
	for i := 0; i < 2; i++ {
		var clock int64
		runs[string(rune('a'+i))] = Closed(Ward(Rules(80)[1].New(), &clock), &clock, sc.Clients, sc.Timeout, sc.Phases, 7)
	}
	var a, b bytes.Buffer
	WriteLimiterTable(&a, sc, map[string]Run{"x": runs["a"]}, []string{"x"})
	WriteLimiterTable(&b, sc, map[string]Run{"x": runs["b"]}, []string{"x"})
	if a.String() != b.String() || a.Len() == 0 {
		t.Fatal("two runs with one seed gave different tables")
	}
	var svg bytes.Buffer
	SVG(&svg, sc, runs, []string{"a"})
	if !bytes.Contains(svg.Bytes(), []byte("<polyline")) {
		t.Fatal("the SVG has no line")
	}
}

// runsOf runs one rule through every limiter scenario, keyed by scenario name.
func runsOf(rule Rule) map[string]Run {
	out := map[string]Run{}
	for _, sc := range Scenarios() {
		var clock int64
		out[sc.Name] = Closed(Ward(rule.New(), &clock), &clock, sc.Clients, sc.Timeout, sc.Phases, 1)
	}
	return out
}

// TestSimKneeBars: the Knee preset meets every bar of a limit that settles (cold start within
// 10 s at C = 80, a tripled service time for 30 s costing at most 10 points of goodput and
// recovered within 10 s of its end, the limit within 1.3 × C under 90 s of 4× overload, settled
// p99 within 2 × unloaded everywhere, an 8-slot backend protected), and beats Gradient on each.
func TestSimKneeBars(t *testing.T) {
	testkit.SkipRace(t)
	byName := map[string]Rule{}
	for _, r := range Rules(1) {
		byName[r.Name] = r
	}
	runs := runsOf(byName["Knee"])
	knee, grad := Scores(runs), Scores(runsOf(byName["Gradient"]))
	t.Logf("Knee %+v", knee)
	t.Logf("Gradient %+v", grad)
	names := []string{"cold settle <= 10s", "spike goodput >= 90%", "spike recovery <= 10s", "overload peak <= 1.3C", "settled p99 <= 2x unloaded"}
	for i, ok := range knee.Bars() {
		if !ok {
			t.Errorf("Knee misses the bar %q", names[i])
		}
	}
	if cost := runs["spike"].Phases[0].Goodput - knee.SpikeGoodput; cost > 0.10 {
		t.Errorf("the spike costs Knee %.0f points of goodput, want <= 10", 100*cost)
	}
	if knee.SmallP99 > 2 || knee.SmallGoodput < 0.9 {
		t.Errorf("8 slots: Knee's settled p99 %.2f× unloaded, goodput %.0f%%; want <= 2×, >= 90%%", knee.SmallP99, 100*knee.SmallGoodput)
	}
	beats := []struct {
		what       string
		knee, grad float64
		lower      bool
	}{
		{"cold settle", float64(knee.ColdSettle), float64(grad.ColdSettle), true},
		{"cold goodput", knee.ColdGoodput, grad.ColdGoodput, false},
		{"spike goodput", knee.SpikeGoodput, grad.SpikeGoodput, false},
		{"spike recovery", float64(knee.SpikeRecover), float64(grad.SpikeRecover), true},
		{"overload peak", knee.Peak, grad.Peak, true},
		{"settled p99", knee.P99, grad.P99, true},
		{"small p99", knee.SmallP99, grad.SmallP99, true},
		{"small goodput", knee.SmallGoodput, grad.SmallGoodput, false},
	}
	for _, b := range beats {
		gradNever := b.lower && b.grad < 0 // Gradient never settled: any settle beats it
		if !gradNever && ((b.lower && b.knee >= b.grad) || (!b.lower && b.knee <= b.grad)) {
			t.Errorf("%s: Knee %v does not beat Gradient %v", b.what, b.knee, b.grad)
		}
	}
}
