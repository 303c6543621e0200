package breaker

import (
	"testing"
	"time"

	"github.com/wardgo/ward/breaker"
)

// TestAllocs: Allow and Pass or Fail, and a refusal, allocate nothing in a package shaped as a
// user's, with either policy.
func TestAllocs(t *testing.T) {
	none := func() {}
	for _, p := range []breaker.Policy{breaker.DefaultPolicy(), breaker.GoZeroPolicy()} {
		call, err := Breaker(p)
		if err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(1000, func() {
			if !call(none, 0) {
				t.Fatal("a healthy breaker refused")
			}
		}); n != 0 {
			t.Errorf("admitted: %v allocations a call, want 0", n)
		}
		// the ratio is cached and refreshed on the clock: fail until ten refusals in a row, for
		// at most 10 s of calls, then count the refusals' allocations
		for run, start := 0, time.Now(); run < 10 && time.Since(start) < 10*time.Second; {
			if call(none, 1) {
				run = 0
			} else {
				run++
			}
		}
		refused := 0
		if n := testing.AllocsPerRun(1000, func() {
			if !call(none, 1) {
				refused++
			}
		}); n != 0 {
			t.Errorf("failing: %v allocations a call, want 0", n)
		}
		if refused < 900 {
			t.Fatalf("%d of 1001 refused on a failing backend: the refusal path was not run", refused)
		}
	}
}
