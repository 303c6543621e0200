// Package racetest lets a long, single-goroutine simulation skip itself in a -race build, where
// it would take ten times as long and has nothing to find; `make test` runs the TestSim tests a
// second time without -race. Imported by tests only.
package racetest

import (
	"testing"

	"github.com/wardgo/ward/internal/stripe"
)

// Skip skips t in a -race build.
func Skip(t testing.TB) {
	t.Helper()
	if stripe.Race {
		t.Skip("single-goroutine simulation: run without -race (make test does)")
	}
}
