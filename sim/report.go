package sim

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/wardgo/ward/rate"
)

// Limiters runs every rule through every limiter scenario.
func Limiters(seed uint64) map[string]map[string]Run {
	out := map[string]map[string]Run{}
	for _, sc := range Scenarios() {
		out[sc.Name] = map[string]Run{}
		for _, rule := range Rules(sc.Phases[0].Capacity) {
			var clock int64
			a := Ward(rule.New(), &clock)
			out[sc.Name][rule.Name] = Closed(a, &clock, sc.Clients, sc.Timeout, sc.Phases, seed)
		}
	}
	return out
}

// Names are the names of the rules every limiter scenario runs, in the order of Rules.
func Names() []string {
	var names []string
	for _, r := range Rules(1) {
		names = append(names, r.Name)
	}
	return names
}

func secs(d time.Duration) string {
	if d < 0 {
		return "never"
	}
	return fmt.Sprintf("%.0fs", d.Seconds())
}

func msec(d time.Duration) string { return fmt.Sprintf("%.0fms", float64(d)/1e6) }

// WriteLimiterTable prints one scenario's table: a row per rule and phase.
func WriteLimiterTable(w io.Writer, sc Scenario, runs map[string]Run, order []string) {
	fmt.Fprintf(w, "\n%s: %s\n", sc.Name, sc.About)
	width := 14
	for _, name := range order {
		width = max(width, len(name))
	}
	fmt.Fprintf(w, "%-*s %5s %4s %8s %7s %7s %8s %8s %7s %6s\n", width, "rule", "phase", "C", "goodput", "p50", "p99", "p99 late", "refused", "settle", "limit")
	for _, name := range order {
		run, ok := runs[name]
		if !ok {
			continue
		}
		for i, p := range run.Phases {
			fmt.Fprintf(w, "%-*s %5d %4d %7.0f%% %7s %7s %8s %7.0f%% %7s %6d\n",
				width, name, i+1, p.Capacity, 100*p.Goodput, msec(p.P50), msec(p.P99), msec(p.P99Late), 100*p.Refused, secs(p.Settle), p.Limit)
		}
	}
}

// WriteReport runs every scenario with seed and prints the tables; extra adds rows (the bench
// module's Netflix-style rules) to the limiter scenarios.
func WriteReport(w io.Writer, seed uint64, extra map[string]map[string]Run, extraOrder []string) map[string]map[string]Run {
	runs := Limiters(seed)
	for sc, rows := range extra {
		for name, run := range rows {
			runs[sc][name] = run
		}
	}
	order := append(Names(), extraOrder...)
	fmt.Fprintf(w, "ward overload simulator, seed %d. goodput: calls completed within the timeout per second over the\n", seed)
	fmt.Fprintf(w, "backend's capacity throughput; p99 late: the second half of the phase; settle: until the limit lay in [C, 2C].\n")
	for _, sc := range Scenarios() {
		WriteLimiterTable(w, sc, runs[sc.Name], order)
	}
	WriteScores(w, runs, order)

	o := Outage(seed)
	fmt.Fprintf(w, "\noutage: 100 calls/s, the backend fails every call from 30 s to 60 s; breaker preset (go-zero's numbers)\n")
	fmt.Fprintf(w, "refused while down %.0f%% (%d calls reached the failing backend); ratio back to 0 %s after recovery; refused after recovery %.1f%%\n",
		100*o.RefusedDown, o.FailedDown, secs(o.Recovery), 100*o.RefusedUp)
	fmt.Fprintf(w, "a backend failing 20%% of calls: largest refusal ratio %.3f\n", o.HealthyRatio)

	fmt.Fprintf(w, "\noverload: Poisson arrivals rising to 3x the backend's throughput (capacity 50, 20 ms), 60 s at 3x\n")
	fmt.Fprintf(w, "%-14s %8s %8s %7s %7s %10s %12s\n", "control", "goodput", "refused", "p50", "p99", "in flight", "in flight/C")
	sh := OverloadShed(seed)
	fmt.Fprintf(w, "%-14s %7.0f%% %7.0f%% %7s %7s %10.1f %11.2fx (of capacity shown)\n", "shedder", 100*sh.Goodput, 100*sh.Refused, msec(sh.P50), msec(sh.P99), sh.FlyingMean, sh.InFlight)
	for _, rule := range Rules(50) {
		var clock int64
		st := OverloadLimit(Ward(rule.New(), &clock), &clock, seed)
		fmt.Fprintf(w, "%-14s %7.0f%% %7.0f%% %7s %7s %10.1f %11.2fx\n", rule.Name, 100*st.Goodput, 100*st.Refused, msec(st.P50), msec(st.P99), st.FlyingMean, st.InFlight)
	}

	fmt.Fprintf(w, "\nbursty: 40 calls 1.5 ms apart every 2 s, straddling the second; quotas of 20 a second\n")
	fmt.Fprintf(w, "%-6s %7s %8s %7s\n", "burst", "bucket", "sliding", "period")
	for i, row := range Bursts(4) {
		fmt.Fprintf(w, "%-6d %7d %8d %7d\n", i, row[0], row[1], row[2])
	}
	return runs
}

// Score is one rule's figures against the bars a settling limit is held to.
type Score struct {
	ColdSettle   time.Duration // cold: until the limit first lay in [C, 2C]; -1 never
	ColdGoodput  float64       // cold: over the whole 30 s
	SpikeGoodput float64       // spike: while the service time is tripled
	SpikeRecover time.Duration // spike: from its end until the limit lay in [C, 2C]; -1 never
	Peak         float64       // overload: the largest limit after the first 10 s, over C
	End          float64       // overload: the limit at the end, over C
	P99          float64       // the worst settled p99 (second half of a phase) over the unloaded time, in every phase of every scenario
	SmallP99     float64       // small: settled p99 over the unloaded time
	SmallGoodput float64       // small
}

// Unloaded is the slowest response time a phase's backend gives without queueing.
func Unloaded(p Phase) time.Duration { return time.Duration(float64(p.Base) * 1.1) }

// Scores reads one rule's Score from the runs of every scenario (keyed by scenario name).
func Scores(runs map[string]Run) Score {
	var s Score
	cold, spike, over, small := runs["cold"].Phases[0], runs["spike"].Phases, runs["overload"].Phases[0], runs["small"].Phases[0]
	s.ColdSettle, s.ColdGoodput = cold.Settle, cold.Goodput
	s.SpikeGoodput, s.SpikeRecover = spike[1].Goodput, spike[2].Settle
	s.Peak, s.End = float64(over.Peak)/float64(over.Capacity), float64(over.Limit)/float64(over.Capacity)
	s.SmallP99, s.SmallGoodput = float64(small.P99Late)/float64(Unloaded(small.Phase)), small.Goodput
	for _, r := range runs {
		for _, p := range r.Phases {
			s.P99 = max(s.P99, float64(p.P99Late)/float64(Unloaded(p.Phase)))
		}
	}
	return s
}

// Bars says which of the bars a settling limit is held to s meets, in the order of the scores
// table's columns: settles from a cold start within 10 s; a spike costs at most 10 points of
// goodput; the limit is back within [C, 2C] within 10 s of the spike's end; the limit stays within
// 1.3 × C under sustained overload; the settled p99 is at most 2 × unloaded everywhere.
func (s Score) Bars() [5]bool {
	return [5]bool{
		s.ColdSettle >= 0 && s.ColdSettle <= 10*time.Second,
		s.SpikeGoodput >= 0.9,
		s.SpikeRecover >= 0 && s.SpikeRecover <= 10*time.Second,
		s.Peak <= 1.3,
		s.P99 <= 2,
	}
}

// WriteScores prints every rule's Score, one row each, with the bars it meets.
func WriteScores(w io.Writer, runs map[string]map[string]Run, order []string) {
	fmt.Fprintf(w, "\nscores: every rule against the bars of a limit that settles (bars: cold settle <= 10s, spike goodput >= 90%%,\n")
	fmt.Fprintf(w, "spike recovery <= 10s, overload peak <= 1.3C, settled p99 <= 2x unloaded in every phase of every scenario)\n")
	fmt.Fprintf(w, "%-14s %6s %6s %7s %8s %6s %6s %6s %8s %8s  %s\n", "rule", "cold", "cold", "spike", "spike", "peak", "end", "p99", "small", "small", "bars")
	fmt.Fprintf(w, "%-14s %6s %6s %7s %8s %6s %6s %6s %8s %8s\n", "", "settle", "good", "good", "recover", "/C", "/C", "/unld", "p99/unld", "good")
	for _, name := range order {
		byScenario := map[string]Run{}
		for sc, rows := range runs {
			if r, ok := rows[name]; ok {
				byScenario[sc] = r
			}
		}
		if len(byScenario) < 4 {
			continue
		}
		s := Scores(byScenario)
		met := 0
		for _, ok := range s.Bars() {
			if ok {
				met++
			}
		}
		fmt.Fprintf(w, "%-14s %6s %5.0f%% %6.0f%% %8s %6.2f %6.2f %6.2f %8.2f %7.0f%%  %d/5\n", name, secs(s.ColdSettle), 100*s.ColdGoodput,
			100*s.SpikeGoodput, secs(s.SpikeRecover), s.Peak, s.End, s.P99, s.SmallP99, 100*s.SmallGoodput, met)
	}
}

// Bursts offers one burst of forty calls every two seconds, straddling the second boundary, to a
// bucket, a sliding window and a period of twenty a second, and returns how many each passed.
func Bursts(n int) [][3]int {
	ms := int64(time.Millisecond)
	bucket, _ := rate.NewBucket(20, 20, 0)
	sliding, _ := rate.NewSliding(20, time.Second)
	period, _ := rate.NewPeriod(20, time.Second, true)
	var out [][3]int
	for b := 0; b < n; b++ {
		var row [3]int
		for i := int64(0); i < 40; i++ {
			now := int64(b)*2000*ms + 970*ms + i*3*ms/2
			if ok, _ := bucket.TakeAt(now, 1); ok {
				row[0]++
			}
			if ok, _ := sliding.TakeAt(now, 1); ok {
				row[1]++
			}
			if ok, _ := period.TakeAt(now, 1); ok {
				row[2]++
			}
		}
		out = append(out, row)
	}
	return out
}

// SVG draws the limit over time and the p99 per second of each rule in one scenario, by hand.
func SVG(w io.Writer, sc Scenario, runs map[string]Run, order []string) {
	const width, height, pad = 900, 260, 40
	colors := []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"}
	n, top := 0, 1
	var maxRT time.Duration = 1
	for _, name := range order {
		if r, ok := runs[name]; ok {
			n = max(n, len(r.Limits))
			for _, l := range r.Limits {
				top = max(top, l)
			}
			for _, p := range r.P99s {
				maxRT = max(maxRT, p)
			}
		}
	}
	plot := func(title string, y0 int, value func(Run, int) float64, ymax float64) {
		fmt.Fprintf(w, `<text x="%d" y="%d" font-size="13">%s</text>`+"\n", pad, y0-8, title)
		fmt.Fprintf(w, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>`+"\n", pad, y0, width-2*pad, height-2*pad)
		fmt.Fprintf(w, `<text x="4" y="%d" font-size="10">%.0f</text><text x="4" y="%d" font-size="10">0</text>`+"\n", y0+10, ymax, y0+height-2*pad)
		for k, name := range order {
			r, ok := runs[name]
			if !ok {
				continue
			}
			var pts strings.Builder
			for i := range r.Limits {
				x := pad + float64(i)/float64(max(n-1, 1))*float64(width-2*pad)
				y := float64(y0+height-2*pad) - value(r, i)/ymax*float64(height-2*pad)
				fmt.Fprintf(&pts, "%.1f,%.1f ", x, y)
			}
			c := colors[k%len(colors)]
			fmt.Fprintf(w, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`+"\n", c, pts.String())
			fmt.Fprintf(w, `<text x="%d" y="%d" font-size="11" fill="%s">%s</text>`+"\n", width-pad+4, y0+14*(k+1), c, name)
		}
	}
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif">`+"\n", width+80, 2*height+20)
	fmt.Fprintf(w, `<text x="%d" y="16" font-size="14">%s: %s</text>`+"\n", pad, sc.Name, sc.About)
	plot("limit over time (one point a second)", 40, func(r Run, i int) float64 { return float64(r.Limits[i]) }, float64(top))
	plot("p99 response time per second, ms", 40+height, func(r Run, i int) float64 { return float64(r.P99s[i]) / 1e6 }, float64(maxRT)/1e6)
	fmt.Fprintln(w, "</svg>")
}
