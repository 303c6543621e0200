package wardhttp

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/wardgo/ward"
	"github.com/wardgo/ward/adaptive"
	"github.com/wardgo/ward/failurewindow"
	"github.com/wardgo/ward/rate"
	"github.com/wardgo/ward/shed"
)

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

var ok200 = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })

// fixed returns a limiter of n slots on a still clock.
func fixed(n int) *adaptive.Limiter {
	now := int64(time.Second)
	return must(adaptive.New(must(adaptive.NewFixed(n)), adaptive.WithClock(func() int64 { return now })))
}

// TestClassified is the outcome table: how each answer settles.
func TestClassified(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel2()
	release := make(chan struct{}) // the slow handler outlives the timeout, whatever the scheduling
	defer close(release)
	timeout := http.TimeoutHandler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }), time.Nanosecond, "slow")
	tests := []struct {
		name string
		ctx  context.Context
		h    http.Handler
		want Outcome
	}{
		{"200", nil, ok200, Pass},
		{"nothing written", nil, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), Pass},
		{"204", nil, status(204), Pass},
		{"301", nil, status(301), Pass},
		{"404 is the client's", nil, status(404), Ignore},
		{"429", nil, status(429), Ignore},
		{"500", nil, status(500), Fail},
		{"503", nil, status(503), Fail},
		{"handler timeout (TimeoutHandler)", nil, timeout, Fail},
		{"client went away", canceled, ok200, Ignore},
		{"client went away, 500 after", canceled, status(500), Ignore},
		{"request deadline passed", expired, ok200, Fail},
		{"1xx then 200", nil, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(103); w.WriteHeader(200) }), Pass},
		{"1xx then 500", nil, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(103); w.WriteHeader(500) }), Fail},
	}
	for i, tt := range tests {
		r := httptest.NewRequest("GET", "/", nil)
		if tt.ctx != nil {
			r = r.WithContext(tt.ctx)
		}
		var got []Outcome
		serve(tt.h, httptest.NewRecorder(), r, Classified, func(o Outcome) { got = append(got, o) })
		if len(got) != 1 || got[0] != tt.want {
			t.Errorf("step %d (%s): settled %v, want [%v]", i, tt.name, got, tt.want)
		}
	}
}

func status(code int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(code) })
}

// TestPanic: a panic settles Fail once and continues unchanged; http.ErrAbortHandler after the
// client left settles Ignore.
func TestPanic(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tt := range []struct {
		name  string
		ctx   context.Context
		value any
		want  Outcome
	}{
		{"panic", context.Background(), "boom", Fail},
		{"abort, client here", context.Background(), http.ErrAbortHandler, Fail},
		{"abort, client gone", canceled, http.ErrAbortHandler, Ignore},
	} {
		var got []Outcome
		func() {
			defer func() {
				if p := recover(); p != tt.value {
					t.Errorf("%s: panic %v, want %v to continue", tt.name, p, tt.value)
				}
			}()
			h := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(tt.value) })
			serve(h, httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil).WithContext(tt.ctx), Classified, func(o Outcome) { got = append(got, o) })
		}()
		if len(got) != 1 || got[0] != tt.want {
			t.Errorf("%s: settled %v, want [%v]", tt.name, got, tt.want)
		}
	}
}

// TestLimit: pass, refusal (503, no Retry-After, handler not called), a panic frees the slot.
func TestLimit(t *testing.T) {
	l := fixed(1)
	mw := must(Limit(l))
	called := 0
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { called++; ok200(w, r) }))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != 200 || called != 1 || l.InFlight() != 0 {
		t.Fatalf("pass: %d, called %d, in flight %d", rec.Code, called, l.InFlight())
	}
	lease, _ := l.Acquire()
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != 503 || called != 1 || rec.Header().Get("Retry-After") != "" || rec.Body.String() != "service unavailable\n" {
		t.Fatalf("refusal: %d %q Retry-After %q, called %d", rec.Code, rec.Body, rec.Header().Get("Retry-After"), called)
	}
	lease.Pass()
	p := mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }))
	func() {
		defer func() { _ = recover() }()
		p.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	}()
	if l.InFlight() != 0 {
		t.Fatalf("a panic left %d in flight", l.InFlight())
	}
}

// TestShed: a cool shedder admits and settles.
func TestShed(t *testing.T) {
	s := must(shed.New(shed.WithCPU(func() int { return 0 })))
	defer s.Stop()
	h := must(Shed(s))(ok200)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != 200 || s.Snapshot().InFlight != 0 {
		t.Fatalf("pass: %d, in flight %d", rec.Code, s.Snapshot().InFlight)
	}
}

// TestFailures: a key's failed logins refuse it before the handler runs, with a 429 and the
// wait until its oldest failure leaves the window; other keys pass.
func TestFailures(t *testing.T) {
	now := int64(time.Hour)
	fw := must(failurewindow.New(2, time.Minute, failurewindow.WithClock(func() int64 { return now })))
	called := 0
	login := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		called++
		if r.Header.Get("Password") != "right" {
			w.WriteHeader(http.StatusUnauthorized)
		}
	})
	h := must(Failures(fw, ByClientAddr, WithClassify(FailedLogin)))(login)
	try := func(addr, pw string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", "/login", nil)
		r.RemoteAddr = addr
		r.Header.Set("Password", pw)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec
	}
	steps := []struct {
		advance    time.Duration
		addr, pw   string
		code       int
		retryAfter string
		called     int
	}{
		{0, "10.0.0.1:1111", "wrong", 401, "", 1},
		{10 * time.Second, "10.0.0.1:2222", "wrong", 401, "", 2}, // same client, another port
		{time.Second, "10.0.0.1:3333", "right", 429, "49", 2},    // refused before the handler
		{0, "10.0.0.2:1111", "right", 200, "", 3},                // another client
		{48500 * time.Millisecond, "10.0.0.1:1", "right", 429, "1", 3},
		{500 * time.Millisecond, "10.0.0.1:1", "right", 200, "", 4}, // the first failure left
	}
	for i, s := range steps {
		now += int64(s.advance)
		rec := try(s.addr, s.pw)
		if rec.Code != s.code || rec.Header().Get("Retry-After") != s.retryAfter || called != s.called {
			t.Fatalf("step %d: %s = %d Retry-After %q called %d, want %d %q %d", i, s.addr, rec.Code, rec.Header().Get("Retry-After"), called, s.code, s.retryAfter, s.called)
		}
	}
}

// TestRate: a shared bucket refuses with its wait; PerKey gives each key its own allowance, and
// its refusals the key's wait.
func TestRate(t *testing.T) {
	now := int64(time.Hour)
	clock := func() int64 { return now }
	b := must(rate.NewBucketLimiter(0.5, 1, rate.WithClock(clock)))
	h := must(Rate(must(Shared(b)), ByHeader("X-Api-Key")))(ok200)
	get := func(h http.Handler, key string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("X-API-Key", key)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec
	}
	if rec := get(h, "a"); rec.Code != 200 {
		t.Fatalf("first: %d", rec.Code)
	}
	if rec := get(h, "b"); rec.Code != 429 || rec.Header().Get("Retry-After") != "2" {
		t.Fatalf("shared bucket empty: %d Retry-After %q, want 429 2", rec.Code, rec.Header().Get("Retry-After"))
	}
	part := must(rate.NewPartitioned(100, func(string) *rate.Bucket { return must(rate.NewBucket(1, 1, now)) }))
	h = must(Rate(must(PerKey(part, clock)), ByHeader("X-Api-Key")))(ok200)
	for i, s := range []struct {
		key  string
		code int
		ra   string
	}{{"a", 200, ""}, {"a", 429, "1"}, {"b", 200, ""}, {"", 200, ""}, {"", 429, "1"}} {
		if rec := get(h, s.key); rec.Code != s.code || rec.Header().Get("Retry-After") != s.ra {
			t.Fatalf("step %d: key %q = %d Retry-After %q, want %d %q", i, s.key, rec.Code, rec.Header().Get("Retry-After"), s.code, s.ra)
		}
	}
}

// TestByRoute: per route, through a ServeMux.
func TestByRoute(t *testing.T) {
	now := int64(time.Hour)
	part := must(rate.NewPartitioned(100, func(string) *rate.Bucket { return must(rate.NewBucket(1, 1, now)) }))
	mw := must(Rate(must(PerKey(part, func() int64 { return now })), ByRoute))
	mux := http.NewServeMux()
	mux.Handle("GET /items/{id}", mw(ok200))
	mux.Handle("GET /users/{id}", mw(ok200))
	for i, s := range []struct {
		path string
		code int
	}{{"/items/1", 200}, {"/items/2", 429}, {"/users/1", 200}} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("GET", s.path, nil))
		if rec.Code != s.code {
			t.Fatalf("step %d: %s = %d, want %d", i, s.path, rec.Code, s.code)
		}
	}
}

// TestChain: the first middleware decides first; a custom refusal replaces the answer.
func TestChain(t *testing.T) {
	now := int64(time.Hour)
	b := must(rate.NewBucketLimiter(1, 1, rate.WithClock(func() int64 { return now })))
	l := fixed(1)
	var refused []error
	custom := WithRefuse(func(w http.ResponseWriter, _ *http.Request, ref Refusal) {
		refused = append(refused, ref.Err)
		w.WriteHeader(ref.Status)
	})
	h := Chain(must(Rate(must(Shared(b)), ByClientAddr, custom)), must(Limit(l, custom)))(ok200)
	for i, want := range []int{200, 429} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		if rec.Code != want {
			t.Fatalf("step %d: %d, want %d", i, rec.Code, want)
		}
	}
	if len(refused) != 1 || !errors.Is(refused[0], rate.ErrLimited) || !errors.Is(refused[0], ward.ErrRefused) || l.InFlight() != 0 {
		t.Fatalf("refused %v, in flight %d", refused, l.InFlight())
	}
}

// TestStreaming: through the middleware, a handler flushes each chunk to the client before it
// writes the next, through the Flusher type assertion and through ResponseController.
func TestStreaming(t *testing.T) {
	l := fixed(4)
	next := make(chan struct{})
	h := must(Limit(l))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "one\n")
		w.(http.Flusher).Flush()
		<-next
		rc := http.NewResponseController(w)
		if err := rc.SetWriteDeadline(time.Now().Add(time.Minute)); err != nil {
			t.Errorf("SetWriteDeadline through the recorder: %v", err)
		}
		_, _ = io.WriteString(w, "two\n")
		if err := rc.Flush(); err != nil {
			t.Errorf("ResponseController.Flush: %v", err)
		}
		<-next
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for _, want := range []string{"one\n", "two\n"} {
		line, err := br.ReadString('\n')
		if err != nil || line != want {
			t.Fatalf("read %q %v, want %q before the handler goes on", line, err, want)
		}
		next <- struct{}{}
	}
	_, _ = io.ReadAll(br)
	resp.Body.Close()
	srv.Close() // waits for the handler
	if l.InFlight() != 0 {
		t.Fatalf("in flight %d after the stream", l.InFlight())
	}
}

// TestHijack: a handler takes the connection through the middleware.
func TestHijack(t *testing.T) {
	l := fixed(1)
	returned := make(chan struct{})
	mw := must(Limit(l))(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		c, rw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Errorf("Hijack: %v", err)
			return
		}
		defer c.Close()
		_, _ = rw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 7\r\nConnection: close\r\n\r\nhijack!")
		_ = rw.Flush()
	}))
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { mw.ServeHTTP(w, r); close(returned) })
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	<-returned
	srv.Close()
	if string(body) != "hijack!" || l.InFlight() != 0 {
		t.Fatalf("body %q, in flight %d", body, l.InFlight())
	}
}

// fullWriter has every optional interface and records which was used.
type fullWriter struct {
	*httptest.ResponseRecorder
	readFrom, pushed int
}

func (f *fullWriter) ReadFrom(r io.Reader) (int64, error) {
	f.readFrom++
	return io.Copy(f.ResponseRecorder, r)
}
func (f *fullWriter) Push(string, *http.PushOptions) error { f.pushed++; return nil }
func (f *fullWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return nil, nil, errors.New("fake hijack")
}

// TestInterfaces: ReadFrom and Push reach the wrapped writer when it has them, and degrade
// (a copy through Write, http.ErrNotSupported) when it does not; the status is captured.
func TestInterfaces(t *testing.T) {
	fw := &fullWriter{ResponseRecorder: httptest.NewRecorder()}
	rec := &recorder{w: fw}
	if n, err := rec.ReadFrom(strings.NewReader("abc")); n != 3 || err != nil || fw.readFrom != 1 || rec.status != 200 {
		t.Fatalf("ReadFrom: %d %v, delegated %d, status %d", n, err, fw.readFrom, rec.status)
	}
	if err := rec.Push("/style.css", nil); err != nil || fw.pushed != 1 {
		t.Fatalf("Push: %v, delegated %d", err, fw.pushed)
	}
	if _, _, err := rec.Hijack(); err == nil || rec.hijacked {
		t.Fatalf("Hijack: %v, hijacked %v", err, rec.hijacked)
	}
	plain := &recorder{w: httptest.NewRecorder()}
	if n, err := plain.ReadFrom(strings.NewReader("abc")); n != 3 || err != nil {
		t.Fatalf("ReadFrom without one: %d %v", n, err)
	}
	if err := plain.Push("/x", nil); !errors.Is(err, http.ErrNotSupported) {
		t.Fatalf("Push without one: %v", err)
	}
	if _, _, err := plain.Hijack(); !errors.Is(err, http.ErrNotSupported) {
		t.Fatalf("Hijack without one: %v", err)
	}
	plain.Flush() // a recorder flushes; no panic either way
	if plain.Unwrap() == nil {
		t.Fatal("Unwrap returned nil")
	}
}

// TestClientGone: the client cancels while the handler waits; the slot is freed and the
// outcome is neutral.
func TestClientGone(t *testing.T) {
	l := fixed(1)
	started := make(chan struct{})
	var got []Outcome
	done := make(chan struct{})
	classify := func(r *http.Request, status int) Outcome {
		o := Classified(r, status)
		got = append(got, o)
		close(done)
		return o
	}
	h := must(Limit(l, WithClassify(classify)))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done()
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
	go func() { <-started; cancel() }()
	if _, err := http.DefaultClient.Do(req); !errors.Is(err, context.Canceled) {
		t.Fatalf("client: %v", err)
	}
	<-done
	if len(got) != 1 || got[0] != Ignore {
		t.Fatalf("settled %v, want [Ignore]", got)
	}
}

// reusable is a ResponseWriter whose header map is kept between requests, so AllocsPerRun sees
// only what the middleware allocates.
type reusable struct {
	h    http.Header
	code int
}

func (w *reusable) Header() http.Header         { return w.h }
func (w *reusable) WriteHeader(code int)        { w.code = code }
func (w *reusable) Write(p []byte) (int, error) { return len(p), nil }

// TestRefusalAllocs: a refusal allocates nothing, Retry-After included.
func TestRefusalAllocs(t *testing.T) {
	l := fixed(1)
	lease, _ := l.Acquire()
	defer lease.Pass()
	now := int64(time.Hour)
	b := must(rate.NewBucketLimiter(0.5, 1, rate.WithClock(func() int64 { return now })))
	b.Allow()
	fw := must(failurewindow.New(1, time.Minute, failurewindow.WithClock(func() int64 { return now })))
	fw.Record("10.0.0.1")
	part := must(rate.NewPartitioned(0, func(string) *rate.BucketLimiter {
		return must(rate.NewBucketLimiter(0.5, 1, rate.WithClock(func() int64 { return now })))
	}))
	part.Take("10.0.0.1", now, 1)
	for name, h := range map[string]http.Handler{
		"Limit":    must(Limit(l))(ok200),
		"Rate":     must(Rate(must(Shared(b)), ByClientAddr))(ok200),
		"PerKey":   must(Rate(must(PerKey(part, func() int64 { return now })), ByClientAddr))(ok200),
		"Failures": must(Failures(fw, ByClientAddr))(ok200),
	} {
		w := &reusable{h: http.Header{}}
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = "10.0.0.1:5555"
		h.ServeHTTP(w, r)
		if w.code != 503 && w.code != 429 {
			t.Fatalf("%s: %d, want a refusal", name, w.code)
		}
		if n := testing.AllocsPerRun(100, func() { h.ServeHTTP(w, r) }); n != 0 {
			t.Errorf("%s refusal: %v allocations, want 0", name, n)
		}
	}
}

// TestRetryAfterValue: whole seconds rounded up, at least 1, past the cached range too.
func TestRetryAfterValue(t *testing.T) {
	for _, s := range []struct {
		wait time.Duration
		want string
	}{{time.Nanosecond, "1"}, {time.Second, "1"}, {1001 * time.Millisecond, "2"}, {120 * time.Second, "120"}, {121 * time.Second, "121"}, {time.Hour, "3600"},
		{rate.Forever, "9223372037"}} { // the largest wait does not wrap round
		if got := retryAfterValue(s.wait); len(got) != 1 || got[0] != s.want || cap(got) != 1 {
			t.Errorf("retryAfterValue(%v) = %q (cap %d), want [%s]", s.wait, got, cap(got), s.want)
		}
	}
}

// TestInvalid: nil arguments and options are configuration errors matching ward.ErrInvalid.
func TestInvalid(t *testing.T) {
	now := func() int64 { return 0 }
	fw := must(failurewindow.New(1, time.Minute))
	q := Quota(func(string) (bool, time.Duration) { return true, 0 })
	for i, err := range []error{
		second(Limit(nil)), second(Shed(nil)), second(Failures(nil, ByClientAddr)), second(Failures(fw, nil)),
		second(Rate(nil, ByClientAddr)), second(Rate(q, nil)), second(PerKey[*rate.Bucket](nil, now)),
		second(Limit(fixed(1), nil)), second(Limit(fixed(1), WithRefuse(nil))), second(Limit(fixed(1), WithClassify(nil))),
	} {
		if !errors.Is(err, ErrInvalid) || !errors.Is(err, ward.ErrInvalid) {
			t.Errorf("case %d: %v, want ErrInvalid", i, err)
		}
	}
}

func second[A, B any](_ A, b B) B { return b }
