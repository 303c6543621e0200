package faults

import (
	"fmt"
	"math"
	"time"
)

// Summary is one client's figures in one scenario. Shares are percentages of the calls offered
// in the stretch named; a share of a stretch with no offered call is NaN.
type Summary struct {
	Client string `json:"client"`
	// Reach is the attempts sent to the faulty dependency: after the first Settle of the fault,
	// or, when it flaps, during every down stretch.
	Reach float64 `json:"reach_pct"`
	// Goodput is the calls that ended in a 200 during the fault, or, when it flaps, during its
	// healthy stretches.
	Goodput float64 `json:"goodput_pct"`
	// HealthyRefused is the calls refused during the warm-up, when only Background fails.
	HealthyRefused float64 `json:"healthy_refused_pct"`
	// RefusedAfter is the calls refused in the AfterWindow after recovery.
	RefusedAfter float64 `json:"refused_after_pct"`
	// LastRefusal is the end of the last Tick after recovery that held a refusal, from recovery;
	// 0 when none. Censored says it fell in the run's last second: refusing to the end.
	LastRefusal time.Duration `json:"last_refusal"`
	Censored    bool          `json:"censored,omitempty"`
	// RetriesAdded is the retries sent, over the whole run.
	RetriesAdded float64 `json:"retries_added_pct"`
	// FaultRetries is the retries sent during the fault (flapping: its down stretches).
	FaultRetries float64 `json:"fault_retries_pct"`
	// Hinted and HintedMinWait are the Series' Retry-After retries.
	Hinted        int64         `json:"hinted_retries"`
	HintedMinWait time.Duration `json:"hinted_min_wait,omitempty"`
}

// sum adds up the buckets of s whose start satisfies in.
func sum(b []Counts, in func(d time.Duration) bool) Counts {
	var c Counts
	for i, x := range b {
		if !in(time.Duration(i) * Tick) {
			continue
		}
		c.Offered += x.Offered
		c.OK += x.OK
		c.Refused += x.Refused
		c.Failed += x.Failed
		c.Sent += x.Sent
		c.Retries += x.Retries
	}
	return c
}

var nanValue = math.NaN()

func pct(n, of int64) float64 {
	if of == 0 {
		return nanValue
	}
	return 100 * float64(n) / float64(of)
}

// Summarize returns what series did in scenario s.
func Summarize(s Scenario, series Series) Summary {
	b := series.Buckets
	rec := s.Recovery()
	inFault := func(d time.Duration) bool { return d >= s.Warm && d < rec }
	reach, good := func(d time.Duration) bool { return d >= s.Warm+Settle && d < rec }, inFault
	faultRetries := inFault
	if s.Flap > 0 {
		reach = func(d time.Duration) bool { return inFault(d) && s.ModeAt(d) == s.Fault }
		good = func(d time.Duration) bool { return inFault(d) && s.ModeAt(d) == Healthy }
		faultRetries = reach
	}
	r, g, f := sum(b, reach), sum(b, good), sum(b, faultRetries)
	w := sum(b, func(d time.Duration) bool { return d < s.Warm })
	a := sum(b, func(d time.Duration) bool { return d >= rec && d < rec+AfterWindow })
	all := sum(b, func(time.Duration) bool { return true })
	out := Summary{
		Client:         series.Client,
		Reach:          pct(r.Sent, r.Offered),
		Goodput:        pct(g.OK, g.Offered),
		HealthyRefused: pct(w.Refused, w.Offered),
		RefusedAfter:   pct(a.Refused, a.Offered),
		RetriesAdded:   pct(all.Retries, all.Offered),
		FaultRetries:   pct(f.Retries, f.Offered),
		Hinted:         series.Hinted,
		HintedMinWait:  series.HintedMinWait,
	}
	end := min(s.Total(), time.Duration(len(b))*Tick)
	for i := len(b) - 1; i >= 0; i-- {
		d := time.Duration(i) * Tick
		if d < rec {
			break
		}
		if b[i].Refused > 0 && d < end {
			out.LastRefusal = d + Tick - rec
			out.Censored = d+Tick > end-time.Second
			break
		}
	}
	return out
}

// Pct formats a share as a table cell: one decimal below 10, none above; "–" for NaN.
func Pct(v float64) string {
	switch {
	case v != v:
		return "–"
	case v < 9.95:
		return fmt.Sprintf("%.1f%%", v)
	}
	return fmt.Sprintf("%.0f%%", v)
}

// Last formats a Summary's last refusal after recovery: "none", "1.3 s", or "> 24 s" when it
// refused to the end of the run (after is the run's time after recovery).
func Last(v Summary, after time.Duration) string {
	switch {
	case v.Censored:
		return fmt.Sprintf("> %.0f s", (after - time.Second).Seconds())
	case v.LastRefusal == 0:
		return "none"
	}
	return fmt.Sprintf("%.1f s", v.LastRefusal.Seconds())
}
