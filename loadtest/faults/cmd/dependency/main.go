// Command dependency is the harness's HTTP dependency: one server per port on loopback, each
// following the same fault scenario from the same start instant (faults.Scenario.ModeAt), so that
// every client under test has a dependency of its own. Down closes the listeners and drops open
// connections (callers see connection refused); the other faults are in the answers
// (faults.Scenario.Answer). It prints "ready" once every port listens, serves until the
// scenario's end (or SIGINT), then prints the requests each port received, a JSON array of
// faults.Series (one per port, in the order given, the requests in the Sent field).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/wardgo/ward/loadtest/faults"
)

func main() {
	name := flag.String("scenario", "down", "the scenario's name (faults.Scenarios)")
	short := flag.Bool("short", false, "the short scenarios (a smoke run)")
	ports := flag.String("ports", "", "comma-separated loopback ports, one server each")
	start := flag.Int64("start", 0, "the scenario's start, Unix nanoseconds")
	flag.Parse()
	if err := run(*name, *short, *ports, *start); err != nil {
		fmt.Fprintln(os.Stderr, "dependency:", err)
		os.Exit(1)
	}
}

// port is one server on a fixed port, which can be taken down and brought back.
type port struct {
	addr string
	s    faults.Scenario
	t0   time.Time
	rec  *faults.Recorder
	mu   sync.Mutex
	srv  *http.Server
}

func (p *port) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d := time.Since(p.t0)
	p.rec.Add(d, faults.Sent)
	a := p.s.Answer(p.s.ModeAt(d), rand.Float64())
	if a.Status == 0 {
		panic(http.ErrAbortHandler) // down: drop the connection
	}
	t := time.NewTimer(a.Delay)
	select {
	case <-t.C:
	case <-r.Context().Done(): // the client gave up
		t.Stop()
		return
	}
	if a.RetryAfter != "" {
		w.Header().Set("Retry-After", a.RetryAfter)
	}
	w.WriteHeader(a.Status)
	_, _ = w.Write([]byte(http.StatusText(a.Status)))
}

// up listens again; the port may need a moment after a close, so it tries for a second.
func (p *port) up() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.srv != nil {
		return nil
	}
	var ln net.Listener
	var err error
	for i := 0; i < 100; i++ {
		if ln, err = net.Listen("tcp", p.addr); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 5 * time.Second, ErrorLog: nil}
	p.srv = srv
	go func() { _ = srv.Serve(ln) }()
	return nil
}

// down closes the listener and every connection.
func (p *port) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.srv != nil {
		_ = p.srv.Close()
		p.srv = nil
	}
}

func run(name string, short bool, list string, start int64) error {
	s, ok := faults.Find(faults.Scenarios(short), name)
	if !ok {
		return fmt.Errorf("no scenario %q", name)
	}
	if start == 0 {
		return errors.New("-start is required")
	}
	t0 := time.Unix(0, start)
	var ps []*port
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 || n > 65535 {
			return fmt.Errorf("-ports: %q is not a port", f)
		}
		p := &port{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(n)), s: s, t0: t0,
			rec: faults.NewRecorder(s.Total() + faults.CallTimeout)}
		if err := p.up(); err != nil {
			return err
		}
		ps = append(ps, p)
	}
	fmt.Println("ready")
	sig, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithDeadline(sig, t0.Add(s.Total()+faults.CallTimeout))
	defer cancel()
	for _, c := range s.Changes() {
		t := time.NewTimer(time.Until(t0.Add(c)))
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
		if ctx.Err() != nil {
			break
		}
		for _, p := range ps {
			if s.ModeAt(c) == faults.Down {
				p.down()
			} else if err := p.up(); err != nil {
				return fmt.Errorf("%s at %v: %w", p.addr, c, err)
			}
		}
	}
	<-ctx.Done()
	out := make([]faults.Series, len(ps))
	for i, p := range ps {
		p.down()
		out[i] = p.rec.Series(p.addr)
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}
