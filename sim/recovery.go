package sim

import (
	"time"

	"github.com/wardgo/ward/breaker"
)

// RecoveryStats is what a breaker did through an outage of its backend.
type RecoveryStats struct {
	Dead         float64 // share of the calls offered during the outage that reached the dead backend
	RefusedAfter float64 // share of the calls offered in the 10 s after the backend recovered that were refused
	// Clear is how long after the recovery the breaker last refused a call; -1: it never refused one.
	Clear time.Duration
}

// BreakerRecovery runs the "down" fault scenario (100 calls a second, 2% background errors, the
// backend refusing connections for 20 s after 10 s of health, then 20 s of health again) through
// a breaker core built with p: the shape of the client-side loopback harness.
func BreakerRecovery(p breaker.Policy, seed uint64) RecoveryStats {
	s := RunFaults(FaultScenarios()[0], CoreGate(p), seed)
	return RecoveryStats{Dead: s.DownAll, RefusedAfter: s.After, Clear: s.Last}
}
