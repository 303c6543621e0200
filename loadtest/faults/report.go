package faults

import (
	"fmt"
	"strings"
	"time"
)

// Run is one scenario's series, one per client, in the clients' order.
type Run struct {
	Scenario Scenario `json:"scenario"`
	Series   []Series `json:"series"`
	// Received is what the dependency counted, one series per client in the same order, the
	// requests it received in the Sent field.
	Received []Series `json:"received,omitempty"`
	// MaxLag is how far behind its schedule the driver started a call, at worst: a driver
	// starved of CPU or memory offers its calls late, in bursts, and the figures lose meaning.
	MaxLag time.Duration `json:"max_lag"`
	// Tries is how many times the scenario ran to get a run within the driver's lag bound.
	Tries int `json:"tries"`
}

// find returns the run of the scenario named name.
func find(runs []Run, name string) (Run, bool) {
	for _, r := range runs {
		if r.Scenario.Name == name {
			return r, true
		}
	}
	return Run{}, false
}

// clientNames returns every client of runs, in first-seen order.
func clientNames(runs []Run) []string {
	var names []string
	seen := map[string]bool{}
	for _, r := range runs {
		for _, s := range r.Series {
			if !seen[s.Client] {
				seen[s.Client] = true
				names = append(names, s.Client)
			}
		}
	}
	return names
}

// cell is one column of a table: a scenario and what to show of a client's summary there.
type cell struct {
	scenario, head string
	show           func(Scenario, Summary) string
}

func table(b *strings.Builder, runs []Run, cells []cell) {
	b.WriteString("| client |")
	for _, c := range cells {
		fmt.Fprintf(b, " %s |", c.head)
	}
	b.WriteString("\n|---|")
	for range cells {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	for _, name := range clientNames(runs) {
		fmt.Fprintf(b, "| %s |", name)
		for _, c := range cells {
			v := "–"
			if r, ok := find(runs, c.scenario); ok {
				for _, s := range r.Series {
					if s.Client == name {
						v = c.show(r.Scenario, Summarize(r.Scenario, s))
					}
				}
			}
			fmt.Fprintf(b, " %s |", v)
		}
		b.WriteString("\n")
	}
}

func reach(_ Scenario, v Summary) string   { return Pct(v.Reach) }
func after(_ Scenario, v Summary) string   { return Pct(v.RefusedAfter) }
func last(s Scenario, v Summary) string    { return Last(v, s.After) }
func goodput(_ Scenario, v Summary) string { return Pct(v.Goodput) }
func retries(_ Scenario, v Summary) string { return "+" + Pct(v.RetriesAdded) }

// Tables returns the summary tables in markdown: the outages, partial failure, and the retries.
func Tables(runs []Run) string {
	var b strings.Builder
	b.WriteString("Outages: the dependency down (connection refused) or failing (every call 503, Retry-After: 1) " +
		"for the fault, healthy (2% of calls 503) before and after. Reaching: attempts sent to it after the " +
		"outage's first 2 s, as a share of the calls offered then; refused: the calls refused by the client in " +
		"the 10 s after recovery; last refusal: how long after recovery the client last refused.\n\n")
	table(&b, runs, []cell{
		{"down", "down: reaching", reach}, {"down", "refused after", after}, {"down", "last refusal", last},
		{"failing", "failing: reaching", reach}, {"failing", "refused after", after}, {"failing", "last refusal", last},
	})
	b.WriteString("\nPartial failure: goodput (calls that ended in a 200, retries included, as a share of those offered) " +
		"while 30% or 60% of calls fail at normal latency, while half the calls take 1 s and time out at the client " +
		"(250 ms), and while the dependency flaps (2 s down, 2 s up: goodput in the up stretches, attempts " +
		"reaching it in the down ones).\n\n")
	table(&b, runs, []cell{
		{"partial30", "partial 30%", goodput}, {"partial60", "partial 60%", goodput}, {"slow", "slow", goodput},
		{"flapping", "flapping: goodput up", goodput}, {"flapping", "reaching while down", reach},
	})
	b.WriteString("\nRetries: the attempts each client's retries added, as a share of the calls offered over the " +
		"whole run (the Transport's retries, Retry-After and the retry budget, the same for every client); " +
		"the last column counts the retries sent after a Retry-After and the shortest wait before one.\n\n")
	cells := []cell{}
	for _, s := range []string{"down", "failing", "partial30", "partial60", "slow", "flapping"} {
		cells = append(cells, cell{s, s, retries})
	}
	cells = append(cells, cell{"failing", "after Retry-After (failing)", func(_ Scenario, v Summary) string {
		if v.Hinted == 0 {
			return "0"
		}
		return fmt.Sprintf("%d (≥ %.2f s)", v.Hinted, v.HintedMinWait.Seconds())
	}})
	table(&b, runs, cells)
	return b.String()
}

// Detail returns one table per scenario with every figure of Summary.
func Detail(runs []Run) string {
	var b strings.Builder
	for _, r := range runs {
		s := r.Scenario
		fmt.Fprintf(&b, "### %s\n\n%s The driver started its calls at most %d ms late (run %d).\n\n",
			s.Name, Describe(s), r.MaxLag.Milliseconds(), r.Tries)
		b.WriteString("| client | offered | reaching | goodput | refused while healthy | refused after | last refusal | retries added | retries in the fault | sent / received |\n")
		b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for i, se := range r.Series {
			v := Summarize(s, se)
			recv := "–"
			if i < len(r.Received) {
				recv = fmt.Sprint(total(r.Received[i]).Sent)
			}
			fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s | +%s | +%s | %d / %s |\n", v.Client, total(se).Offered,
				Pct(v.Reach), Pct(v.Goodput), Pct(v.HealthyRefused), Pct(v.RefusedAfter), Last(v, s.After),
				Pct(v.RetriesAdded), Pct(v.FaultRetries), total(se).Sent, recv)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// total adds up every bucket of s.
func total(s Series) Counts { return sum(s.Buckets, func(time.Duration) bool { return true }) }

// Describe says what a scenario does, in a sentence.
func Describe(s Scenario) string {
	var what string
	switch {
	case s.Flap > 0:
		what = fmt.Sprintf("flaps for %s: %s %s, healthy %s, in turn", secs(s.Outage), secs(s.Flap), s.Fault, secs(s.Flap))
	case s.Fault == Partial:
		what = fmt.Sprintf("answers %.0f%% of calls 503 at normal latency for %s", 100*s.Fraction, secs(s.Outage))
	case s.Fault == Slow:
		what = fmt.Sprintf("answers %.0f%% of calls after %s (the client gives up at %s) for %s",
			100*s.Fraction, secs(SlowDelay), secs(AttemptTimeout), secs(s.Outage))
	case s.Fault == Failing:
		what = fmt.Sprintf("answers every call 503 with Retry-After: 1 for %s", secs(s.Outage))
	default:
		what = fmt.Sprintf("is %s (connection refused) for %s", s.Fault, secs(s.Outage))
	}
	return fmt.Sprintf("Healthy for %s, then the dependency %s, then healthy for %s. Goodput counts %s.",
		secs(s.Warm), what, secs(s.After), map[bool]string{true: "the healthy stretches of the fault; reaching, the down ones", false: "the whole fault; reaching, the fault after its first 2 s"}[s.Flap > 0])
}

func secs(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	return fmt.Sprintf("%g s", d.Seconds())
}

// Replace returns doc with the text between the lines begin and end replaced by body; false
// when doc lacks either line.
func Replace(doc, begin, end, body string) (string, bool) {
	i := strings.Index(doc, begin+"\n")
	if i < 0 {
		return doc, false
	}
	j := strings.Index(doc[i:], "\n"+end)
	if j < 0 {
		return doc, false
	}
	j += i
	return doc[:i+len(begin)+1] + strings.TrimRight(body, "\n") + doc[j:], true
}
