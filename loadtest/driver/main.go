// Command driver runs the load test: for each protection and each load it starts the example
// service (a separate process), drives it with wrk (another process) on loopback, reads the
// service's per-status latencies, and writes a markdown table, an SVG chart and the raw figures.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// capacity is the service's: 20 slots of 50 ms.
const capacity = 400.0

// delayMs is each wrk connection's pause before a request; with an admitted call's 50 ms a
// connection offers one call per 150 ms.
const delayMs = 100

var (
	modes = []string{"none", "vegas", "gradient", "aimd", "shed"}
	loads = []float64{0.5, 1, 2, 4}
)

type summary struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P99   float64 `json:"p99_ms"`
	Max   float64 `json:"max_ms"`
}

type stats struct {
	Seconds  float64            `json:"seconds"`
	ByStatus map[string]summary `json:"by_status"`
}

// Cell is one run: a protection under one load.
type Cell struct {
	Mode        string  `json:"mode"`
	Load        float64 `json:"load"`
	Connections int     `json:"connections"`
	Seconds     float64 `json:"seconds"`
	OfferedRPS  float64 `json:"offered_rps"` // every response the server gave, a second
	GoodputRPS  float64 `json:"goodput_rps"` // 200s a second
	Admitted    summary `json:"admitted"`    // the 200s
	Refused     summary `json:"refused"`     // the 503s and 429s
	RefusedRPS  float64 `json:"refused_rps"`
	Timeouts    int     `json:"wrk_timeouts"`
	WrkP99      string  `json:"wrk_p99_all"` // wrk's own p99 over every response
	// The client's view (wrk, through load.lua): the p99 of refusals and of admitted calls read
	// from wrk's one histogram at the quantiles where each falls; 0 when there were none.
	ClientRefusedP99  float64 `json:"client_refused_p99_ms"`
	ClientAdmittedP99 float64 `json:"client_admitted_p99_ms"`
}

func main() {
	service := flag.String("service", "", "the example service's binary")
	lua := flag.String("lua", "loadtest/load.lua", "wrk script")
	out := flag.String("out", "loadtest/results", "results folder")
	seconds := flag.Int("seconds", 8, "measured seconds per cell")
	flag.Parse()
	if *service == "" {
		log.Fatal("driver: -service is required")
	}
	var cells []Cell
	base, err := run(*service, *lua, "none", 0, 5, *seconds) // unloaded: 5 connections
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("unloaded: p99 of 200s %.1f ms over %d calls\n", base.Admitted.P99, base.Admitted.Count)
	for _, m := range modes {
		for _, l := range loads {
			c, err := run(*service, *lua, m, l, int(math.Round(l*capacity*(0.05+delayMs/1000.0))), *seconds)
			if err != nil {
				log.Fatal(err)
			}
			fmt.Printf("%-9s %3gx  goodput %6.1f rps (%5.1f%%)  admitted p99 %7.1f ms (client %7.1f)  refused %7.1f rps p99 %5.2f ms (client %5.2f)  wrk timeouts %d\n",
				m, l, c.GoodputRPS, 100*c.GoodputRPS/capacity, c.Admitted.P99, c.ClientAdmittedP99, c.RefusedRPS, c.Refused.P99, c.ClientRefusedP99, c.Timeouts)
			cells = append(cells, c)
		}
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatal(err)
	}
	raw, _ := json.MarshalIndent(struct {
		Unloaded Cell   `json:"unloaded"`
		Cells    []Cell `json:"cells"`
	}{base, cells}, "", "  ")
	must(os.WriteFile(filepath.Join(*out, "raw.json"), append(raw, '\n'), 0o644))
	must(os.WriteFile(filepath.Join(*out, "README.md"), []byte(table(base, cells, *seconds)), 0o644))
	must(os.WriteFile(filepath.Join(*out, "loadtest.svg"), []byte(chart(cells)), 0o644))
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}

// freePort asks the kernel for a free loopback port.
func freePort() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// run starts the service with one protection, warms it up for 3 s, then measures for seconds.
func run(service, lua, mode string, load float64, conns, seconds int) (Cell, error) {
	addr := freePort()
	cmd := exec.Command(service, "-addr", addr, "-protect", mode)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return Cell{}, err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	url := "http://" + addr
	for i := 0; ; i++ {
		if resp, err := http.Get(url + "/stats"); err == nil {
			resp.Body.Close()
			break
		}
		if i > 100 {
			return Cell{}, fmt.Errorf("service %s did not start", mode)
		}
		time.Sleep(50 * time.Millisecond)
	}
	threads := strconv.Itoa(min(runtime.NumCPU(), conns))
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(seconds+30)*time.Second)
	defer cancel()
	warm := exec.CommandContext(ctx, "wrk", "-t", threads, "-c", strconv.Itoa(conns), "-d", "3s", "-s", lua, url+"/work", "--", strconv.Itoa(delayMs))
	if err := warm.Run(); err != nil {
		return Cell{}, fmt.Errorf("wrk warm-up: %w", err)
	}
	if resp, err := http.Get(url + "/reset"); err == nil {
		resp.Body.Close()
	}
	var wout bytes.Buffer
	w := exec.CommandContext(ctx, "wrk", "-t", threads, "-c", strconv.Itoa(conns), "-d", strconv.Itoa(seconds)+"s", "--latency", "-s", lua, url+"/work", "--", strconv.Itoa(delayMs))
	w.Stdout = &wout
	if err := w.Run(); err != nil {
		return Cell{}, fmt.Errorf("wrk: %w: %s", err, wout.String())
	}
	resp, err := http.Get(url + "/stats")
	if err != nil {
		return Cell{}, err
	}
	defer resp.Body.Close()
	var st stats
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return Cell{}, err
	}
	c := Cell{Mode: mode, Load: load, Connections: conns, Seconds: st.Seconds}
	total := 0
	var refused []summary
	for code, s := range st.ByStatus {
		total += s.Count
		switch code {
		case "200":
			c.Admitted = s
		case "503", "429":
			refused = append(refused, s)
		}
	}
	for _, s := range refused { // one refusal status per protection; merge conservatively if two
		c.Refused.Count += s.Count
		c.Refused.P50 = max(c.Refused.P50, s.P50)
		c.Refused.P90 = max(c.Refused.P90, s.P90)
		c.Refused.P99 = max(c.Refused.P99, s.P99)
		c.Refused.Max = max(c.Refused.Max, s.Max)
	}
	c.OfferedRPS = float64(total) / st.Seconds
	c.GoodputRPS = float64(c.Admitted.Count) / st.Seconds
	c.RefusedRPS = float64(c.Refused.Count) / st.Seconds
	if m := regexp.MustCompile(`timeout (\d+)`).FindStringSubmatch(wout.String()); m != nil {
		c.Timeouts, _ = strconv.Atoi(m[1])
	}
	if m := regexp.MustCompile(`\s99%\s+(\S+)`).FindStringSubmatch(wout.String()); m != nil {
		c.WrkP99 = m[1]
	}
	if m := regexp.MustCompile(`WARD refused_p99_ms=(\S+)`).FindStringSubmatch(wout.String()); m != nil {
		c.ClientRefusedP99, _ = strconv.ParseFloat(m[1], 64)
	}
	if m := regexp.MustCompile(`WARD admitted_p99_ms=(\S+)`).FindStringSubmatch(wout.String()); m != nil {
		c.ClientAdmittedP99, _ = strconv.ParseFloat(m[1], 64)
	}
	return c, nil
}

func table(base Cell, cells []Cell, seconds int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Load test: the example service under wrk\n\n")
	fmt.Fprintf(&b, "Generated by `make loadtest` (loadtest/run.sh) on %s, %d cores, %s, %s.\n\n", time.Now().UTC().Format("2006-01-02 15:04Z"), runtime.NumCPU(), runtime.Version(), runtime.GOARCH)
	fmt.Fprintf(&b, "The service (loadtest/service): net/http, a pool of 20 worker slots, 50 ms a call: a capacity of %.0f calls a second. ", capacity)
	fmt.Fprintf(&b, "wrk (a separate process, loopback) keeps N connections, each pausing a random 0–2×%d ms (mean %[1]d) before each request, so N = load × %.0f × 0.15 s offers about load × capacity (more when refusals come back at once). ", delayMs, capacity)
	fmt.Fprintf(&b, "Each cell: a fresh service, 3 s of warm-up, %d s measured. Server latencies are the service's own, per status, from its outermost handler's entry to its return. Client latencies are wrk's, from the request's first byte sent to the response's last byte read: wrk keeps one histogram over all responses, so load.lua counts refusals and admitted calls and reads that histogram at the quantile where each one's p99 falls (exact when every refusal is answered faster than every admitted call, which holds here since an admitted call holds a worker for 50 ms). wrk's own p99 over all responses is in its column.\n\n", seconds)
	fmt.Fprintf(&b, "Unloaded (5 connections, unprotected): p50 %.1f ms, p99 %.1f ms of %d calls. The bar at 4× is goodput ≥ %.0f rps (90%% of capacity), admitted p99 ≤ %.1f ms (2× unloaded), refused p99 < 5 ms.\n\n",
		base.Admitted.P50, base.Admitted.P99, base.Admitted.Count, 0.9*capacity, 2*base.Admitted.P99)
	b.WriteString("| protection | load | conns | answered rps | goodput rps | goodput / capacity | admitted p50 ms (server) | admitted p99 ms (server) | admitted p99 ms (client) | refused rps | refused p99 ms (server) | refused p99 ms (client) | wrk timeouts | wrk p99 (all) | 4× bar |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range cells {
		bar := ""
		if c.Load == 4 {
			ok := c.GoodputRPS >= 0.9*capacity && c.Admitted.P99 <= 2*base.Admitted.P99 && (c.Refused.Count == 0 || c.Refused.P99 < 5 && c.ClientRefusedP99 < 5)
			bar = map[bool]string{true: "met", false: "not met"}[ok]
		}
		fmt.Fprintf(&b, "| %s | %g× | %d | %.0f | %.0f | %.0f%% | %.1f | %.1f | %.1f | %.0f | %.2f | %.2f | %d | %s | %s |\n",
			c.Mode, c.Load, c.Connections, c.OfferedRPS, c.GoodputRPS, 100*c.GoodputRPS/capacity, c.Admitted.P50, c.Admitted.P99, c.ClientAdmittedP99, c.RefusedRPS, c.Refused.P99, c.ClientRefusedP99, c.Timeouts, c.WrkP99, bar)
	}
	b.WriteString("\n![goodput and admitted p99 by load](loadtest.svg)\n")
	return b.String()
}

// chart draws two panels: goodput by load, and admitted p99 by load (log scale), one line per
// protection.
func chart(cells []Cell) string {
	const w, h, pad = 460, 300, 50
	colors := map[string]string{"none": "#d62728", "vegas": "#1f77b4", "gradient": "#2ca02c", "aimd": "#9467bd", "shed": "#ff7f0e"}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`+"\n", 2*w+20, h+40)
	x := func(load float64) float64 { return pad + (math.Log2(load)+1)/3*(w-2*pad) }
	panel := func(ox int, title string, val func(Cell) float64, top float64, logy bool) {
		y := func(v float64) float64 {
			if logy {
				return h - pad - math.Log10(max(v, 1))/math.Log10(top)*(h-2*pad)
			}
			return h - pad - v/top*(h-2*pad)
		}
		fmt.Fprintf(&b, `<g transform="translate(%d,10)"><text x="%d" y="12" font-weight="bold">%s</text>`+"\n", ox, pad, title)
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/><line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", pad, h-pad, w-pad, h-pad, pad, pad, pad, h-pad)
		for _, l := range loads {
			fmt.Fprintf(&b, `<text x="%.0f" y="%d" text-anchor="middle">%g×</text>`+"\n", x(l), h-pad+15, l)
		}
		ticks := []float64{0, 100, 200, 300, 400, 500}
		if logy {
			ticks = []float64{10, 100, 1000}
		}
		for _, t := range ticks {
			if t > top {
				continue
			}
			fmt.Fprintf(&b, `<text x="%d" y="%.0f" text-anchor="end">%g</text><line x1="%d" y1="%.0f" x2="%d" y2="%.0f" stroke="#ddd"/>`+"\n", pad-4, y(t)+4, t, pad, y(t), w-pad, y(t))
		}
		for i, m := range modes {
			var pts []string
			for _, c := range cells {
				if c.Mode == m {
					pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(c.Load), y(min(val(c), top))))
				}
			}
			fmt.Fprintf(&b, `<polyline fill="none" stroke-width="2" stroke="%s" points="%s"/>`+"\n", colors[m], strings.Join(pts, " "))
			fmt.Fprintf(&b, `<text x="%d" y="%d" fill="%s">%s</text>`+"\n", w-pad+4, pad+14*i, colors[m], m)
		}
		b.WriteString("</g>\n")
	}
	panel(0, "goodput, calls/s (capacity 400)", func(c Cell) float64 { return c.GoodputRPS }, 500, false)
	panel(w+20, "p99 of admitted calls, ms (log)", func(c Cell) float64 { return c.Admitted.P99 }, 3000, true)
	fmt.Fprintf(&b, `<text x="%d" y="%d">load (× capacity)</text>`+"\n", w/2, h+30)
	b.WriteString("</svg>\n")
	return b.String()
}
