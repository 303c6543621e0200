package sim

import (
	"math/rand/v2"
	"time"

	"github.com/wardgo/ward/breaker"
)

// RecoveryStats is what a breaker did through an outage of its backend.
type RecoveryStats struct {
	Dead         int64   // calls let through to the dead backend during the outage
	DeadOffered  int64   // calls offered during the outage
	RefusedAfter float64 // share of the calls offered in the 10 s after the backend recovered that were refused
	Clear        time.Duration
	// Clear is how long after the recovery the breaker last refused a call; -1: it never refused one.
}

// BreakerRecovery offers Poisson calls at 200 a second for 50 s to a backend that answers every
// call at once, except from 20 s to 30 s, when it fails every call (dead), through a breaker
// core built with p.
func BreakerRecovery(p breaker.Policy, seed uint64) RecoveryStats {
	const rate = 200.0
	down, up, end := int64(20*time.Second), int64(30*time.Second), int64(50*time.Second)
	c, err := breaker.NewCore(p, 0)
	if err != nil {
		panic(err)
	}
	r := rand.New(rand.NewPCG(seed, 0xb4ea))
	var s RecoveryStats
	var after, refusedAfter int64
	last := int64(-1)
	for now := int64(0); now < end; now += int64(r.ExpFloat64() / rate * 1e9) {
		dead := now >= down && now < up
		if dead {
			s.DeadOffered++
		}
		inAfter := now >= up && now < up+int64(10*time.Second)
		if inAfter {
			after++
		}
		if !c.Allow(now, r.Float64()) {
			if inAfter {
				refusedAfter++
			}
			if now >= up {
				last = now
			}
			continue
		}
		if dead {
			s.Dead++
			c.Record(now, breaker.Failure)
		} else {
			c.Record(now, breaker.Success)
		}
	}
	s.RefusedAfter = float64(refusedAfter) / float64(max(after, 1))
	s.Clear = -1
	if last >= 0 {
		s.Clear = time.Duration(last - up)
	}
	return s
}
