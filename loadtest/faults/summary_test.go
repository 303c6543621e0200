package faults

import (
	"encoding/xml"
	"io"
	"math"
	"strings"
	"testing"
	"time"
)

// synth builds a series over sc: every Tick offers 10 calls, and each Tick's other counts are
// what fill returns for its start.
func synth(sc Scenario, client string, fill func(d time.Duration) Counts) Series {
	n := int(sc.Total() / Tick)
	s := Series{Client: client, Buckets: make([]Counts, n)}
	for i := range s.Buckets {
		c := fill(time.Duration(i) * Tick)
		c.Offered = 10
		s.Buckets[i] = c
	}
	return s
}

// TestSummarize: each figure of a synthetic run, by its definition.
func TestSummarize(t *testing.T) {
	down := scenario(t, "down") // 5 s warm, 20 s down, 25 s after
	ser := synth(down, "x", func(d time.Duration) Counts {
		switch {
		case d < 5*s: // healthy: one refusal a second (in 1 Tick of 10), everything else ok
			c := Counts{OK: 10, Sent: 10}
			if d%s == 0 {
				c = Counts{OK: 9, Refused: 1, Sent: 9}
			}
			return c
		case d < 7*s: // the first 2 s of the outage: everything reaches it
			return Counts{Failed: 10, Sent: 14, Retries: 4}
		case d < 25*s: // then one attempt in a Tick, one retry in two Ticks
			c := Counts{Refused: 9, Failed: 1, Sent: 1}
			if (d/Tick)%2 == 0 {
				c.Sent, c.Retries = 2, 1
			}
			return c
		case d < 28*s: // recovered: half refused for 3 s, then the last refusal in the Tick at 31.2 s
			return Counts{Refused: 5, OK: 5, Sent: 5}
		case d == 31200*time.Millisecond:
			return Counts{Refused: 1, OK: 9, Sent: 9}
		}
		return Counts{OK: 10, Sent: 10}
	})
	ser.Hinted, ser.HintedMinWait = 3, time.Second
	v := Summarize(down, ser)
	check := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	check("Reach", v.Reach, 15)                  // 1.5 attempts a Tick of 10 offered, 7 s to 25 s
	check("Goodput", v.Goodput, 0)               // nothing ok during the outage
	check("HealthyRefused", v.HealthyRefused, 1) // 5 refusals of 500 calls
	check("RefusedAfter", v.RefusedAfter, (30*5+1)/10.0)
	check("RetriesAdded", v.RetriesAdded, (20*4+180*0.5)/50.0) // of 500 ticks' 5000 calls
	check("FaultRetries", v.FaultRetries, (20*4+180*0.5)/20.0)
	if v.LastRefusal != 6300*time.Millisecond || v.Censored {
		t.Errorf("LastRefusal = %v censored %v, want 6.3s, not censored", v.LastRefusal, v.Censored)
	}
	if v.Client != "x" || v.Hinted != 3 || v.HintedMinWait != time.Second {
		t.Errorf("client %q hinted %d min %v", v.Client, v.Hinted, v.HintedMinWait)
	}
	if got := Last(v, down.After); got != "6.3 s" {
		t.Errorf("Last = %q, want 6.3 s", got)
	}

	// refusing to the end: censored
	ser.Buckets[len(ser.Buckets)-1].Refused = 1
	if v := Summarize(down, ser); !v.Censored || Last(v, down.After) != "> 24 s" {
		t.Errorf("a refusal in the last Tick: censored %v, Last %q; want true, > 24 s", v.Censored, Last(v, down.After))
	}
	// no refusal after recovery: none; a refusal before recovery does not count
	quiet := synth(down, "q", func(d time.Duration) Counts {
		if d == 24900*time.Millisecond {
			return Counts{Refused: 10}
		}
		return Counts{OK: 10}
	})
	if v := Summarize(down, quiet); v.LastRefusal != 0 || Last(v, down.After) != "none" || v.RefusedAfter != 0 {
		t.Errorf("no refusal after recovery: last %v (%q), refused after %v", v.LastRefusal, Last(v, down.After), v.RefusedAfter)
	}
	// an empty series: every share undefined
	if v := Summarize(down, Series{}); !math.IsNaN(v.Reach) || !math.IsNaN(v.Goodput) || v.LastRefusal != 0 {
		t.Errorf("empty series: %+v", v)
	}
}

// TestSummarizeFlapping: a flapping dependency's reach counts its down stretches and its goodput
// the healthy ones, the first 2 s included.
func TestSummarizeFlapping(t *testing.T) {
	flap := scenario(t, "flapping")
	ser := synth(flap, "f", func(d time.Duration) Counts {
		switch flap.ModeAt(d) {
		case Down:
			if d >= flap.Warm && d < flap.Warm+Tick { // the first Tick of the fault
				return Counts{Sent: 10, Failed: 10}
			}
			return Counts{Sent: 1, Refused: 9, Failed: 1}
		}
		if d >= flap.Warm && d < flap.Recovery() {
			return Counts{OK: 8, Refused: 2, Sent: 8}
		}
		return Counts{OK: 10, Sent: 10}
	})
	v := Summarize(flap, ser)
	if want := (10 + 99*1) / 1000.0 * 100; math.Abs(v.Reach-want) > 1e-9 {
		t.Errorf("Reach = %v, want %v", v.Reach, want)
	}
	if v.Goodput != 80 {
		t.Errorf("Goodput = %v, want 80", v.Goodput)
	}
}

// TestFormat: the table cells.
func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{{0, "0.0%"}, {1.234, "1.2%"}, {9.94, "9.9%"}, {9.96, "10%"}, {73.5, "74%"}, {100, "100%"}, {math.NaN(), "–"}} {
		if got := Pct(tc.v); got != tc.want {
			t.Errorf("Pct(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

// runs builds two scenarios' runs of two clients.
func runs(t *testing.T) []Run {
	down, p30 := scenario(t, "down"), scenario(t, "partial30")
	good := func(time.Duration) Counts { return Counts{OK: 10, Sent: 10} }
	shy := func(d time.Duration) Counts {
		if d >= down.Warm && d < down.Recovery()+3*s {
			return Counts{Refused: 10}
		}
		return good(d)
	}
	return []Run{
		{Scenario: down, Series: []Series{synth(down, "a", good), synth(down, "b", shy)},
			Received: []Series{synth(down, "a", good), synth(down, "b", good)}},
		{Scenario: p30, Series: []Series{synth(p30, "b", good), synth(p30, "a", good)}},
	}
}

// TestTables: a row per client, a column per figure, the cells from Summarize; a scenario that
// did not run shows "–".
func TestTables(t *testing.T) {
	out := Tables(runs(t))
	for _, want := range []string{
		"| client | down: reaching | refused after | last refusal | failing: reaching | refused after | last refusal |",
		"| a | 100% | 0.0% | none | – | – | – |",
		"| b | 0.0% | 30% | 3.0 s | – | – | – |",
		"| a | 100% | – | – | – | – |",
		"| b | 100% | – | – | – | – |",
		"| a | +0.0% | – | +0.0% | – | – | – | – |",
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("Tables lacks the line %q:\n%s", want, out)
		}
	}
	det := Detail(runs(t))
	for _, want := range []string{"### down", "### partial30", "| b | 5000 | 0.0% | 0.0% | 0.0% | 30% | 3.0 s | +0.0% | +0.0% | 2700 / 5000 |",
		"| b | 3500 | 100% | 100% | 0.0% | 0.0% | none | +0.0% | +0.0% | 3500 / – |"} {
		if !strings.Contains(det, want) {
			t.Errorf("Detail lacks %q:\n%s", want, det)
		}
	}
}

// TestChart: the SVG parses, and holds a line per client per panel per run and the fault shaded.
func TestChart(t *testing.T) {
	rs := runs(t)
	svg := Chart(rs)
	d := xml.NewDecoder(strings.NewReader(svg))
	count := map[string]int{}
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the SVG does not parse: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			count[se.Name.Local]++
		}
	}
	if count["svg"] != 1 || count["polyline"] != 2*2*2 {
		t.Errorf("%d svg, %d polylines; want 1 and 8", count["svg"], count["polyline"])
	}
	// one stretch of fault in both panels of each run
	if shaded := strings.Count(svg, `fill="#f3dede"`); shaded != 2*2 {
		t.Errorf("%d shaded stretches, want 4", shaded)
	}
	// a flapping dependency's five down stretches
	flap := scenario(t, "flapping")
	if shaded := strings.Count(Chart([]Run{{Scenario: flap}}), `fill="#f3dede"`); shaded != 2*5 {
		t.Errorf("flapping: %d shaded stretches, want 10", shaded)
	}
	r := rates(rs[0].Series[0], Sent)
	if len(r) != int(down(t).Total()/Bin) || r[0] != 100 {
		t.Errorf("rates: %d points, first %v; want %d and 100 a second", len(r), r[0], int(down(t).Total()/Bin))
	}
}

func down(t *testing.T) Scenario { return scenario(t, "down") }

// TestReplace: the section between the markers is replaced, the rest kept; missing markers are
// reported.
func TestReplace(t *testing.T) {
	doc := "intro\n<!-- b -->\nold\ntable\n<!-- e -->\nrest\n"
	got, ok := Replace(doc, "<!-- b -->", "<!-- e -->", "new\n\n")
	if want := "intro\n<!-- b -->\nnew\n<!-- e -->\nrest\n"; !ok || got != want {
		t.Errorf("Replace = %q, %v; want %q", got, ok, want)
	}
	if got, ok := Replace(doc, "<!-- x -->", "<!-- e -->", "new"); ok || got != doc {
		t.Errorf("no begin marker: %q, %v", got, ok)
	}
	if got, ok := Replace(doc, "<!-- b -->", "<!-- x -->", "new"); ok || got != doc {
		t.Errorf("no end marker: %q, %v", got, ok)
	}
}

// TestDescribe: each kind of scenario says what it does.
func TestDescribe(t *testing.T) {
	for name, want := range map[string]string{
		"down":      "is down (connection refused) for 20 s",
		"failing":   "every call 503 with Retry-After: 1 for 20 s",
		"partial60": "answers 60% of calls 503 at normal latency",
		"slow":      "50% of calls after 1 s (the client gives up at 250 ms)",
		"flapping":  "flaps for 20 s: 2 s down, healthy 2 s, in turn",
	} {
		if got := Describe(scenario(t, name)); !strings.Contains(got, want) {
			t.Errorf("Describe(%s) = %q, lacks %q", name, got, want)
		}
	}
}
