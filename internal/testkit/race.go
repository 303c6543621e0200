package testkit

import (
	"testing"

	"github.com/wardgo/ward/internal/stripe"
)

// SkipRace skips a long, single-goroutine simulation in a -race build, where it would take ten
// times as long and has nothing to find; `make test` runs the TestSim tests a second time
// without -race.
func SkipRace(t testing.TB) {
	t.Helper()
	if stripe.Race {
		t.Skip("single-goroutine simulation: run without -race (make test does)")
	}
}
