package wardhttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wardgo/ward"
	"github.com/wardgo/ward/adaptive"
	"github.com/wardgo/ward/breaker"
	"github.com/wardgo/ward/retry"
)

// bound is how long a test waits for an event that must come (a request reaching the server, a
// call returning); only a broken Transport makes it pass.
const bound = 10 * time.Second

// hostServer starts a real server that every host name reaches: base dials it whatever the
// URL's host, so "a.test" and "b.test" are two hosts to the Transport, each with its breaker.
func hostServer(t *testing.T, h http.HandlerFunc) *http.Transport {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	t.Cleanup(srv.CloseClientConnections) // first: a handler still hung when a test fails ends
	addr := srv.Listener.Addr().String()
	base := &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
	t.Cleanup(base.CloseIdleConnections)
	return base
}

// fakeTimers stands in for time.AfterFunc: a timer fires only when the test says so.
type fakeTimers struct {
	mu sync.Mutex
	ts []*fakeTimer
}

type fakeTimer struct {
	mu   sync.Mutex
	d    time.Duration
	f    func()
	done bool // stopped or fired
}

func (ft *fakeTimers) after(d time.Duration, f func()) func() bool {
	tm := &fakeTimer{d: d, f: f}
	ft.mu.Lock()
	ft.ts = append(ft.ts, tm)
	ft.mu.Unlock()
	return func() bool {
		tm.mu.Lock()
		defer tm.mu.Unlock()
		if tm.done {
			return false
		}
		tm.done = true
		return true
	}
}

// fire runs timer i's function, as time.AfterFunc would, unless it was stopped; it says whether
// it ran.
func (ft *fakeTimers) fire(t *testing.T, i int) bool {
	t.Helper()
	ft.mu.Lock()
	if i >= len(ft.ts) {
		ft.mu.Unlock()
		t.Fatalf("timer %d was never started (%d were)", i, len(ft.ts))
	}
	tm := ft.ts[i]
	ft.mu.Unlock()
	tm.mu.Lock()
	if tm.done {
		tm.mu.Unlock()
		return false
	}
	tm.done = true
	tm.mu.Unlock()
	tm.f()
	return true
}

func (ft *fakeTimers) started() []time.Duration {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	var ds []time.Duration
	for _, tm := range ft.ts {
		ds = append(ds, tm.d)
	}
	return ds
}

func (ft *fakeTimers) option() TransportOption {
	return func(c *transportConfig) error { c.after = ft.after; return nil }
}

// wait receives from ch within bound, or fails the test saying what did not come.
func wait[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(bound):
		t.Fatalf("%s did not come within %v", what, bound)
		panic("unreachable")
	}
}

type result struct {
	resp *http.Response
	body string
	err  error
}

// call gets url through client on a goroutine of its own, reading the whole body.
func call(ctx context.Context, client *http.Client, url string) <-chan result {
	ch := make(chan result, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
		resp, err := client.Do(req)
		r := result{resp: resp, err: err}
		if err == nil {
			b, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			r.body = string(b)
			if rerr != nil {
				r.err = rerr
			}
		}
		ch <- r
	}()
	return ch
}

// clockAt is a breaker clock the test moves.
type clockAt struct{ atomic.Int64 }

func (c *clockAt) now() int64 { return c.Load() }

// TestTransportAttemptTimeout: an attempt whose headers do not come within the attempt timeout
// is abandoned (the server sees the request canceled), counts as a failure on the host's breaker
// and is retried; the retry answers.
func TestTransportAttemptTimeout(t *testing.T) {
	arrived := make(chan int, 4)
	abandoned := make(chan struct{})
	var n atomic.Int32
	base := hostServer(t, func(w http.ResponseWriter, r *http.Request) {
		i := int(n.Add(1))
		arrived <- i
		if i == 1 {
			<-r.Context().Done() // hung until the client gives the attempt up
			close(abandoned)
			return
		}
		io.WriteString(w, "attempt "+strconv.Itoa(i))
	})
	var ft fakeTimers
	var s sleeps
	var clk clockAt
	clk.Store(int64(time.Hour))
	tr, err := NewTransport(base, WithAttemptTimeout(3*time.Second), ft.option(),
		WithRetryOptions(retry.WithSleep(s.sleep), retry.WithRand(func() float64 { return 0.5 })),
		WithBreaker(breaker.WithClock(clk.now), breaker.WithRefresh(0)))
	if err != nil {
		t.Fatal(err)
	}
	done := call(context.Background(), &http.Client{Transport: tr}, "http://backend.test/x")
	wait(t, arrived, "attempt 1")
	if !ft.fire(t, 0) {
		t.Fatal("attempt 1's timer was stopped before its headers came")
	}
	r := wait(t, done, "the call's answer")
	if r.err != nil || r.resp.StatusCode != 200 || r.body != "attempt 2" {
		t.Fatalf("got %v %q, err %v; want attempt 2's 200", r.resp, r.body, r.err)
	}
	wait(t, abandoned, "attempt 1's cancellation at the server")
	if got := ft.started(); !slices.Equal(got, []time.Duration{3 * time.Second, 3 * time.Second}) {
		t.Fatalf("attempt timers %v, want two of 3s", got)
	}
	if sn := tr.Breaker("backend.test").Snapshot(); sn.Failures != 1 || sn.Successes != 1 {
		t.Fatalf("breaker saw %d failures, %d successes; want the timeout as 1 failure and 1 success", sn.Failures, sn.Successes)
	}
	if len(s) != 1 || s[0] != 100*time.Millisecond {
		t.Fatalf("waits %v, want the backoff's first (100ms)", s)
	}
	if got := tr.Budget().Tokens(); got != DefaultRetryTokens-1+DefaultRetryRatio {
		t.Fatalf("budget %v, want a token taken by the timeout and a tenth given back", got)
	}
}

// TestTransportAttemptTimeoutEvery: with a real timer and a server that never answers, every
// attempt times out; the call ends with ErrAttemptTimeout, which an http.Client reports as a
// timeout matching context.DeadlineExceeded, and each attempt counts as a failure.
func TestTransportAttemptTimeoutEvery(t *testing.T) {
	base := hostServer(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	var s sleeps
	var clk clockAt
	clk.Store(int64(time.Hour))
	tr, err := NewTransport(base, WithAttemptTimeout(10*time.Millisecond),
		WithRetryOptions(retry.WithSleep(s.sleep)), WithBreaker(breaker.WithClock(clk.now), breaker.WithRefresh(0)))
	if err != nil {
		t.Fatal(err)
	}
	r := wait(t, call(context.Background(), &http.Client{Transport: tr}, "http://backend.test/x"), "the call's answer")
	var ue *url.Error
	if !errors.Is(r.err, ErrAttemptTimeout) || !errors.Is(r.err, context.DeadlineExceeded) || !errors.As(r.err, &ue) || !ue.Timeout() {
		t.Fatalf("err %v; want ErrAttemptTimeout, matching context.DeadlineExceeded, a timeout", r.err)
	}
	if sn := tr.Breaker("backend.test").Snapshot(); sn.Failures != 3 || sn.Successes != 0 || len(s) != 2 {
		t.Fatalf("%d failures, %d successes, waits %v; want 3 attempts failed, 2 waits", sn.Failures, sn.Successes, s)
	}
}

// TestTransportAttemptTimeoutBody: the attempt timeout ends when the headers come: the body of
// the response returned is read in full after the attempt's timer would have fired.
func TestTransportAttemptTimeoutBody(t *testing.T) {
	release := make(chan struct{})
	base := hostServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		select {
		case <-release:
			io.WriteString(w, "late body")
		case <-r.Context().Done():
		}
	})
	var ft fakeTimers
	tr, err := NewTransport(base, WithAttemptTimeout(time.Second), ft.option())
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: tr}).Get("http://backend.test/x")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	ft.fire(t, 0) // a timer left running would cancel the body now
	close(release)
	b, err := io.ReadAll(resp.Body)
	if err != nil || string(b) != "late body" {
		t.Fatalf("body %q, err %v; want it whole", b, err)
	}
}

// passedDeadline is a request context whose deadline passes when the test says so.
type passedDeadline struct {
	context.Context
	done chan struct{}
}

func (c *passedDeadline) Done() <-chan struct{} { return c.done }

func (c *passedDeadline) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// TestTransportAttemptTimeoutCallerFirst: the request's own context still bounds the call: when
// it ends before the attempt timeout, the call ends with its error and is not retried; the
// caller's cancellation records nothing on the breaker, its deadline passing a failure; an
// http.Client's Timeout ends the call as a timeout of the client's, not an attempt's.
func TestTransportAttemptTimeoutCallerFirst(t *testing.T) {
	arrived := make(chan struct{}, 4)
	var n atomic.Int32
	base := hostServer(t, func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		arrived <- struct{}{}
		<-r.Context().Done()
	})
	var clk clockAt
	clk.Store(int64(time.Hour))
	var s sleeps
	tr, err := NewTransport(base, WithAttemptTimeout(time.Hour), WithRetryOptions(retry.WithSleep(s.sleep)),
		WithBreaker(breaker.WithClock(clk.now), breaker.WithRefresh(0)))
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: tr}
	ctx, cancel := context.WithCancel(context.Background())
	done := call(ctx, client, "http://canceled.test/x")
	wait(t, arrived, "the request")
	cancel()
	r := wait(t, done, "the call's answer")
	if !errors.Is(r.err, context.Canceled) || errors.Is(r.err, ErrAttemptTimeout) || n.Load() != 1 || len(s) != 0 {
		t.Fatalf("err %v after %d attempts, waits %v; want context.Canceled, once", r.err, n.Load(), s)
	}
	if sn := tr.Breaker("canceled.test").Snapshot(); sn.Failures+sn.Successes != 0 {
		t.Fatalf("the caller's cancellation settled on the breaker: %+v", sn)
	}

	dl := &passedDeadline{context.Background(), make(chan struct{})}
	done = call(dl, client, "http://deadline.test/x")
	wait(t, arrived, "the request")
	close(dl.done)
	r = wait(t, done, "the call's answer")
	if !errors.Is(r.err, context.DeadlineExceeded) || errors.Is(r.err, ErrAttemptTimeout) || n.Load() != 2 || len(s) != 0 {
		t.Fatalf("err %v after %d attempts, waits %v; want the request's deadline, once", r.err, n.Load()-1, s)
	}
	if sn := tr.Breaker("deadline.test").Snapshot(); sn.Failures != 1 || sn.Successes != 0 {
		t.Fatalf("the request's deadline settled as %+v, want one failure", sn)
	}

	timed := &http.Client{Transport: tr, Timeout: 50 * time.Millisecond}
	r = wait(t, call(context.Background(), timed, "http://client.test/x"), "the call's answer")
	var ue *url.Error
	if !errors.As(r.err, &ue) || !ue.Timeout() || errors.Is(r.err, ErrAttemptTimeout) || len(s) != 0 {
		t.Fatalf("err %v, waits %v; want the client's timeout, not retried", r.err, s)
	}
}

// TestTransportRefusedRetry: when the breaker or the client limit refuses the retry of a 503, the
// caller gets that 503 as it came (headers, body whole), not the refusal; when the attempt
// before the refusal ended in an error, the refusal is returned.
func TestTransportRefusedRetry(t *testing.T) {
	var n atomic.Int32
	base := hostServer(t, func(w http.ResponseWriter, r *http.Request) {
		i := strconv.Itoa(int(n.Add(1)))
		if r.Host == "reset.test" {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return
		}
		w.Header().Set("X-Attempt", i)
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, "attempt "+i+" body")
	})
	check := func(t *testing.T, r result, sent int32, s sleeps) {
		t.Helper()
		if r.err != nil || r.resp.StatusCode != 503 || r.resp.Header.Get("X-Attempt") != "1" || r.body != "attempt 1 body" {
			t.Fatalf("got %v %q, err %v; want attempt 1's 503 with its body", r.resp, r.body, r.err)
		}
		if sent != 1 || len(s) != 1 {
			t.Fatalf("%d attempts sent, waits %v; want 1 sent, 1 wait before the refused retry", sent, s)
		}
	}

	t.Run("breaker", func(t *testing.T) {
		n.Store(0)
		var s sleeps
		var clk clockAt
		clk.Store(int64(time.Hour))
		tr, err := NewTransport(base, WithRetryOptions(retry.WithSleep(s.sleep)), WithBreaker(breaker.WithClock(clk.now),
			breaker.WithRand(func() float64 { return 0 }), breaker.WithRefresh(0)))
		if err != nil {
			t.Fatal(err)
		}
		// Five failures: the default policy's protection still admits the next call, whose
		// failure makes the ratio positive, so the retry's draw of 0 is refused.
		b := tr.Breaker("backend.test")
		for range 5 {
			p, err := b.Allow()
			if err != nil {
				t.Fatal(err)
			}
			p.Fail()
		}
		r := wait(t, call(context.Background(), &http.Client{Transport: tr}, "http://backend.test/x"), "the call's answer")
		check(t, r, n.Load(), s)
		if sn := b.Snapshot(); sn.Refused != 1 || sn.Failures != 6 {
			t.Fatalf("breaker %+v; want attempt 1 failed and the retry refused", sn)
		}
	})

	// limited calls url through a Transport whose client limit of 1 has its only slot taken by
	// the wait before the retry.
	limited := func(t *testing.T, url string) (result, sleeps) {
		t.Helper()
		n.Store(0)
		l := fixed(1)
		var lease adaptive.Lease
		var s sleeps
		take := func(ctx context.Context, d time.Duration) error {
			lease, _ = l.Acquire()
			return s.sleep(ctx, d)
		}
		tr, err := NewTransport(base, WithClientLimit(l), WithRetryOptions(retry.WithSleep(take)))
		if err != nil {
			t.Fatal(err)
		}
		r := wait(t, call(context.Background(), &http.Client{Transport: tr}, url), "the call's answer")
		lease.Pass()
		return r, s
	}

	t.Run("limit", func(t *testing.T) {
		r, s := limited(t, "http://backend.test/x")
		check(t, r, n.Load(), s)
	})

	t.Run("after an error", func(t *testing.T) {
		r, s := limited(t, "http://reset.test/x")
		if !errors.Is(r.err, adaptive.ErrLimitExceeded) || !errors.Is(r.err, ward.ErrRefused) || len(s) != 1 {
			t.Fatalf("err %v, waits %v; want the refusal of the retry", r.err, s)
		}
	})
}

// hosts lists tr's table as a sorted slice.
func hosts(tr *Transport) []string {
	return slices.Sorted(maps.Keys(maps.Collect(tr.Breakers())))
}

// get200 calls host through client and fails unless it answers 200.
func get200(t *testing.T, client *http.Client, host string) {
	t.Helper()
	resp, err := client.Get("http://" + host + "/x")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("%s answered %d", host, resp.StatusCode)
	}
}

// TestTransportHostsIdle: a host's breaker is dropped once its window holds no call: by the
// sweep of a new host that finds the table full, and by a listing; a host called within the
// window keeps its breaker.
func TestTransportHostsIdle(t *testing.T) {
	base := hostServer(t, func(w http.ResponseWriter, r *http.Request) {})
	var clk clockAt
	clk.Store(int64(time.Hour))
	tr, err := NewTransport(base, WithMaxHosts(4), WithBreaker(breaker.WithClock(clk.now), breaker.WithRefresh(0)))
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: tr}
	for _, h := range []string{"a.test", "b.test", "c.test", "d.test"} {
		get200(t, client, h)
	}
	if got := hosts(tr); !slices.Equal(got, []string{"a.test", "b.test", "c.test", "d.test"}) {
		t.Fatalf("listed %v", got)
	}
	a, d := tr.Breaker("a.test"), tr.Breaker("d.test")
	clk.Add(int64(10*time.Second + 250*time.Millisecond)) // past the default policy's window
	get200(t, client, "d.test")                           // d is called again: its breaker is kept
	get200(t, client, "e.test")                           // the table is full: the sweep drops a, b, c
	if tr.Breaker("d.test") != d {
		t.Fatal("d.test, called within its window, lost its breaker")
	}
	if tr.Breaker("a.test") == a {
		t.Fatal("a.test's idle breaker was kept when a new host found the table full")
	}
	if a.Ratio() != 0 {
		t.Fatal("the dropped idle breaker would have refused")
	}
	// the new a.test breaker has seen no call: a listing drops it as idle
	if got := hosts(tr); !slices.Equal(got, []string{"d.test", "e.test"}) {
		t.Fatalf("listed %v, want d.test and e.test", got)
	}
	clk.Add(int64(5 * time.Second))
	get200(t, client, "e.test")
	clk.Add(int64(6 * time.Second)) // d idle for 11 s, e for 6 s
	if got := hosts(tr); !slices.Equal(got, []string{"e.test"}) {
		t.Fatalf("listed %v, want e.test alone", got)
	}
}

// TestTransportHostsRefusingKept: new hosts churning through a full table drop the least used
// healthy breakers; a refusing breaker is never dropped, so its dead host stays refused (the
// server never sees another of its calls); while refusing breakers fill the table it grows by at
// most an eighth of the bound between sweeps. Once the dead host's window empties, its breaker
// admits like a new one and is dropped.
func TestTransportHostsRefusingKept(t *testing.T) {
	var deadCalls atomic.Int32
	base := hostServer(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.Host, "dead") {
			deadCalls.Add(1)
			w.WriteHeader(500)
		}
	})
	var clk clockAt
	clk.Store(int64(time.Hour))
	tr, err := NewTransport(base, WithMaxHosts(4), WithBreaker(breaker.WithClock(clk.now),
		breaker.WithRand(func() float64 { return 0 }), breaker.WithRefresh(0)))
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: tr}
	kill := func(host string) *breaker.Breaker {
		t.Helper()
		for range 100 {
			resp, err := client.Get("http://" + host + "/x")
			if errors.Is(err, breaker.ErrUnavailable) {
				return tr.Breaker(host)
			}
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		t.Fatalf("%s's breaker never refused", host)
		return nil
	}
	// churn calls n new hosts once each; the table never holds more than most.
	churn := func(n, most int) {
		t.Helper()
		for i := range n {
			get200(t, client, fmt.Sprintf("h%d.test", i))
			if got := len(hosts(tr)); got > most {
				t.Fatalf("after h%d: %d breakers kept, want at most %d", i, got, most)
			}
		}
	}
	dead := kill("dead.test")
	for range 10 {
		get200(t, client, "busy.test")
	}
	busy := tr.Breaker("busy.test")
	churn(20, 4)
	if tr.Breaker("dead.test") != dead || tr.Breaker("busy.test") != busy {
		t.Fatal("churn dropped the refusing breaker or the busiest healthy one")
	}
	before := deadCalls.Load()
	if _, err := client.Get("http://dead.test/x"); !errors.Is(err, breaker.ErrUnavailable) || deadCalls.Load() != before {
		t.Fatalf("dead.test after the churn: %v, %d calls reached it", err, deadCalls.Load()-before)
	}

	// Two refusing breakers fill a table of 2: new hosts make it grow by one (an eighth of 2,
	// rounded up) between sweeps, and the refusing ones stay.
	tr, err = NewTransport(base, WithMaxHosts(2), WithBreaker(breaker.WithClock(clk.now),
		breaker.WithRand(func() float64 { return 0 }), breaker.WithRefresh(0)))
	if err != nil {
		t.Fatal(err)
	}
	client = &http.Client{Transport: tr}
	d1, d2 := kill("dead1.test"), kill("dead2.test")
	churn(10, 3)
	if tr.Breaker("dead1.test") != d1 || tr.Breaker("dead2.test") != d2 {
		t.Fatal("a refusing breaker was dropped")
	}
	// A window later with no call, the dead hosts' breakers refuse nothing: dropping them now
	// reopens nothing.
	clk.Add(int64(10*time.Second + 250*time.Millisecond))
	if d1.Ratio() != 0 || d2.Ratio() != 0 {
		t.Fatal("an idle breaker still refuses")
	}
	if got := hosts(tr); len(got) != 0 {
		t.Fatalf("listed %v after a window of no calls, want none", got)
	}
}

// TestTransportBreakersList: the listing stops when the caller stops, and is empty without
// breakers; a known host's breaker is found without allocating.
func TestTransportBreakersList(t *testing.T) {
	tr := must(NewTransport(&backend{statuses: []int{200}}))
	for _, h := range []string{"a.test", "b.test", "c.test"} {
		p, _ := tr.Breaker(h).Allow()
		p.Pass()
	}
	// called as a plain function, not ranged over: a range loop's break could not tell a listing
	// that stops from one that goes on (the runtime would panic instead)
	seen := 0
	tr.Breakers()(func(h string, b *breaker.Breaker) bool {
		if b != tr.Breaker(h) {
			t.Errorf("%s listed with another breaker", h)
		}
		seen++
		return false
	})
	if seen != 1 {
		t.Fatalf("listed %d after the caller stopped at the first", seen)
	}
	host := strings.Repeat("b", 1) + ".test" // made at run time, as a request's host is
	if allocs := testing.AllocsPerRun(100, func() { tr.Breaker(host) }); allocs != 0 {
		t.Fatalf("Breaker of a known host: %v allocations", allocs)
	}
	off := must(NewTransport(nil, WithoutBreaker()))
	for h := range off.Breakers() {
		t.Fatalf("listed %s without breakers", h)
	}
}

// TestTransportHostsConcurrent: requests to many hosts, listings and sweeps at once keep the
// count exact and the table within its bound.
func TestTransportHostsConcurrent(t *testing.T) {
	tr := must(NewTransport(&backend{statuses: []int{200}}, WithMaxHosts(8)))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for g := range 4 {
		wg.Go(func() {
			<-start
			for i := range 300 {
				p, err := tr.Breaker("h" + strconv.Itoa((g*7+i)%40)).Allow()
				if err != nil {
					t.Error(err)
					return
				}
				p.Pass()
			}
		})
	}
	wg.Go(func() {
		<-start
		for range 50 {
			for range tr.Breakers() {
			}
		}
	})
	close(start)
	wg.Wait()
	n := 0
	tr.hosts.m.Range(func(any, any) bool { n++; return true })
	tr.hosts.mu.Lock()
	count := tr.hosts.n
	tr.hosts.mu.Unlock()
	if n != count || n > 8 {
		t.Fatalf("%d breakers held, count says %d; bound 8", n, count)
	}
}

// TestTransportHostOptions: the new options' bad values are errors naming them.
func TestTransportHostOptions(t *testing.T) {
	for name, o := range map[string]TransportOption{
		"WithMaxHosts = 0":         WithMaxHosts(0),
		"WithMaxHosts = -1":        WithMaxHosts(-1),
		"WithAttemptTimeout = -1s": WithAttemptTimeout(-time.Second),
	} {
		tr, err := NewTransport(nil, o)
		if tr != nil || !errors.Is(err, ErrInvalid) || !errors.Is(err, ward.ErrInvalid) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: NewTransport = %v, %v; want ErrInvalid naming it", name, tr, err)
		}
	}
}
