// Package faults is the client-side fault harness: a dependency on loopback that is down, failing,
// partly failing, slow or flapping on a schedule (cmd/dependency), a driver that calls it
// open-loop through each client side by side (cmd/driver), and the arithmetic both share: the
// schedule, the dependency's answers, the accounting of what each client did, and the report.
//
// Everything here is pure (time and draws are arguments) so the tests replay it exactly; the two
// commands read the clock and draw.
package faults

import (
	"fmt"
	"net/http"
	"time"
)

// Mode is what the dependency does at an instant.
type Mode uint8

const (
	// Healthy answers at normal latency; Background of its calls answer 503.
	Healthy Mode = iota
	// Down refuses connections: the listener is closed and open connections are dropped.
	Down
	// Failing answers every call 503 with Retry-After: 1.
	Failing
	// Partial answers a Scenario's Fraction of calls 503 at normal latency, the rest 200.
	Partial
	// Slow answers a Scenario's Fraction of calls after SlowDelay, past the client's
	// AttemptTimeout; the rest as Healthy does.
	Slow
)

func (m Mode) String() string {
	switch m {
	case Healthy:
		return "healthy"
	case Down:
		return "down"
	case Failing:
		return "failing"
	case Partial:
		return "partial"
	case Slow:
		return "slow"
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// The dependency's and the clients' constants, the same in every scenario.
const (
	// Background is the share of a healthy dependency's calls that answer 503 (no Retry-After).
	Background = 0.02
	// Latency is a call's normal service time.
	Latency = 5 * time.Millisecond
	// SlowDelay is a slow call's service time.
	SlowDelay = time.Second
	// AttemptTimeout is how long a client waits for one attempt's response headers
	// (http.Transport.ResponseHeaderTimeout): a slow call times out.
	AttemptTimeout = 250 * time.Millisecond
	// CallTimeout bounds a whole call, retries and their waits included (http.Client.Timeout).
	CallTimeout = 3 * time.Second
	// Rate is the calls each client offers a second, open loop.
	Rate = 100
	// Settle is the start of an outage left out of "calls reaching the dead dependency": the
	// time any breaker needs to see it.
	Settle = 2 * time.Second
	// AfterWindow is the stretch after recovery whose refusals are counted.
	AfterWindow = 10 * time.Second
)

// Scenario is one fault on a schedule: Warm healthy, then Fault for Outage, then healthy for
// After. With Flap > 0 the fault alternates: Flap of Fault (Down), Flap healthy, and so on.
type Scenario struct {
	Name     string
	Fault    Mode
	Fraction float64 // Partial, Slow: the share of calls affected
	Flap     time.Duration
	Warm     time.Duration
	Outage   time.Duration
	After    time.Duration
}

// Scenarios returns the six fault scenarios. The outages (down, failing) keep 25 s after recovery
// so a breaker that refuses for up to 20 s is still measured; the others keep 10 s. Short
// scales every stretch down for a smoke run (2 s warm, 6 s fault, 4 s after).
func Scenarios(short bool) []Scenario {
	warm, outage, long, after := 5*time.Second, 20*time.Second, 25*time.Second, 10*time.Second
	if short {
		warm, outage, long, after = 2*time.Second, 6*time.Second, 4*time.Second, 4*time.Second
	}
	return []Scenario{
		{Name: "down", Fault: Down, Warm: warm, Outage: outage, After: long},
		{Name: "failing", Fault: Failing, Warm: warm, Outage: outage, After: long},
		{Name: "partial30", Fault: Partial, Fraction: 0.3, Warm: warm, Outage: outage, After: after},
		{Name: "partial60", Fault: Partial, Fraction: 0.6, Warm: warm, Outage: outage, After: after},
		{Name: "slow", Fault: Slow, Fraction: 0.5, Warm: warm, Outage: outage, After: after},
		{Name: "flapping", Fault: Down, Flap: 2 * time.Second, Warm: warm, Outage: outage, After: after},
	}
}

// Find returns the scenario named name among ss.
func Find(ss []Scenario, name string) (Scenario, bool) {
	for _, s := range ss {
		if s.Name == name {
			return s, true
		}
	}
	return Scenario{}, false
}

// Total is the scenario's length.
func (s Scenario) Total() time.Duration { return s.Warm + s.Outage + s.After }

// Recovery is the instant the dependency is healthy for good.
func (s Scenario) Recovery() time.Duration { return s.Warm + s.Outage }

// ModeAt returns what the dependency does at d from the scenario's start. Before the start and
// after the end it is healthy.
func (s Scenario) ModeAt(d time.Duration) Mode {
	if d < s.Warm || d >= s.Recovery() {
		return Healthy
	}
	if s.Flap > 0 && (d-s.Warm)/s.Flap%2 == 1 {
		return Healthy
	}
	return s.Fault
}

// Changes returns the instants at which ModeAt changes, in order.
func (s Scenario) Changes() []time.Duration {
	if s.Outage <= 0 {
		return nil
	}
	if s.Flap <= 0 {
		return []time.Duration{s.Warm, s.Recovery()}
	}
	var out []time.Duration
	for d := s.Warm; d < s.Recovery(); d += s.Flap {
		out = append(out, d)
	}
	if (s.Outage+s.Flap-1)/s.Flap%2 == 1 { // an odd count of stretches ends on the fault
		out = append(out, s.Recovery())
	}
	return out
}

// Answer is how the dependency answers one call.
type Answer struct {
	Status     int           // 0: drop the connection (the dependency is down)
	RetryAfter string        // the Retry-After header, "" for none
	Delay      time.Duration // service time before answering
}

// Answer returns the answer to a call made in mode m, given roll, a draw in [0, 1). A roll
// outside [0, 1) or NaN takes the branch a roll of 0.99 would: never a failure drawn by
// Background, Fraction or both.
func (s Scenario) Answer(m Mode, roll float64) Answer {
	if !(roll >= 0 && roll < 1) {
		roll = 0.99
	}
	ok := Answer{Status: http.StatusOK, Delay: Latency}
	failed := Answer{Status: http.StatusServiceUnavailable, Delay: Latency}
	switch m {
	case Down:
		return Answer{}
	case Failing:
		failed.RetryAfter = "1"
		return failed
	case Partial:
		if roll < s.Fraction {
			return failed
		}
		return ok
	case Slow:
		if roll < s.Fraction {
			return Answer{Status: http.StatusOK, Delay: SlowDelay}
		}
		// the rest behave as a healthy dependency's, drawn from the rest of the roll
		roll = (roll - s.Fraction) / (1 - s.Fraction)
	}
	if roll < Background {
		return failed
	}
	return ok
}
