// Command service is the example service of the load test: a net/http server whose work is done
// by a bounded worker pool (20 slots, 50 ms a call: a capacity of 400 calls a second), protected
// by one of ward's middlewares or by nothing. It records the latency of every response by status,
// from the moment the request reaches the server's outermost handler to the moment that handler
// returns, and serves them at /stats (reset at /reset), so a driver can tell admitted calls from
// refused ones. It listens on loopback only.
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
	"slices"
	"sync"
	"time"

	"github.com/wardgo/ward/adaptive"
	"github.com/wardgo/ward/shed"
	"github.com/wardgo/ward/wardhttp"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8089", "loopback address to listen on")
	protect := flag.String("protect", "none", "none, vegas, gradient, aimd or shed")
	workers := flag.Int("workers", 20, "worker slots")
	work := flag.Duration("work", 50*time.Millisecond, "time a call holds its slot")
	flag.Parse()

	pool := make(chan struct{}, *workers)
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
	mw, err := protection(*protect)
	if err != nil {
		log.Fatal(err)
	}
	if mw != nil {
		h = mw(h)
	}
	st := &stats{byStatus: map[int][]int32{}, start: time.Now()}
	mux := http.NewServeMux()
	mux.Handle("/work", st.record(h))
	mux.HandleFunc("/stats", st.serve)
	mux.HandleFunc("/reset", st.reset)
	srv := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	fmt.Fprintln(os.Stderr, "service: listening on", *addr, "protect", *protect)
	log.Fatal(srv.ListenAndServe())
}

// protection is the middleware each mode puts in front of the pool.
func protection(mode string) (wardhttp.Middleware, error) {
	switch mode {
	case "none":
		return nil, nil
	case "vegas", "gradient", "aimd":
		var rule adaptive.Rule
		var err error
		switch mode {
		case "vegas":
			rule, err = adaptive.NewVegas(adaptive.DefaultVegas(), rand.Float64)
		case "gradient":
			rule, err = adaptive.NewGradient(adaptive.DefaultGradient())
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
		return wardhttp.Limit(l, wardhttp.WithRefuse(refuse))
	case "shed":
		s, err := shed.New()
		if err != nil {
			return nil, err
		}
		return wardhttp.Shed(s, wardhttp.WithRefuse(refuse))
	}
	return nil, fmt.Errorf("unknown protection %q", mode)
}

// stats keeps every response's latency, in microseconds, by status.
type stats struct {
	mu       sync.Mutex
	byStatus map[int][]int32
	start    time.Time
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

func (st *stats) record(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t0 := time.Now()
		code := 499 // the client went away before an answer
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), codeKey{}, &code)))
		us := int32(time.Since(t0) / time.Microsecond)
		st.mu.Lock()
		st.byStatus[code] = append(st.byStatus[code], us)
		st.mu.Unlock()
	})
}

func (st *stats) reset(w http.ResponseWriter, _ *http.Request) {
	st.mu.Lock()
	st.byStatus = map[int][]int32{}
	st.start = time.Now()
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
	}{time.Since(st.start).Seconds(), map[int]Summary{}}
	for code, v := range st.byStatus {
		s := slices.Clone(v)
		slices.Sort(s)
		q := func(p float64) float64 { return float64(s[min(int(p*float64(len(s))), len(s)-1)]) / 1000 }
		out.ByStatus[code] = Summary{len(s), q(0.5), q(0.9), q(0.99), float64(s[len(s)-1]) / 1000}
	}
	st.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}
