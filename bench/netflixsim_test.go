package bench

import (
	"testing"

	"github.com/wardgo/ward/sim"
)

// TestNetflixSim runs the port's algorithms through the capacity scenario: the simulator drives
// them (their limits move, samples reach them), and the port's default sample threshold of 1e8 ns
// freezes its limit at 50 ms service times.
func TestNetflixSim(t *testing.T) {
	sc := sim.Scenarios()[0]
	rules := NetflixRules()
	runs := map[string]sim.Run{}
	for _, r := range rules {
		var clock int64
		runs[r.Name] = sim.Closed(r.New(), &clock, sc.Clients, sc.Timeout, sc.Phases, 1)
	}
	for name, run := range runs {
		t.Logf("%s: limits at phase ends %d %d %d", name, run.Phases[0].Limit, run.Phases[1].Limit, run.Phases[2].Limit)
	}
	if g := runs["netflix-go-gradient2"]; g.Phases[0].Limit == 20 {
		t.Error("the port's Gradient2 never moved from its initial 20")
	}
	if d := runs["netflix-go-gradient2-default"]; d.Phases[0].Limit != 20 || d.Phases[2].Limit != 20 {
		t.Errorf("with the default threshold the limit moved (%d, %d): the 100 ms threshold no longer discards 50 ms samples", d.Phases[0].Limit, d.Phases[2].Limit)
	}
}
