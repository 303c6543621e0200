package faults

import (
	"math"
	"net/http"
	"slices"
	"testing"
	"time"
)

const s = time.Second

func scenario(t *testing.T, name string) Scenario {
	t.Helper()
	sc, ok := Find(Scenarios(false), name)
	if !ok {
		t.Fatalf("no scenario %q", name)
	}
	return sc
}

// TestModeAt: the schedule at the boundaries of every stretch.
func TestModeAt(t *testing.T) {
	for _, tc := range []struct {
		scenario string
		at       time.Duration
		want     Mode
	}{
		{"down", -s, Healthy},
		{"down", 0, Healthy},
		{"down", 5*s - 1, Healthy},
		{"down", 5 * s, Down},
		{"down", 25*s - 1, Down},
		{"down", 25 * s, Healthy},
		{"down", 50 * s, Healthy},
		{"failing", 5 * s, Failing},
		{"partial30", 12 * s, Partial},
		{"slow", 24 * s, Slow},
		{"flapping", 5 * s, Down},
		{"flapping", 7*s - 1, Down},
		{"flapping", 7 * s, Healthy},
		{"flapping", 9*s - 1, Healthy},
		{"flapping", 9 * s, Down},
		{"flapping", 23 * s, Healthy},
		{"flapping", 25 * s, Healthy},
	} {
		if got := scenario(t, tc.scenario).ModeAt(tc.at); got != tc.want {
			t.Errorf("%s.ModeAt(%v) = %v, want %v", tc.scenario, tc.at, got, tc.want)
		}
	}
}

// TestChanges: Changes lists exactly the instants at which ModeAt changes, found by scanning
// every nanosecond boundary on a Tick grid, for every scenario, short and long, and for a
// flapping fault of an odd count of stretches.
func TestChanges(t *testing.T) {
	all := append(Scenarios(false), Scenarios(true)...)
	all = append(all, Scenario{Name: "odd", Fault: Down, Flap: 2 * s, Warm: s, Outage: 6 * s, After: s},
		Scenario{Name: "ragged", Fault: Down, Flap: 3 * s, Warm: s, Outage: 7 * s, After: s},
		Scenario{Name: "none", Fault: Down, Warm: s, After: s})
	for _, sc := range all {
		var want []time.Duration
		for d := Tick; d <= sc.Total(); d += Tick {
			if sc.ModeAt(d) != sc.ModeAt(d-1) {
				want = append(want, d)
			}
		}
		if got := sc.Changes(); !slices.Equal(got, want) {
			t.Errorf("%s: Changes() = %v, want %v", sc.Name, got, want)
		}
	}
}

// TestAnswer: the answer to one draw in each mode.
func TestAnswer(t *testing.T) {
	ok := Answer{Status: http.StatusOK, Delay: Latency}
	failed := Answer{Status: http.StatusServiceUnavailable, Delay: Latency}
	hinted := Answer{Status: http.StatusServiceUnavailable, RetryAfter: "1", Delay: Latency}
	slow := Answer{Status: http.StatusOK, Delay: SlowDelay}
	p30, sl := scenario(t, "partial30"), scenario(t, "slow")
	for i, tc := range []struct {
		sc   Scenario
		m    Mode
		roll float64
		want Answer
	}{
		{p30, Healthy, 0, failed},
		{p30, Healthy, 0.0199, failed},
		{p30, Healthy, 0.02, ok},
		{p30, Healthy, 0.999, ok},
		{p30, Down, 0.5, Answer{}},
		{p30, Failing, 0.999, hinted},
		{p30, Partial, 0.299, failed},
		{p30, Partial, 0.3, ok},
		{sl, Slow, 0.499, slow},
		{sl, Slow, 0.5, failed},    // the first 2% of the rest fail as a healthy dependency's do
		{sl, Slow, 0.5099, failed}, // (0.5099-0.5)/0.5 = 0.0198
		{sl, Slow, 0.51, ok},
		{p30, Healthy, math.NaN(), ok}, // a draw out of range fails nothing
		{p30, Partial, -1, ok},
		{p30, Healthy, 1, ok},
		{sl, Slow, math.Inf(1), ok},
	} {
		if got := tc.sc.Answer(tc.m, tc.roll); got != tc.want {
			t.Errorf("step %d: %s.Answer(%v, %v) = %+v, want %+v", i, tc.sc.Name, tc.m, tc.roll, got, tc.want)
		}
	}
}

// TestAnswerShares: over an even grid of draws, each scenario's answers come in the shares its
// doc gives.
func TestAnswerShares(t *testing.T) {
	const n = 10000
	for _, tc := range []struct {
		scenario           string
		m                  Mode
		failed, slow, hint float64
	}{
		{"down", Healthy, Background, 0, 0},
		{"failing", Failing, 1, 0, 1},
		{"partial30", Partial, 0.3, 0, 0},
		{"partial60", Partial, 0.6, 0, 0},
		{"slow", Slow, 0.5 * Background, 0.5, 0},
	} {
		sc := scenario(t, tc.scenario)
		var failed, slow, hint int
		for i := range n {
			a := sc.Answer(tc.m, (float64(i)+0.5)/n)
			if a.Status == http.StatusServiceUnavailable {
				failed++
			}
			if a.Delay > AttemptTimeout {
				slow++
			}
			if a.RetryAfter != "" {
				hint++
			}
		}
		for _, c := range []struct {
			what string
			got  int
			want float64
		}{{"503", failed, tc.failed}, {"slow", slow, tc.slow}, {"Retry-After", hint, tc.hint}} {
			if math.Abs(float64(c.got)/n-c.want) > 1.0/n {
				t.Errorf("%s: %s share %.4f, want %.4f", tc.scenario, c.what, float64(c.got)/n, c.want)
			}
		}
	}
}

// TestScenarios: the names are distinct, the outages keep 25 s after recovery, and a short
// run is shorter.
func TestScenarios(t *testing.T) {
	seen := map[string]bool{}
	for _, sc := range Scenarios(false) {
		if seen[sc.Name] {
			t.Errorf("scenario %q twice", sc.Name)
		}
		seen[sc.Name] = true
		if sc.Outage != 20*s || sc.Warm != 5*s {
			t.Errorf("%s: warm %v outage %v, want 5s and 20s", sc.Name, sc.Warm, sc.Outage)
		}
		if short, _ := Find(Scenarios(true), sc.Name); short.Total() >= sc.Total() {
			t.Errorf("%s: short %v, long %v", sc.Name, short.Total(), sc.Total())
		}
	}
	for _, n := range []string{"down", "failing"} {
		if a := scenario(t, n).After; a != 25*s {
			t.Errorf("%s: After %v, want 25s", n, a)
		}
	}
	if _, ok := Find(Scenarios(false), "nonesuch"); ok {
		t.Error("Find found a scenario that is not there")
	}
	if got := Mode(9).String(); got != "Mode(9)" {
		t.Errorf("Mode(9).String() = %q", got)
	}
}
