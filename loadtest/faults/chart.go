package faults

import (
	"fmt"
	"html"
	"math"
	"strings"
	"time"
)

// Bin is the width of a point on the chart.
const Bin = 500 * time.Millisecond

var palette = []string{"#1f77b4", "#2ca02c", "#9467bd", "#d62728", "#ff7f0e", "#8c564b", "#7f7f7f", "#e377c2"}

const (
	panelW, panelH = 430, 150
	padL, padT     = 60, 30
	gapX, rowH     = 70, 215
	legendH        = 28 + 18*4
)

// Chart returns an SVG with one row per run: attempts reaching the dependency a second (left)
// and calls refused a second (right), one line per client, the faulty stretches shaded.
func Chart(runs []Run) string {
	names := clientNames(runs)
	w := padL + 2*panelW + gapX + 20
	h := legendH + len(runs)*rowH
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`+"\n", w, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	b.WriteString(`<text x="10" y="18" font-size="13">Client-side faults: attempts reaching the dependency and calls refused by the client, a second (100 calls/s offered; shaded: the fault)</text>` + "\n")
	for i, n := range names {
		x, y := 10+(i%3)*300, 36+(i/3)*18
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/><text x="%d" y="%d">%s</text>`+"\n",
			x, y, x+20, y, palette[i%len(palette)], x+26, y+4, html.EscapeString(n))
	}
	for r, run := range runs {
		top := legendH + r*rowH
		for p, field := range []Field{Sent, Refused} {
			left := padL + p*(panelW+gapX)
			panel(&b, run, names, field, left, top+padT-8)
		}
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// rates returns series' field a second, in bins of Bin.
func rates(s Series, field Field) []float64 {
	per := int(Bin / Tick)
	out := make([]float64, (len(s.Buckets)+per-1)/per)
	for i, c := range s.Buckets {
		v := [...]int64{c.Offered, c.OK, c.Refused, c.Failed, c.Sent, c.Retries}[field]
		out[i/per] += float64(v) / Bin.Seconds()
	}
	return out
}

func panel(b *strings.Builder, run Run, names []string, field Field, left, top int) {
	s := run.Scenario
	title := map[Field]string{Sent: "attempts reaching the dependency /s", Refused: "calls refused /s"}[field]
	fmt.Fprintf(b, `<text x="%d" y="%d" font-size="12">%s: %s</text>`+"\n", left, top-6, html.EscapeString(s.Name), title)
	total := s.Total().Seconds()
	x := func(t float64) float64 { return float64(left) + t/total*panelW }
	// shaded fault stretches
	from := time.Duration(-1)
	for d := time.Duration(0); d <= s.Total(); d += Tick {
		faulty := d < s.Total() && s.ModeAt(d) != Healthy
		switch {
		case faulty && from < 0:
			from = d
		case !faulty && from >= 0:
			fmt.Fprintf(b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="#f3dede"/>`+"\n",
				x(from.Seconds()), top, x(d.Seconds())-x(from.Seconds()), panelH)
			from = -1
		}
	}
	series := map[string][]float64{}
	top1 := 100.0
	for _, se := range run.Series {
		r := rates(se, field)
		series[se.Client] = r
		for _, v := range r {
			top1 = math.Max(top1, v)
		}
	}
	top1 = math.Ceil(top1/50) * 50
	y := func(v float64) float64 { return float64(top+panelH) - v/top1*panelH }
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>`+"\n", left, top, panelW, panelH)
	for _, v := range []float64{0, top1 / 2, top1} {
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end">%.0f</text>`+"\n", left-4, y(v)+4, v)
	}
	for t := 0.0; t <= total+1e-9; t += 10 {
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">%.0f s</text>`+"\n", x(t), top+panelH+14, t)
	}
	for i, n := range names {
		r, ok := series[n]
		if !ok {
			continue
		}
		var pts strings.Builder
		for j, v := range r {
			t := (time.Duration(j)*Bin + Bin/2).Seconds()
			if t > total {
				break
			}
			fmt.Fprintf(&pts, "%.1f,%.1f ", x(t), y(v))
		}
		fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="1.4" stroke-opacity="0.85" points="%s"/>`+"\n",
			palette[i%len(palette)], strings.TrimSpace(pts.String()))
	}
}
