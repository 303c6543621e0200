// Command service is the example service of the load test: a net/http server whose work is done
// by a bounded worker pool (-mode pool: 20 slots, 50 ms a call, a capacity of 400 calls a second)
// or by the CPU (-mode cpu: each call computes for -work of CPU time; run it with GOMAXPROCS=1
// for a server of one CPU), protected by one of ward's middlewares or by nothing. It records the
// latency of every response by status, from the moment the request reaches the server's
// outermost handler to the moment that handler returns, and serves them at /stats (reset at
// /reset) with a trace of the protection's state every 100 ms (the adaptive limit, or the
// shedder's CPU reading and heat), so a driver can tell admitted calls from refused ones. It
// listens on loopback only.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime/metrics"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/wardgo/ward/adaptive"
	"github.com/wardgo/ward/shed"
	"github.com/wardgo/ward/wardhttp"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8089", "loopback address to listen on")
	protect := flag.String("protect", "none", "none, vegas, gradient, aimd, knee or shed")
	mode := flag.String("mode", "pool", "pool (a worker pool) or cpu (CPU-bound work)")
	cpuRead := flag.String("cpu", "process", "the shedder's CPU reading: process (shed's own sampler, its preset: the process's own time over GOMAXPROCS CPUs, with the time its threads waited for a CPU), time (shed's sampler reading the process's own time alone), or sched (the share of 10 ms ticks that find a goroutine waiting for a P)")
	workers := flag.Int("workers", 20, "worker slots (-mode pool)")
	work := flag.Duration("work", 50*time.Millisecond, "time a call holds its slot (-mode pool), or CPU time a call computes (-mode cpu)")
	flag.Parse()

	var h http.Handler
	switch *mode {
	case "pool":
		pool := make(chan struct{}, *workers)
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case pool <- struct{}{}:
			case <-r.Context().Done():
				return
			}
			time.Sleep(*work) // the work: a call holds one of the pool's slots for this long
			<-pool
			answered(r, http.StatusOK)
			_, _ = w.Write([]byte("ok\n"))
		})
	case "cpu":
		rounds := calibrate(*work)
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			sink.Add(spin(rounds)) // the work: CPU only, as a handler that computes its answer
			answered(r, http.StatusOK)
			_, _ = w.Write([]byte("ok\n"))
		})
	default:
		log.Fatalf("unknown mode %q", *mode)
	}
	st := &stats{byStatus: map[int][]int32{}, beforeByStatus: map[int][]int32{}, start: time.Now()}
	mw, err := protection(*protect, *cpuRead, st)
	if err != nil {
		log.Fatal(err)
	}
	if mw != nil {
		h = mw(h)
	}
	mux := http.NewServeMux()
	mux.Handle("/work", st.record(h))
	mux.HandleFunc("/stats", st.serve)
	mux.HandleFunc("/reset", st.reset)
	srv := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	fmt.Fprintln(os.Stderr, "service: listening on", *addr, "protect", *protect)
	log.Fatal(srv.ListenAndServe())
}

// sink keeps the spin's result alive, so the compiler cannot drop the work.
var sink atomic.Uint64

// spin runs n rounds of a small hash: pure CPU, no allocation.
func spin(n int) uint64 {
	x := uint64(0x9e3779b97f4a7c15)
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}

// calibrate returns how many rounds of spin take d of CPU on this machine, measured over 200 ms of
// the process's own CPU time (not wall time: on a busy machine the process is off the CPU part of
// the time) before the server starts.
func calibrate(d time.Duration) int {
	n, start := 0, cpuTime()
	for cpuTime()-start < 200*time.Millisecond {
		sink.Add(spin(10000))
		n += 10000
	}
	return int(float64(n) * float64(d) / float64(cpuTime()-start))
}

// cpuTime is the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		log.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// protection is the middleware each mode puts in front of the work; it traces the protection's
// state into st every 100 ms.
func protection(mode, cpuRead string, st *stats) (wardhttp.Middleware, error) {
	switch mode {
	case "none":
		return nil, nil
	case "vegas", "gradient", "aimd", "knee":
		var rule adaptive.Rule
		var err error
		switch mode {
		case "vegas":
			rule, err = adaptive.NewVegas(adaptive.DefaultVegas(), rand.Float64)
		case "gradient":
			rule, err = adaptive.NewGradient(adaptive.DefaultGradient())
		case "knee":
			rule, err = adaptive.NewKnee(adaptive.DefaultKnee())
		default:
			rule, err = adaptive.NewAIMD(adaptive.DefaultAIMD())
		}
		if err != nil {
			return nil, err
		}
		l, err := adaptive.New(rule)
		if err != nil {
			return nil, err
		}
		go st.trace(func() Point { return Point{Limit: l.Limit()} })
		return wardhttp.Limit(l, wardhttp.WithRefuse(refuse))
	case "shed":
		opts := []shed.Option{}
		switch cpuRead {
		case "process":
		case "time":
			p := shed.DefaultCPUPolicy()
			p.Queued = false
			c, err := shed.NewCPUWith(p)
			if err != nil {
				return nil, err
			}
			opts = append(opts, shed.WithCPU(c.Read))
		case "sched":
			opts = append(opts, shed.WithCPU(schedCPU()))
		default:
			return nil, fmt.Errorf("unknown CPU reading %q", cpuRead)
		}
		s, err := shed.New(opts...)
		if err != nil {
			return nil, err
		}
		go st.trace(func() Point { snap := s.Snapshot(); return Point{CPU: snap.CPU, Hot: snap.Hot} })
		return wardhttp.Shed(s, wardhttp.WithRefuse(refuse))
	}
	return nil, fmt.Errorf("unknown protection %q", mode)
}

// schedCPU is a CPU reading from the Go scheduler's view, for a machine whose other load keeps
// this process from the CPU time its GOMAXPROCS allows (a process's own time then never reads
// hot): every 10 ms it asks the runtime whether a goroutine is waiting for a P, and every 250 ms
// it folds the share of ticks that found one, in thousandths, through shed's own arithmetic
// (shed.CPUAverage with the preset). A tick delayed because the P is busy still counts.
func schedCPU() func() int {
	avg, err := shed.NewCPUAverage(shed.DefaultCPUPolicy())
	if err != nil {
		log.Fatal(err)
	}
	var v atomic.Int64
	v.Store(-1)
	go func() {
		s := []metrics.Sample{{Name: "/sched/goroutines/runnable:goroutines"}}
		busy, n, last := 0, 0, time.Now()
		for now := range time.Tick(10 * time.Millisecond) {
			metrics.Read(s)
			n++
			if s[0].Value.Kind() == metrics.KindUint64 && s[0].Value.Uint64() > 0 {
				busy++
			}
			if now.Sub(last) >= 250*time.Millisecond {
				v.Store(int64(avg.Add(1000 * float64(busy) / float64(n))))
				busy, n, last = 0, 0, now
			}
		}
	}()
	return func() int { return int(v.Load()) }
}

// Point is the protection's state at one instant, milliseconds since the last reset.
type Point struct {
	Ms    int64 `json:"ms"`
	Limit int   `json:"limit,omitempty"`
	CPU   int   `json:"cpu,omitempty"`
	Hot   bool  `json:"hot,omitempty"`
}

// trace records read() every 100 ms, for the life of the process.
func (st *stats) trace(read func() Point) {
	for range time.Tick(100 * time.Millisecond) {
		p := read()
		st.mu.Lock()
		p.Ms = time.Since(st.start).Milliseconds()
		st.points = append(st.points, p)
		st.mu.Unlock()
	}
}

// stats keeps every response's latency, in microseconds, by status.
type stats struct {
	mu       sync.Mutex
	byStatus map[int][]int32
	// beforeByStatus is, by status, how long each request waited between the driver sending it
	// and the handler's entry, in microseconds.
	beforeByStatus map[int][]int32
	start          time.Time
	points         []Point
}

// codeKey is the context key of the status a request was answered with: the work handler and the
// refusal handler set it, the stats wrapper reads it, so no writer needs wrapping.
type codeKey struct{}

// answered records the status r was answered with.
func answered(r *http.Request, code int) {
	if p, ok := r.Context().Value(codeKey{}).(*int); ok {
		*p = code
	}
}

// refuse is wardhttp's refusal, recorded.
func refuse(w http.ResponseWriter, r *http.Request, ref wardhttp.Refusal) {
	answered(r, ref.Status)
	wardhttp.Refuse(w, r, ref)
}

// sentHeader carries the instant the driver sent a request, in Unix nanoseconds: the driver and
// the service share the machine's clock, so the service can tell how long a request waited before
// its handler ran (in the kernel, in net/http, and for the goroutine scheduler).
const sentHeader = "X-Sent-Unix-Nano"

func (st *stats) record(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t0 := time.Now()
		before := int32(-1)
		if sent, err := strconv.ParseInt(r.Header.Get(sentHeader), 10, 64); err == nil {
			before = int32(max(t0.UnixNano()-sent, 0) / int64(time.Microsecond))
		}
		code := 499 // the client went away before an answer
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), codeKey{}, &code)))
		us := int32(time.Since(t0) / time.Microsecond)
		st.mu.Lock()
		st.byStatus[code] = append(st.byStatus[code], us)
		if before >= 0 {
			st.beforeByStatus[code] = append(st.beforeByStatus[code], before)
		}
		st.mu.Unlock()
	})
}

// reset clears the figures, and the trace with its clock unless the query says keep-trace.
func (st *stats) reset(w http.ResponseWriter, r *http.Request) {
	st.mu.Lock()
	st.byStatus = map[int][]int32{}
	st.beforeByStatus = map[int][]int32{}
	if !r.URL.Query().Has("keep-trace") {
		st.start = time.Now()
		st.points = nil
	}
	st.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// Summary is one status's count and latency percentiles, in milliseconds.
type Summary struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P99   float64 `json:"p99_ms"`
	Max   float64 `json:"max_ms"`
}

func (st *stats) serve(w http.ResponseWriter, _ *http.Request) {
	st.mu.Lock()
	out := struct {
		Seconds  float64         `json:"seconds"`
		ByStatus map[int]Summary `json:"by_status"`
		// BeforeByStatus: the wait between the driver's send and the handler's entry.
		BeforeByStatus map[int]Summary `json:"before_by_status"`
		Trace          []Point         `json:"trace"`
	}{time.Since(st.start).Seconds(), map[int]Summary{}, map[int]Summary{}, slices.Clone(st.points)}
	for code, v := range st.byStatus {
		out.ByStatus[code] = summarize(v)
	}
	for code, v := range st.beforeByStatus {
		out.BeforeByStatus[code] = summarize(v)
	}
	st.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// summarize sorts a copy of v (microseconds) and returns its count and percentiles.
func summarize(v []int32) Summary {
	s := slices.Clone(v)
	slices.Sort(s)
	q := func(p float64) float64 { return float64(s[min(int(p*float64(len(s))), len(s)-1)]) / 1000 }
	return Summary{len(s), q(0.5), q(0.9), q(0.99), float64(s[len(s)-1]) / 1000}
}
