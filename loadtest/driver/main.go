// Command driver runs the load test open-loop: for each protection and each load it starts the
// example service (a separate process), sends it requests at a fixed arrival rate from this
// process on loopback (a request goes out on schedule whether or not earlier ones have been
// answered, as users arrive), reads the service's per-status latencies and its protection's
// trace, and writes a markdown table, an SVG chart and the raw figures. It also runs two cold
// scenarios: Knee from a cold start under 4× load, and a CPU-bound service of one CPU stepped to
// 4× its capacity, unprotected and under the shedder. Each cell states the machine's load
// average beside its figures.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// capacity is the pool service's: 20 slots of 50 ms.
const capacity = 400.0

var (
	modes = []string{"none", "vegas", "gradient", "aimd", "knee", "shed"}
	loads = []float64{0.5, 1, 2, 4}
	// stepModes are the step scenario's protections: none, the shedder with its own sampler's
	// preset, and with the sampler reading the process's CPU time alone.
	stepModes = []string{"none", "shed", "shed-time"}
)

type summary struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P99   float64 `json:"p99_ms"`
	Max   float64 `json:"max_ms"`
}

type point struct {
	Ms    int64 `json:"ms"`
	Limit int   `json:"limit,omitempty"`
	CPU   int   `json:"cpu,omitempty"`
	Hot   bool  `json:"hot,omitempty"`
}

type stats struct {
	Seconds        float64            `json:"seconds"`
	ByStatus       map[string]summary `json:"by_status"`
	BeforeByStatus map[string]summary `json:"before_by_status"`
	Trace          []point            `json:"trace"`
}

// Cell is one run: a protection under one load.
type Cell struct {
	Mode       string  `json:"mode"`
	Load       float64 `json:"load"`
	Rate       float64 `json:"rate"` // requests sent a second
	Seconds    float64 `json:"seconds"`
	LoadAvg    string  `json:"loadavg"` // /proc/loadavg when the cell started
	GoodputRPS float64 `json:"goodput_rps"`
	RefusedRPS float64 `json:"refused_rps"`
	Errors     int     `json:"client_errors"` // timeouts (2 s) and failed connections
	Admitted   summary `json:"admitted"`      // the service's view of its 200s
	Refused    summary `json:"refused"`       // its 503s and 429s
	// The client's view: from the request's scheduled instant to its response's last byte.
	ClientAdmitted summary `json:"client_admitted"`
	ClientRefused  summary `json:"client_refused"`
	// The wait from the driver's send to the handler's entry, as the service saw it: in the
	// kernel, in net/http and for the goroutine scheduler, before any protection could decide.
	BeforeAdmitted summary `json:"before_admitted"`
	BeforeRefused  summary `json:"before_refused"`
	// ServiceCPU is the CPU time the service was given over the measured seconds, in CPUs
	// (utime + stime of its /proc/PID/stat over the wall time; 0 where unknown): what the
	// machine let it have.
	ServiceCPU float64 `json:"service_cpu"`
	Trace      []point `json:"trace,omitempty"`
}

// result is one request as the client saw it.
type result struct {
	at   time.Duration // its scheduled instant, from the start of the run
	took time.Duration
	code int // 0: no answer
}

func main() {
	service := flag.String("service", "", "the example service's binary")
	out := flag.String("out", "loadtest/results", "results folder")
	seconds := flag.Int("seconds", 6, "measured seconds per cell")
	warmup := flag.Duration("warmup", 6*time.Second, "each open-loop cell's warm-up at its own rate before its figures are reset: long enough for every protection to settle (Knee from cold takes about 4 windows of 1 s; its cold start is a scenario of its own)")
	only := flag.String("only", "", "step: run only the CPU-bound step scenario; cells: only the open-loop cells of -modes at -loads; either prints one JSON line a run (no files written)")
	onlyModes := flag.String("modes", strings.Join(modes, ","), "with -only cells: the protections, comma-separated")
	onlyLoads := flag.String("loads", "0.5,1,2,4", "with -only cells: the loads, × capacity, comma-separated")
	stepModes := flag.String("step", strings.Join(stepModes, ","), "the protections of the step scenario, comma-separated")
	flag.Parse()
	if *service == "" {
		log.Fatal("driver: -service is required")
	}
	sec := time.Duration(*seconds) * time.Second
	steps := strings.Split(*stepModes, ",")
	if *only == "step" {
		for _, m := range steps {
			c := step(*service, []string{"-mode", "cpu", "-work", "5ms"}, m)
			b, _ := json.Marshal(c)
			fmt.Println(string(b))
		}
		return
	}
	if *only == "cells" {
		for _, m := range strings.Split(*onlyModes, ",") {
			for _, f := range strings.Split(*onlyLoads, ",") {
				l, err := strconv.ParseFloat(f, 64)
				must(err)
				b, _ := json.Marshal(cell(*service, nil, m, l, l*capacity, *warmup, sec))
				fmt.Println(string(b))
			}
		}
		return
	}
	var cells []Cell
	base := cell(*service, nil, "none", 0.25, capacity/4, *warmup, sec) // unloaded
	for _, m := range modes {
		for _, l := range loads {
			c := cell(*service, nil, m, l, l*capacity, *warmup, sec)
			log.Printf("%s %g×: goodput %.0f, admitted p99 %.1f ms, refused p99 %.2f ms (client %.2f), load %s", m, l, c.GoodputRPS, c.Admitted.P99, c.Refused.P99, c.ClientRefused.P99, c.LoadAvg)
			cells = append(cells, c)
		}
	}
	// Knee from cold: no warm-up, 4× from the first request.
	cold := cell(*service, nil, "knee", 4, 4*capacity, 0, 10*time.Second)
	// The CPU-bound service of one CPU: 5 ms of CPU a call, 1 s at 0.4× its nominal capacity (200
	// calls a second), then 4× for 10 s, from the first request.
	cpuArgs := []string{"-mode", "cpu", "-work", "5ms"}
	var stepCells []Cell
	for _, m := range steps {
		stepCells = append(stepCells, step(*service, cpuArgs, m))
	}
	must(os.MkdirAll(*out, 0o755))
	raw, err := json.MarshalIndent(map[string]any{"unloaded": base, "cells": cells, "knee_cold": cold, "cpu_step": stepCells}, "", " ")
	must(err)
	must(os.WriteFile(filepath.Join(*out, "raw.json"), raw, 0o644))
	must(os.WriteFile(filepath.Join(*out, "README.md"), []byte(report(base, cells, cold, stepCells, *seconds, *warmup)), 0o644))
	must(os.WriteFile(filepath.Join(*out, "loadtest.svg"), []byte(chart(cells)), 0o644))
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}

func freePort() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(err)
	defer l.Close()
	return l.Addr().String()
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

// start runs the service and waits until it answers.
func start(service string, args []string, mode string) (*exec.Cmd, string) {
	addr := freePort()
	protect, cpu, _ := strings.Cut(mode, "-")
	if cpu != "" {
		args = append(slices.Clip(args), "-cpu", cpu)
	}
	cmd := exec.Command(service, append([]string{"-addr", addr, "-protect", protect}, args...)...)
	cmd.Stderr = io.Discard
	if slices.Contains(args, "cpu") {
		cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	}
	must(cmd.Start())
	for i := 0; i < 200; i++ {
		if r, err := http.Get("http://" + addr + "/stats"); err == nil {
			r.Body.Close()
			return cmd, addr
		}
		time.Sleep(25 * time.Millisecond)
	}
	log.Fatalf("driver: service %s did not start", mode)
	return nil, ""
}

var client = &http.Client{
	Timeout:   2 * time.Second,
	Transport: &http.Transport{MaxIdleConns: 20000, MaxIdleConnsPerHost: 20000, IdleConnTimeout: time.Minute},
}

// drive sends requests to url at rate(t) a second for d, open-loop: each request leaves at its
// scheduled instant on a goroutine of its own, and its latency is counted from that instant, so a
// client that could not send on time (a slow machine) counts the delay against the server rather
// than hiding it.
func drive(url string, rate func(time.Duration) float64, d time.Duration) []result {
	var mu sync.Mutex
	var res []result
	var wg sync.WaitGroup
	t0 := time.Now()
	for at := time.Duration(0); at < d; at += time.Duration(float64(time.Second) / rate(at)) {
		if wait := time.Until(t0.Add(at)); wait > 0 {
			time.Sleep(wait)
		}
		wg.Add(1)
		go func(at time.Duration) {
			defer wg.Done()
			code := 0
			req, err := http.NewRequest(http.MethodGet, url, nil)
			must(err)
			req.Header.Set("X-Sent-Unix-Nano", strconv.FormatInt(time.Now().UnixNano(), 10))
			if r, err := client.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, r.Body)
				r.Body.Close()
				code = r.StatusCode
			}
			took := time.Since(t0) - at
			mu.Lock()
			res = append(res, result{at, took, code})
			mu.Unlock()
		}(at)
	}
	wg.Wait()
	return res
}

func summarize(v []time.Duration) summary {
	if len(v) == 0 {
		return summary{}
	}
	slices.Sort(v)
	q := func(p float64) float64 {
		return float64(v[min(int(p*float64(len(v))), len(v)-1)]) / float64(time.Millisecond)
	}
	return summary{len(v), q(0.5), q(0.9), q(0.99), float64(v[len(v)-1]) / float64(time.Millisecond)}
}

// serverStats reads the service's figures, trying for up to a minute: an overloaded service may
// take long to accept a connection. It returns empty figures if the service never answers.
func serverStats(addr string) stats {
	c := &http.Client{Timeout: 10 * time.Second}
	for i := 0; i < 6; i++ {
		r, err := c.Get("http://" + addr + "/stats")
		if err != nil {
			continue
		}
		var st stats
		err = json.NewDecoder(r.Body).Decode(&st)
		r.Body.Close()
		if err == nil {
			return st
		}
	}
	log.Printf("driver: no figures from the service at %s", addr)
	return stats{}
}

// fill completes a cell from the client's results and the server's stats.
func fill(c *Cell, res []result, st stats, from time.Duration) {
	var adm, ref []time.Duration
	for _, r := range res {
		switch {
		case r.at < from:
		case r.code == 200:
			adm = append(adm, r.took)
		case r.code == 503 || r.code == 429:
			ref = append(ref, r.took)
		default:
			c.Errors++
		}
	}
	c.GoodputRPS = float64(len(adm)) / c.Seconds
	c.RefusedRPS = float64(len(ref)) / c.Seconds
	c.ClientAdmitted, c.ClientRefused = summarize(adm), summarize(ref)
	c.Admitted = st.ByStatus["200"]
	c.Refused = st.ByStatus["503"]
	c.BeforeAdmitted = st.BeforeByStatus["200"]
	c.BeforeRefused = st.BeforeByStatus["503"]
	if s := st.ByStatus["429"]; s.Count > c.Refused.Count {
		c.Refused = s
		c.BeforeRefused = st.BeforeByStatus["429"]
	}
}

// cpuSeconds is the CPU time of process pid (utime + stime of /proc/PID/stat, in clock ticks of
// 1/100 s); false where it cannot tell.
func cpuSeconds(pid int) (float64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseFloat(f[11], 64)
	k, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return (u + k) / 100, true
}

// cell runs one protection at one constant rate: warm-up, then a reset of the service's figures,
// then the measured seconds.
func cell(service string, args []string, mode string, load, rate float64, warm, d time.Duration) Cell {
	cmd, addr := start(service, args, mode)
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	url := "http://" + addr + "/work"
	c := Cell{Mode: mode, Load: load, Rate: rate, Seconds: d.Seconds(), LoadAvg: loadavg()}
	constant := func(time.Duration) float64 { return rate }
	if warm > 0 {
		drive(url, constant, warm)
		r, err := http.Get("http://" + addr + "/reset")
		must(err)
		r.Body.Close()
	}
	res := drive(url, constant, d)
	st := serverStats(addr)
	fill(&c, res, st, 0)
	if warm == 0 {
		c.Trace = st.Trace
	}
	return c
}

// step runs the CPU-bound service: 1 s at 0.4× its nominal capacity, then 4× for 10 s; the
// figures (the client's, the service's and its CPU time) are of the last 5 s, the trace of the
// whole run; the client's first refusal after the step is the shedder's time to hot.
func step(service string, args []string, mode string) Cell {
	const nominal = 200.0
	cmd, addr := start(service, args, mode)
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	c := Cell{Mode: mode, Load: 4, Rate: 4 * nominal, Seconds: 5, LoadAvg: loadavg()}
	// At 6 s the service's figures restart (its trace goes on) and its CPU time is read, so both
	// cover the same last 5 s as the client's figures.
	var cpu [2]float64
	var cpuOK [2]bool
	var mu sync.Mutex
	from := time.AfterFunc(6*time.Second, func() {
		v, ok := cpuSeconds(cmd.Process.Pid)
		mu.Lock()
		cpu[0], cpuOK[0] = v, ok
		mu.Unlock()
		if r, err := http.Get("http://" + addr + "/reset?keep-trace"); err == nil {
			r.Body.Close()
		}
	})
	defer from.Stop()
	to := time.AfterFunc(11*time.Second, func() {
		v, ok := cpuSeconds(cmd.Process.Pid)
		mu.Lock()
		cpu[1], cpuOK[1] = v, ok
		mu.Unlock()
	})
	defer to.Stop()
	res := drive("http://"+addr+"/work", func(at time.Duration) float64 {
		if at < time.Second {
			return 0.4 * nominal
		}
		return 4 * nominal
	}, 11*time.Second)
	mu.Lock()
	if cpuOK[0] && cpuOK[1] {
		c.ServiceCPU = (cpu[1] - cpu[0]) / c.Seconds
	}
	mu.Unlock()
	st := serverStats(addr)
	fill(&c, res, st, 6*time.Second)
	c.Trace = st.Trace
	hot := time.Duration(-1)
	for _, r := range res {
		if r.at >= time.Second && (r.code == 503 || r.code == 429) && (hot < 0 || r.at < hot) {
			hot = r.at
		}
	}
	hotMs := int64(-1)
	if hot >= 0 {
		hotMs = int64((hot - time.Second) / time.Millisecond)
	}
	c.Trace = append([]point{{Ms: hotMs}}, c.Trace...)
	return c
}

// coldSettle is when the limit last entered [lo, hi] for good, in seconds; -1 if it ends outside.
func coldSettle(tr []point, lo, hi int) float64 {
	at := -1.0
	for _, p := range tr {
		if p.Limit < lo || p.Limit > hi {
			at = -1
		} else if at < 0 {
			at = float64(p.Ms) / 1000
		}
	}
	return at
}

// limits lists the distinct limits a trace went through, in order.
func limits(tr []point) []int {
	var out []int
	for _, p := range tr {
		if len(out) == 0 || out[len(out)-1] != p.Limit {
			out = append(out, p.Limit)
		}
	}
	return out
}

func report(base Cell, cells []Cell, cold Cell, steps []Cell, seconds int, warmup time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Load test: the example service, open loop\n\n")
	fmt.Fprintf(&b, "Generated by `make loadtest` (loadtest/run.sh) on %s, %d cores, %s, %s. Load average (1, 5, 15 min) when each cell started is in its row: figures taken beside a busy neighbour are not the service's alone.\n\n", time.Now().UTC().Format("2006-01-02 15:04Z"), runtime.NumCPU(), runtime.Version(), runtime.GOARCH)
	fmt.Fprintf(&b, "The service (loadtest/service, `-mode pool`): net/http, a pool of 20 worker slots, 50 ms a call: a capacity of %.0f calls a second. The driver (loadtest/driver, a separate process, loopback, the standard library only) sends requests at a constant arrival rate, each on its own goroutine whether or not earlier ones were answered (open loop: a queue at the server grows as it would with real users), with a 2 s client timeout. Each cell: a fresh service, %.0f s of warm-up at the cell's own rate (every protection settled: Knee from a cold start takes about four windows of 1 s, and its cold start is measured on its own below), %d s measured. Server latencies are the service's own, per status, from its outermost handler's entry to its return; client latencies run from each request's scheduled instant to its response's last byte, so a driver that fell behind counts the delay against the server.\n\n", capacity, warmup.Seconds(), seconds)
	fmt.Fprintf(&b, "Unloaded (0.25×, unprotected): p50 %.1f ms, p99 %.1f ms (server) of %d calls. The bar at 4×: goodput ≥ %.0f rps (90%% of capacity), admitted p99 ≤ %.1f ms (2× unloaded), refusal p99 at the client ≤ 5 ms.\n\n",
		base.Admitted.P50, base.Admitted.P99, base.Admitted.Count, 0.9*capacity, 2*base.Admitted.P99)
	b.WriteString("| protection | load | rate | goodput rps | goodput / capacity | admitted p50 ms (server) | admitted p99 ms (server) | admitted p99 ms (client) | refused rps | refused p99 ms (server) | refused p99 ms (client) | client errors | load avg | 4× bar |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range cells {
		bar := ""
		if c.Load == 4 {
			var miss []string
			if c.GoodputRPS < 0.9*capacity {
				miss = append(miss, "goodput")
			}
			if c.Admitted.P99 > 2*base.Admitted.P99 {
				miss = append(miss, "admitted p99")
			}
			if c.ClientRefused.Count > 0 && c.ClientRefused.P99 > 5 {
				miss = append(miss, "refusal p99")
			}
			bar = "met"
			if len(miss) > 0 {
				bar = "not met: " + strings.Join(miss, ", ")
			}
		}
		fmt.Fprintf(&b, "| %s | %g× | %.0f | %.0f | %.0f%% | %.1f | %.1f | %.1f | %.0f | %.2f | %.2f | %d | %s | %s |\n",
			c.Mode, c.Load, c.Rate, c.GoodputRPS, 100*c.GoodputRPS/capacity, c.Admitted.P50, c.Admitted.P99, c.ClientAdmitted.P99, c.RefusedRPS, c.Refused.P99, c.ClientRefused.P99, c.Errors, c.LoadAvg, bar)
	}
	b.WriteString("\n![goodput and admitted p99 by load](loadtest.svg)\n\n")
	fmt.Fprintf(&b, "## Knee from a cold start\n\nA fresh service under Knee at 4× from its first request (no warm-up), %.0f s, load average %s: the limit went through %v (every 100 ms, distinct values in order; the pool has 20 slots) and lay within [15, 40] for good from %.1f s on (-1: it ended outside); goodput %.0f rps over the run, admitted p99 %.1f ms (server).\n\n",
		cold.Seconds, cold.LoadAvg, limits(cold.Trace), coldSettle(cold.Trace, 15, 40), cold.GoodputRPS, cold.Admitted.P99)
	b.WriteString("## The shedder on a CPU-bound service: a step overload\n\n")
	b.WriteString("The service in `-mode cpu`: each call computes for 5 ms of CPU, GOMAXPROCS=1 (a server of one CPU), nominal capacity 200 calls a second (less the HTTP work). `shed` reads the CPU with shed's own sampler and its preset (the CPU time the process's threads used and waited for on the kernel's run queues, over GOMAXPROCS CPUs); `shed-time` with the same sampler reading the process's CPU time alone (CPUPolicy.Queued false), which stays under the threshold when other load on the machine keeps the process from a whole core. The driver sends 0.4× capacity for 1 s, so the sampler's first readings are low, then 4× (800 a second) for 10 s. Time to hot: from the step to the first refusal the client saw. All figures are of the last 5 s. The server's own: from its outermost handler's entry to its return; before the handler: from the driver's send (a header stamped with the machine's clock) to the handler's entry, the time a request waits in the kernel, in net/http and for the goroutine scheduler, before any protection can decide. Service CPU: the CPU time the machine gave the service, in CPUs; goodput per service CPU tells the server's efficiency from the machine's share.\n\n")
	b.WriteString("| protection | time to hot | goodput rps | service CPU | goodput per CPU | admitted p99 ms (client) | refused rps | refused p50 ms (client) | refused p99 ms (client) | refused p50 / p99 ms before the handler | refused p99 ms (server) | client errors | load avg |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range steps {
		hot := "never"
		if len(c.Trace) > 0 && c.Trace[0].Ms >= 0 {
			hot = fmt.Sprintf("%d ms", c.Trace[0].Ms)
		}
		perCPU := "-"
		if c.ServiceCPU > 0 {
			perCPU = fmt.Sprintf("%.0f", c.GoodputRPS/c.ServiceCPU)
		}
		fmt.Fprintf(&b, "| %s | %s | %.0f | %.2f | %s | %.1f | %.0f | %.2f | %.2f | %.1f / %.1f | %.2f | %d | %s |\n", c.Mode, hot, c.GoodputRPS, c.ServiceCPU, perCPU, c.ClientAdmitted.P99, c.RefusedRPS, c.ClientRefused.P50, c.ClientRefused.P99, c.BeforeRefused.P50, c.BeforeRefused.P99, c.Refused.P99, c.Errors, c.LoadAvg)
	}
	return b.String()
}

// chart draws two panels: goodput by load, and admitted p99 by load (log scale), one line per
// protection.
func chart(cells []Cell) string {
	const w, h, pad = 460, 300, 50
	colors := map[string]string{"none": "#d62728", "vegas": "#1f77b4", "gradient": "#2ca02c", "aimd": "#9467bd", "knee": "#17becf", "shed": "#ff7f0e"}
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
