package sim

import (
	"testing"

	"github.com/wardgo/ward/breaker"
)

// TestBreakerRecovery: through a 10 s outage, the recovery mode (breaker.RecoveryPolicy) refuses
// at most half the share of calls the preset refuses in the 10 s after the backend recovered, and
// lets no more calls through to the dead backend.
func TestBreakerRecovery(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		sre := BreakerRecovery(breaker.DefaultPolicy(), seed)
		rec := BreakerRecovery(breaker.RecoveryPolicy(), seed)
		t.Logf("seed %d: preset:   %d of %d calls to the dead backend; %.1f%% refused in the 10 s after; last refusal %v after", seed, sre.Dead, sre.DeadOffered, 100*sre.RefusedAfter, sre.Clear)
		t.Logf("seed %d: recovery: %d of %d calls to the dead backend; %.1f%% refused in the 10 s after; last refusal %v after", seed, rec.Dead, rec.DeadOffered, 100*rec.RefusedAfter, rec.Clear)
		if rec.Dead > sre.Dead {
			t.Errorf("seed %d: the recovery mode sent %d calls to the dead backend, the preset %d", seed, rec.Dead, sre.Dead)
		}
		if rec.RefusedAfter > sre.RefusedAfter/2 {
			t.Errorf("seed %d: the recovery mode refused %.1f%% after recovery, the preset %.1f%%: want at most half", seed, 100*rec.RefusedAfter, 100*sre.RefusedAfter)
		}
	}
}
