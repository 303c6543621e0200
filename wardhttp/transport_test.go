package wardhttp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/wardgo/ward"
	"github.com/wardgo/ward/adaptive"
	"github.com/wardgo/ward/breaker"
	"github.com/wardgo/ward/retry"
)

// backend answers each attempt with the next of its statuses (the last repeats), records what
// it was sent, and counts bodies closed.
type backend struct {
	statuses []int
	headers  []http.Header
	err      error
	calls    int
	bodies   []string
	closed   int
}

type body struct {
	io.Reader
	b *backend
}

func (b body) Close() error { b.b.closed++; return nil }

func (b *backend) RoundTrip(req *http.Request) (*http.Response, error) {
	i := min(b.calls, len(b.statuses)-1)
	b.calls++
	if req.Body != nil {
		p, _ := io.ReadAll(req.Body)
		b.bodies = append(b.bodies, string(p))
	}
	if b.err != nil {
		return nil, b.err
	}
	h := http.Header{}
	if i < len(b.headers) && b.headers[i] != nil {
		h = b.headers[i]
	}
	code := b.statuses[i]
	return &http.Response{StatusCode: code, Status: http.StatusText(code), Header: h, Body: body{strings.NewReader("x"), b}, Request: req}, nil
}

// sleeps records the waits retry.Do asks for, without waiting.
type sleeps []time.Duration

func (s *sleeps) sleep(_ context.Context, d time.Duration) error { *s = append(*s, d); return nil }

func newTestTransport(t *testing.T, b *backend, s *sleeps, opts ...TransportOption) *Transport {
	t.Helper()
	opts = append([]TransportOption{WithRetryOptions(retry.WithSleep(s.sleep), retry.WithRand(func() float64 { return 0.5 }))}, opts...)
	tr, err := NewTransport(b, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func get(t *testing.T, tr http.RoundTripper, method string, body io.Reader, hdr ...string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequest(method, "http://backend.test/x", body)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return tr.RoundTrip(req)
}

// TestTransportRetries: which answers are retried, how long the waits are, and what comes back.
func TestTransportRetries(t *testing.T) {
	ra := func(v string) http.Header { return http.Header{"Retry-After": {v}} }
	wall := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name     string
		statuses []int
		headers  []http.Header
		method   string
		body     string
		hdr      []string
		calls    int
		code     int
		waits    []time.Duration
	}{
		{"200 at once", []int{200}, nil, "GET", "", nil, 1, 200, nil},
		{"503 then 200, backoff", []int{503, 200}, nil, "GET", "", nil, 2, 200, []time.Duration{100 * time.Millisecond}},
		{"502, 504 then 200", []int{502, 504, 200}, nil, "GET", "", nil, 3, 200, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}},
		{"500 is not retried", []int{500, 200}, nil, "GET", "", nil, 1, 500, nil},
		{"404 is not retried", []int{404, 200}, nil, "GET", "", nil, 1, 404, nil},
		{"503 three times: the last answer returned", []int{503}, nil, "GET", "", nil, 3, 503, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}},
		{"Retry-After seconds", []int{429, 200}, []http.Header{ra("2")}, "GET", "", nil, 2, 200, []time.Duration{2 * time.Second}},
		{"Retry-After HTTP-date", []int{503, 200}, []http.Header{ra(wall.Add(3 * time.Second).Format(http.TimeFormat))}, "GET", "", nil, 2, 200, []time.Duration{3 * time.Second}},
		{"Retry-After date passed: at once", []int{503, 200}, []http.Header{ra(wall.Add(-time.Hour).Format(http.TimeFormat))}, "GET", "", nil, 2, 200, []time.Duration{0}},
		{"Retry-After unreadable: backoff", []int{503, 200}, []http.Header{ra("soon")}, "GET", "", nil, 2, 200, []time.Duration{100 * time.Millisecond}},
		{"Retry-After too long: returned", []int{503, 200}, []http.Header{ra("3600")}, "GET", "", nil, 1, 503, nil},
		{"POST is not retried", []int{503, 200}, nil, "POST", "p", nil, 1, 503, nil},
		{"POST with Idempotency-Key and GetBody is", []int{503, 200}, nil, "POST", "p", []string{"Idempotency-Key", "k1"}, 2, 200, []time.Duration{100 * time.Millisecond}},
		{"PUT with GetBody is", []int{503, 200}, nil, "PUT", "p", nil, 2, 200, []time.Duration{100 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &backend{statuses: tt.statuses, headers: tt.headers}
			var s sleeps
			tr := newTestTransport(t, b, &s, WithWallClock(func() time.Time { return wall }))
			var rd io.Reader
			if tt.body != "" {
				rd = strings.NewReader(tt.body) // NewRequest sets GetBody
			}
			resp, err := get(t, tr, tt.method, rd, tt.hdr...)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if b.calls != tt.calls || resp.StatusCode != tt.code || len(s) != len(tt.waits) {
				t.Fatalf("calls %d, status %d, waits %v; want %d, %d, %v", b.calls, resp.StatusCode, s, tt.calls, tt.code, tt.waits)
			}
			for i := range s {
				if s[i] != tt.waits[i] {
					t.Fatalf("wait %d = %v, want %v", i, s[i], tt.waits[i])
				}
			}
			if b.closed != b.calls {
				t.Fatalf("%d bodies closed of %d", b.closed, b.calls)
			}
			for i, got := range b.bodies {
				if got != tt.body {
					t.Fatalf("attempt %d sent body %q, want %q", i, got, tt.body)
				}
			}
		})
	}
}

// TestTransportBodyWithoutGetBody: a body that cannot be rewound is never sent twice.
func TestTransportBodyWithoutGetBody(t *testing.T) {
	b := &backend{statuses: []int{503, 200}}
	var s sleeps
	tr := newTestTransport(t, b, &s)
	req, _ := http.NewRequest("PUT", "http://backend.test/x", io.NopCloser(strings.NewReader("p")))
	req.GetBody = nil
	resp, err := tr.RoundTrip(req)
	if err != nil || resp.StatusCode != 503 || b.calls != 1 {
		t.Fatalf("status %v err %v calls %d, want 503 once", resp, err, b.calls)
	}
}

// TestTransportBudget: against a backend that always fails, the budget (10 tokens, half of them
// usable) stops retries after a few calls: 3 + 2 + 1 × 18 attempts for 20 calls, where
// unthrottled retries would make 60.
func TestTransportBudget(t *testing.T) {
	b := &backend{statuses: []int{503}}
	var s sleeps
	tr := newTestTransport(t, b, &s)
	for i := 0; i < 20; i++ {
		resp, err := get(t, tr, "GET", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if b.calls != 23 {
		t.Fatalf("%d attempts for 20 calls, want 23", b.calls)
	}
	// successes give back a tenth of a token each: 50 of them bring 5 tokens back.
	b.statuses = []int{200}
	for i := 0; i < 50; i++ {
		resp, _ := get(t, tr, "GET", nil)
		resp.Body.Close()
	}
	if got := tr.Budget().Tokens(); got != 5 {
		t.Fatalf("tokens %v after 50 successes, want 5", got)
	}
}

// TestRetryBudget: the A6 arithmetic.
func TestRetryBudget(t *testing.T) {
	b := must(NewRetryBudget(4, 0.5))
	steps := []struct {
		op     string
		tokens float64
		allow  bool
	}{
		{"", 4, true}, {"fail", 3, true}, {"fail", 2, false}, {"ok", 2.5, true}, {"fail", 1.5, false},
		{"fail", 0.5, false}, {"fail", 0, false}, {"ok", 0.5, false}, {"ok", 1, false}, {"ok", 1.5, false},
		{"ok", 2, false}, {"ok", 2.5, true}, {"ok", 3, true}, {"ok", 3.5, true}, {"ok", 4, true}, {"ok", 4, true},
	}
	for i, s := range steps {
		switch s.op {
		case "fail":
			b.Fail()
		case "ok":
			b.Pass()
		}
		if b.Tokens() != s.tokens || b.Allow() != s.allow {
			t.Fatalf("step %d (%s): tokens %v allow %v, want %v %v", i, s.op, b.Tokens(), b.Allow(), s.tokens, s.allow)
		}
	}
	for _, bad := range [][2]float64{{0, 0.1}, {1001, 0.1}, {10, 0}, {10, 1.5}, {-1, 0.1}} {
		if _, err := NewRetryBudget(bad[0], bad[1]); !errors.Is(err, ward.ErrInvalid) {
			t.Errorf("NewRetryBudget(%v, %v): %v, want ErrInvalid", bad[0], bad[1], err)
		}
	}
}

// TestTransportRefusals: the client limit's and the breaker's refusals are returned at once,
// never retried, and the backend is not called.
func TestTransportRefusals(t *testing.T) {
	b := &backend{statuses: []int{200}}
	var s sleeps
	l := fixed(1)
	tr := newTestTransport(t, b, &s, WithClientLimit(l))
	lease, _ := l.Acquire()
	_, err := get(t, tr, "GET", nil)
	lease.Pass()
	if !errors.Is(err, adaptive.ErrLimitExceeded) || !errors.Is(err, ward.ErrRefused) || b.calls != 0 || len(s) != 0 {
		t.Fatalf("limit: %v, calls %d, waits %v", err, b.calls, s)
	}
	// a breaker that has seen only failures refuses (a draw of 0 always refuses what it may)
	now := int64(time.Hour)
	b = &backend{statuses: []int{500}}
	tr = newTestTransport(t, b, &s, WithBreaker(breaker.WithClock(func() int64 { return now }), breaker.WithRand(func() float64 { return 0 }), breaker.WithRefresh(0)))
	refused := 0
	for i := 0; i < 200; i++ {
		resp, err := get(t, tr, "GET", nil)
		switch {
		case errors.Is(err, breaker.ErrUnavailable):
			refused++
		case err != nil:
			t.Fatal(err)
		default:
			resp.Body.Close()
		}
	}
	if refused == 0 || b.calls+refused != 200 || len(s) != 0 {
		t.Fatalf("breaker: %d refused, %d sent, waits %v", refused, b.calls, s)
	}
	if first := tr.Breaker("backend.test"); first == tr.Breaker("other.test") || first != tr.Breaker("backend"+".test") {
		t.Fatal("breakers are not per host")
	}
}

// TestTransportDefaultBreaker: without WithPolicy, each host's breaker has breaker.DefaultPolicy,
// whose trip reads a ratio of exactly 1 once ten failures came with no success between them (go-zero's
// numbers never read 1).
func TestTransportDefaultBreaker(t *testing.T) {
	now := int64(time.Hour)
	b := &backend{statuses: []int{500}}
	var s sleeps
	tr := newTestTransport(t, b, &s, WithBreaker(breaker.WithClock(func() int64 { return now }), breaker.WithRefresh(0)))
	for i := 0; i < 1000 && b.calls < 10; i++ {
		if resp, err := get(t, tr, "GET", nil); err == nil {
			resp.Body.Close()
		}
	}
	if r := tr.Breaker("backend.test").Ratio(); b.calls < 10 || r != 1 {
		t.Fatalf("after %d failed calls the host's breaker reads %v, want the default policy's trip (1)", b.calls, r)
	}
}

// TestTransportErrors: a transport error is retried; the caller's cancellation is not, and
// ends the call with its error.
func TestTransportErrors(t *testing.T) {
	b := &backend{statuses: []int{200}, err: errors.New("connection reset")}
	var s sleeps
	tr := newTestTransport(t, b, &s)
	if _, err := get(t, tr, "GET", nil); err == nil || b.calls != 3 {
		t.Fatalf("err %v after %d calls, want an error after 3", err, b.calls)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	b = &backend{statuses: []int{200}, err: context.Canceled}
	tr = newTestTransport(t, b, &s)
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://backend.test/x", nil)
	if _, err := tr.RoundTrip(req); !errors.Is(err, context.Canceled) || b.calls != 0 {
		t.Fatalf("canceled: %v after %d calls", err, b.calls)
	}
	if _, err := NewTransport(nil, WithClientLimit(nil)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("nil limit: %v", err)
	}
	if _, err := NewTransport(nil, WithBreaker(breaker.WithClock(nil))); !errors.Is(err, ward.ErrInvalid) {
		t.Fatalf("bad breaker option: %v", err)
	}
	for _, o := range []TransportOption{nil, WithRetryBudget(nil), WithMaxRetryAfter(-1), WithWallClock(nil), WithBackoff(retry.Backoff{})} {
		if _, err := NewTransport(nil, o); !errors.Is(err, ward.ErrInvalid) {
			t.Errorf("option: %v, want ErrInvalid", err)
		}
	}
}
