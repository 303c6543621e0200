package sim

import (
	"testing"
	"time"

	"github.com/wardgo/ward/breaker"
)

// TestSimAgreesWithHarness: the simulator's outage, with the 2% background error rate a healthy
// dependency has, gives go-zero's numbers and RecoveryPolicy the figures the real client measured
// over loopback (an http.Client on wardhttp.Transport, 100 calls/s, 20 s of connection refused):
// go-zero's numbers sent 32% of the outage's calls to the dead dependency, refused 73–78% in the
// 10 s after recovery and last refused 18–20 s after; RecoveryPolicy refused 22–31% and last 8–10
// s after. The means over ten seeds must lie within five points (a second for the last refusal)
// of those ranges. Without background errors RecoveryPolicy's figures fall far below the real
// ones (its recovery waits for buckets with no failure, which a 2% error rate makes rare).
func TestSimAgreesWithHarness(t *testing.T) {
	for _, c := range []struct {
		name           string
		p              breaker.Policy
		dead           [2]float64
		after          [2]float64
		clear          [2]time.Duration
		withoutErrorLo float64 // with no background errors, RecoveryPolicy refuses less than this
	}{
		{"go-zero", breaker.GoZeroPolicy(), [2]float64{0.27, 0.37}, [2]float64{0.68, 0.83}, [2]time.Duration{17 * time.Second, 21 * time.Second}, 0},
		{"recovery", breaker.RecoveryPolicy(), [2]float64{0.27, 0.37}, [2]float64{0.17, 0.36}, [2]time.Duration{7 * time.Second, 11 * time.Second}, 0.1},
	} {
		var dead, after, clear, clean float64
		const seeds = 10
		for seed := uint64(1); seed <= seeds; seed++ {
			s := BreakerRecovery(c.p, seed)
			dead += s.Dead / seeds
			after += s.RefusedAfter / seeds
			clear += float64(s.Clear) / seeds
			sc := FaultScenarios()[0]
			for i := range sc.Faults {
				if !sc.Faults[i].Down {
					sc.Faults[i].Fails = 0
				}
			}
			clean += RunFaults(sc, CoreGate(c.p), seed).After / seeds
		}
		t.Logf("%s: %.1f%% of the outage's calls reached it; %.1f%% refused in the 10 s after; last refusal %v after (%.1f%% refused after without background errors)",
			c.name, 100*dead, 100*after, time.Duration(clear), 100*clean)
		if dead < c.dead[0] || dead > c.dead[1] {
			t.Errorf("%s: %.1f%% reached the dead dependency, want within [%.0f%%, %.0f%%]", c.name, 100*dead, 100*c.dead[0], 100*c.dead[1])
		}
		if after < c.after[0] || after > c.after[1] {
			t.Errorf("%s: %.1f%% refused after recovery, want within [%.0f%%, %.0f%%]", c.name, 100*after, 100*c.after[0], 100*c.after[1])
		}
		if d := time.Duration(clear); d < c.clear[0] || d > c.clear[1] {
			t.Errorf("%s: last refusal %v after recovery, want within [%v, %v]", c.name, d, c.clear[0], c.clear[1])
		}
		if c.withoutErrorLo > 0 && clean >= c.withoutErrorLo {
			t.Errorf("%s: %.1f%% refused after recovery without background errors, want under %.0f%%", c.name, 100*clean, 100*c.withoutErrorLo)
		}
	}
}
