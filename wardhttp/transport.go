package wardhttp

import (
	"cmp"
	"context"
	"errors"
	"io"
	"iter"
	"math"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/wardgo/ward/adaptive"
	"github.com/wardgo/ward/breaker"
	"github.com/wardgo/ward/internal/contract"
	"github.com/wardgo/ward/retry"
)

// Transport is an http.RoundTripper that guards the calls a client makes: a breaker per host
// (breaker.Breaker, the SRE drop ratio) so a failing backend is spared, an optional adaptive
// limit on the calls in flight, an optional bound on each attempt ([WithAttemptTimeout]), and
// retries with backoff (retry.Do) that honour Retry-After and spend from a [RetryBudget], so that
// retries cannot multiply an outage.
//
// An attempt settles Fail on a transport error (other than the caller's cancellation, which is
// Ignore), an attempt timeout or a 5xx; Ignore on a 4xx other than none, since a client error
// says nothing of the backend; Pass otherwise. A limit's lease is held until the response's
// headers arrive.
//
// Retries: an attempt is retried when it failed with a transport error, timed out, or answered
// 429, 502, 503 or 504; the request can be sent again (no body, or GetBody to rewind it); it is
// idempotent (GET, HEAD, OPTIONS, TRACE, PUT, DELETE, or an Idempotency-Key or X-Idempotency-Key
// header, as net/http itself decides); the backoff has attempts left; the budget allows a retry;
// and the wait a Retry-After asks (seconds or an HTTP-date) is at most the most it accepts
// (WithMaxRetryAfter). The wait is the Retry-After when the response has one, else the
// backoff's. A ward refusal (the breaker's, the limit's: errors matching ward.ErrRefused) is
// never retried: on the first attempt it is returned at once; on a retry, the previous attempt's
// response is returned as it came, body unread (the caller gets the backend's 503, not the
// refusal), or the refusal when the previous attempt ended in an error. When the retries end on a
// retryable status, that last response is returned as it came, body open. A call the caller has
// ended (its context done, or the request's Cancel channel closed, as http.Client does when its
// Timeout passes) is not retried.
//
// # Breakers per host
//
// Each host (the request URL's Host, "example.com:8443") gets its own breaker on its first
// request. A request to a host already seen reads its breaker from a concurrent map without a
// lock; the table is kept bounded by sweeps that run only when a new host finds it full, and
// when it is listed ([Transport.Breakers]):
//
//   - A breaker is idle when its window (breaker.Policy.Window, 10 s by default) holds nothing: no
//     success, failure or refusal (breaker.Snapshot's Successes, Failures and Drops are all 0).
//     An idle breaker refuses nothing, and its drop ratio, read from the window alone, is a new
//     breaker's, so dropping it reopens nothing; the host gets a new breaker on its next request.
//     Every sweep drops the idle breakers.
//   - The table holds at most [WithMaxHosts] breakers (default [DefaultMaxHosts]). When a new
//     host finds it full, the sweep also drops breakers that are not refusing (a drop ratio of
//     0), those with the fewest failures and refusals, then the fewest calls, in their window
//     first, until an eighth of the table is free.
//   - A breaker that is refusing (a drop ratio above 0) is never dropped before it falls idle, so
//     a dead host is never reopened by eviction. While refusing breakers fill more than seven
//     eighths of the table it grows past the bound, by at most an eighth of it between sweeps,
//     until they recover or fall idle.
//
// A call in flight when its host's breaker is dropped settles on the dropped breaker. A dropped
// breaker's counts (breaker.Snapshot) go with it.
//
// Safe for concurrent use; must not be copied after first use. Build one with NewTransport.
type Transport struct {
	_     noCopy
	base  http.RoundTripper
	hosts hostTable
	cfg   transportConfig
}

// TransportOption configures a Transport; a nil one is an error.
type TransportOption func(*transportConfig) error

type transportConfig struct {
	breakerOpts []breaker.Option
	noBreaker   bool
	limit       *adaptive.Limiter
	backoff     retry.Backoff
	budget      *RetryBudget
	maxWait     time.Duration
	retryOpts   []retry.Option
	wallClock   func() time.Time
	attempt     time.Duration // WithAttemptTimeout; 0: none
	maxHosts    int
	// after starts the attempt timer: f runs after d unless stop, called first, returns true.
	// time.AfterFunc; tests replace it to fire timers when they choose.
	after func(d time.Duration, f func()) (stop func() bool)
}

// DefaultMaxHosts is how many hosts' breakers a Transport keeps without [WithMaxHosts]. A
// breaker's window has a stripe per P, so what the table can hold grows with GOMAXPROCS: a client
// of many hosts on many cores weighs a larger bound against that.
const DefaultMaxHosts = 256

// ErrAttemptTimeout is the error of an attempt whose response headers did not arrive within
// [WithAttemptTimeout]. Like net/http's own timeouts it matches context.DeadlineExceeded with
// errors.Is and its Timeout method reports true (net.Error), so an http.Client's *url.Error says
// Timeout() too. It is a failure, not a ward refusal: it settles Fail and is retried.
var ErrAttemptTimeout error = attemptTimeout{}

type attemptTimeout struct{}

func (attemptTimeout) Error() string        { return "wardhttp: attempt timed out awaiting response headers" }
func (attemptTimeout) Timeout() bool        { return true }
func (attemptTimeout) Temporary() bool      { return true }
func (attemptTimeout) Is(target error) bool { return target == context.DeadlineExceeded }

// WithAttemptTimeout bounds each attempt by d, from sending its request until its response's
// headers arrive (dialing, TLS, writing the request and the backend's think time included): an
// attempt still waiting after d is abandoned, its connection closed, and ends with
// [ErrAttemptTimeout], a failure for the host's breaker and the retry budget, retried as any
// failed attempt is. The body of the response returned is not bounded by d.
//
// It composes with the request's own context: each attempt runs under a context derived from
// it, so the request's deadline (and http.Client.Timeout, which net/http turns into one) still
// bounds the whole call, every attempt, the waits between them and the reading of the body;
// whichever ends first ends the attempt, and when the request's own ends first the call ends with
// its error, settled as it is without this option, and is not retried. A retry.WithRetryIf rule
// that declines context.DeadlineExceeded declines these timeouts too.
//
// Zero (the default) leaves attempts unbounded but by the request's context; a negative d is an
// error.
func WithAttemptTimeout(d time.Duration) TransportOption {
	return func(c *transportConfig) error {
		if d < 0 {
			return contract.Field(ErrInvalid, "WithAttemptTimeout", d, ">= 0")
		}
		c.attempt = d
		return nil
	}
}

// WithMaxHosts bounds how many hosts' breakers the Transport keeps (default [DefaultMaxHosts]);
// the Transport's doc says how the table is swept. n must be at least 1.
func WithMaxHosts(n int) TransportOption {
	return func(c *transportConfig) error {
		if n < 1 {
			return contract.Field(ErrInvalid, "WithMaxHosts", n, ">= 1")
		}
		c.maxHosts = n
		return nil
	}
}

// WithBreaker builds each host's breaker with opts (breaker.WithPolicy, …), checked once at
// NewTransport. Without it each host's breaker has breaker's defaults ([breaker.DefaultPolicy]:
// proportional throttling for partial failure, a trip that spares a dead host all but a probe
// every 500 ms, recovery within a probe of the host's return); breaker.WithPolicy(
// breaker.GoZeroPolicy()) gives go-zero's breaker exactly.
func WithBreaker(opts ...breaker.Option) TransportOption {
	return func(c *transportConfig) error { c.breakerOpts = opts; return nil }
}

// WithoutBreaker turns the per-host breakers off.
func WithoutBreaker() TransportOption {
	return func(c *transportConfig) error { c.noBreaker = true; return nil }
}

// WithClientLimit bounds the calls in flight through the Transport, all hosts together, by l.
func WithClientLimit(l *adaptive.Limiter) TransportOption {
	return func(c *transportConfig) error {
		if l == nil {
			return contract.Field(ErrInvalid, "WithClientLimit", "nil", "an *adaptive.Limiter")
		}
		c.limit = l
		return nil
	}
}

// WithBackoff replaces the retry schedule (default retry.DefaultBackoff: 3 attempts in all, from
// 100 ms); Attempts 1 turns retries off.
func WithBackoff(b retry.Backoff) TransportOption {
	return func(c *transportConfig) error {
		if err := b.Validate(); err != nil {
			return err
		}
		c.backoff = b
		return nil
	}
}

// WithRetryBudget replaces the budget retries spend from (default NewRetryBudget(10, 0.1)). One
// budget may be shared by several Transports.
func WithRetryBudget(b *RetryBudget) TransportOption {
	return func(c *transportConfig) error {
		if b == nil {
			return contract.Field(ErrInvalid, "WithRetryBudget", "nil", "a *RetryBudget")
		}
		c.budget = b
		return nil
	}
}

// WithMaxRetryAfter is the longest Retry-After the Transport waits for before a retry (default
// 10 s); a response asking for longer is returned, not retried.
func WithMaxRetryAfter(d time.Duration) TransportOption {
	return func(c *transportConfig) error {
		if d < 0 {
			return contract.Field(ErrInvalid, "WithMaxRetryAfter", d, ">= 0")
		}
		c.maxWait = d
		return nil
	}
}

// WithRetryOptions passes options to retry.Do (retry.WithSleep, retry.WithRand: tests use them).
// A retry.WithRetryIf among them narrows the Transport's own rule: a response is retried only when
// both accept it. The options are checked here: a nil option, or one retry.Do rejects, is an error
// naming WithRetryOptions, at NewTransport rather than on every request.
func WithRetryOptions(opts ...retry.Option) TransportOption {
	return func(c *transportConfig) error {
		for i, o := range opts {
			if o == nil {
				return contract.Field(ErrInvalid, "WithRetryOptions option "+strconv.Itoa(i), "nil", "a retry.Option")
			}
		}
		// A dry run of one attempt applies every option the way each request will.
		once := retry.Backoff{Base: 1, Factor: 1, Cap: 1, Attempts: 1, Jitter: retry.Rigid}
		if err := retry.Do(context.Background(), once, func(context.Context) error { return nil }, opts...); err != nil {
			return contract.Field(ErrInvalid, "WithRetryOptions", err, "options retry.Do accepts")
		}
		c.retryOpts = opts
		return nil
	}
}

// WithWallClock replaces time.Now for reading a Retry-After given as an HTTP-date.
func WithWallClock(now func() time.Time) TransportOption {
	return func(c *transportConfig) error {
		if now == nil {
			return contract.Field(ErrInvalid, "WithWallClock", "nil", "a function")
		}
		c.wallClock = now
		return nil
	}
}

// NewTransport returns a Transport sending through base (http.DefaultTransport when nil).
func NewTransport(base http.RoundTripper, opts ...TransportOption) (*Transport, error) {
	c := transportConfig{backoff: retry.DefaultBackoff(), maxWait: 10 * time.Second, wallClock: time.Now,
		maxHosts: DefaultMaxHosts, after: afterFunc}
	if err := contract.Apply(ErrInvalid, &c, opts); err != nil {
		return nil, err
	}
	if c.budget == nil {
		c.budget, _ = NewRetryBudget(DefaultRetryTokens, DefaultRetryRatio)
	}
	if !c.noBreaker {
		if _, err := breaker.New(c.breakerOpts...); err != nil {
			return nil, err
		}
	}
	if base == nil {
		base = http.DefaultTransport
	}
	t := &Transport{base: base, cfg: c}
	t.hosts.init(c.maxHosts, c.breakerOpts)
	return t, nil
}

func afterFunc(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }

// Breaker returns the breaker guarding host (as in a URL: "example.com:8443"), made on first
// use (which may sweep the table, as the type's doc says); nil when breakers are off.
func (t *Transport) Breaker(host string) *breaker.Breaker {
	if t.cfg.noBreaker {
		return nil
	}
	return t.hosts.get(host)
}

// Breakers lists the hosts the Transport keeps a breaker for, each with its breaker, in no set
// order: for metrics and status pages. It first sweeps the idle breakers away (the type's doc
// says which), so it lists the hosts called within their breaker's window. A host added or
// dropped while the list is read may or may not appear. It lists nothing when breakers are off.
func (t *Transport) Breakers() iter.Seq2[string, *breaker.Breaker] {
	return func(yield func(string, *breaker.Breaker) bool) {
		if t.cfg.noBreaker {
			return
		}
		t.hosts.sweepIdle()
		t.hosts.m.Range(func(k, v any) bool { return yield(k.(string), v.(*breaker.Breaker)) })
	}
}

// hostTable is the breaker of each host: a sync.Map read without a lock by every request to a
// known host; adding a host and sweeping take mu, so they never slow the others down.
type hostTable struct {
	m    sync.Map // host → *breaker.Breaker
	mu   sync.Mutex
	n    int // breakers in m (under mu)
	next int // an add sweeps first when n has reached next (under mu)
	max  int
	gap  int // an eighth of max, at least 1: what a full sweep frees, and the most between sweeps
	opts []breaker.Option
}

func (h *hostTable) init(max int, opts []breaker.Option) {
	h.max, h.next, h.gap, h.opts = max, max, (max+7)/8, opts
}

func (h *hostTable) get(host string) *breaker.Breaker {
	if b, ok := h.m.Load(host); ok {
		return b.(*breaker.Breaker)
	}
	return h.add(host)
}

// add makes host's breaker, sweeping first when the table is full.
func (h *hostTable) add(host string) *breaker.Breaker {
	h.mu.Lock()
	defer h.mu.Unlock()
	if b, ok := h.m.Load(host); ok {
		return b.(*breaker.Breaker)
	}
	if h.n >= h.next {
		h.sweep(true)
	}
	b, err := breaker.New(h.opts...)
	if err != nil { // checked at NewTransport; options are the same
		panic(err)
	}
	h.m.Store(host, b)
	h.n++
	return b
}

func (h *hostTable) sweepIdle() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sweep(false)
}

// spare is a breaker a full sweep may drop: not refusing, with its window's counts.
type spare struct {
	host         string
	b            *breaker.Breaker
	failed, used int64
}

// sweep drops the idle breakers; when full, it also drops breakers that refuse nothing, the
// least failing and least used first, until gap places are free. It then sets when the next add
// sweeps: when the table is full again, or gap adds later if refusing breakers keep it full.
// Called with mu held.
func (h *hostTable) sweep(full bool) {
	var spares []spare
	h.m.Range(func(k, v any) bool {
		b := v.(*breaker.Breaker)
		s := b.Snapshot()
		switch {
		case s.Successes+s.Failures+s.Drops == 0:
			if h.m.CompareAndDelete(k, v) {
				h.n--
			}
		case full && s.Ratio == 0:
			spares = append(spares, spare{k.(string), b, s.Failures + s.Drops, s.Successes + s.Failures + s.Drops})
		}
		return true
	})
	if full && h.n > h.max-h.gap {
		slices.SortFunc(spares, func(a, b spare) int {
			return cmp.Or(cmp.Compare(a.failed, b.failed), cmp.Compare(a.used, b.used))
		})
		for _, s := range spares {
			if h.n <= h.max-h.gap {
				break
			}
			if h.m.CompareAndDelete(s.host, s.b) {
				h.n--
			}
		}
	}
	if full || h.n+h.gap < h.next {
		h.next = max(h.max, h.n+h.gap)
	}
}

// Budget returns the retry budget the Transport spends from.
func (t *Transport) Budget() *RetryBudget { return t.cfg.budget }

// statusError is a retryable response, carried through retry.Do.
type statusError struct{ resp *http.Response }

func (e *statusError) Error() string { return "wardhttp: " + e.resp.Status }

// hintedError is a retryable response with a Retry-After.
type hintedError struct {
	statusError
	wait time.Duration
}

func (e *hintedError) RetryAfter() time.Duration { return e.wait }

// RoundTrip sends req, retrying as the Transport's doc says.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	replay := replayable(req)
	var last *http.Response
	attempt := 0
	retryIf := func(err error) bool {
		var se *statusError
		var he *hintedError
		switch {
		case !replay, ended(req), errors.Is(err, contract.ErrRefused):
			return false
		case errors.As(err, &he) && he.wait > t.cfg.maxWait:
			return false
		case errors.Is(err, ErrAttemptTimeout),
			errors.As(err, &se) || errors.As(err, &he) || !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded):
			return t.cfg.budget.Allow()
		}
		return false
	}
	opts := append(append([]retry.Option{}, t.cfg.retryOpts...), retry.WithRetryIf(retryIf))
	err := retry.Do(ctx, t.cfg.backoff, func(ctx context.Context) error {
		g, err := t.admit(req.URL.Host)
		if err != nil {
			return err // refused: the previous attempt's response, if any, stays whole
		}
		if last != nil {
			discard(last)
			last = nil
		}
		r := req
		if attempt > 0 && req.GetBody != nil && req.Body != nil && req.Body != http.NoBody {
			body, err := req.GetBody()
			if err != nil {
				g.settle(Ignore)
				return err
			}
			r = req.Clone(ctx)
			r.Body = body
		}
		attempt++
		resp, err := t.send(ctx, r, &g)
		if err != nil {
			return err
		}
		last = resp
		switch resp.StatusCode {
		case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			if wait, ok := t.retryAfter(resp); ok {
				return &hintedError{statusError{resp}, wait}
			}
			return &statusError{resp}
		}
		return nil
	}, opts...)
	if last != nil {
		// err is nil, the retryable answer last itself, or a refusal of the attempt after it.
		if !ended(req) && (err == nil || answered(err, last) || errors.Is(err, contract.ErrRefused)) {
			return last, nil
		}
		discard(last)
	}
	return nil, err
}

// ended says whether the caller ended the call: its context, or the deprecated Cancel channel,
// which http.Client closes when its Timeout passes, a moment apart from the deadline it also sets
// on the context. A function, not a closure in RoundTrip: the retry rule that calls it escapes,
// and a closure it called would be one more allocation per request.
func ended(req *http.Request) bool {
	select {
	case <-req.Cancel:
		return true
	default:
		return req.Context().Err() != nil
	}
}

// gate is one attempt's admission: the host's breaker and the client limit.
type gate struct {
	promise breaker.Promise
	lease   adaptive.Lease
}

func (g *gate) settle(o Outcome) {
	settleWith(&g.promise, o)
	settleWith(&g.lease, o)
}

// admit asks the host's breaker, then the client limit, for one attempt.
func (t *Transport) admit(host string) (gate, error) {
	var g gate
	if b := t.Breaker(host); b != nil {
		p, err := b.Allow()
		if err != nil {
			return g, err
		}
		g.promise = p
	}
	if t.cfg.limit != nil {
		l, ok := t.cfg.limit.Acquire()
		if !ok {
			g.promise.Ignore()
			return g, adaptive.ErrLimitExceeded
		}
		g.lease = l
	}
	return g, nil
}

// send makes one admitted attempt and settles it. ctx is the caller's.
func (t *Transport) send(ctx context.Context, req *http.Request, g *gate) (*http.Response, error) {
	var resp *http.Response
	var err error
	if t.cfg.attempt > 0 {
		resp, err = t.timed(ctx, req)
	} else {
		resp, err = t.base.RoundTrip(req)
	}
	o := Pass
	switch {
	case err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled),
		err != nil && errors.Is(ctx.Err(), context.Canceled):
		o = Ignore
	case err != nil, resp.StatusCode >= 500:
		o = Fail
	case resp.StatusCode >= 400:
		o = Ignore
	}
	if resp != nil && resp.StatusCode == http.StatusTooManyRequests {
		t.cfg.budget.Fail() // a quota's refusal is a failed attempt for the budget (A6 pushback)
	} else {
		switch o {
		case Pass:
			t.cfg.budget.Pass()
		case Fail:
			t.cfg.budget.Fail()
		}
	}
	g.settle(o)
	return resp, err
}

// timed sends req under the attempt timeout: a context of its own, canceled if the headers
// have not come when the timer fires. The response's body keeps that context alive until it is
// closed.
func (t *Transport) timed(ctx context.Context, req *http.Request) (*http.Response, error) {
	actx, cancel := context.WithCancelCause(ctx)
	stop := t.cfg.after(t.cfg.attempt, func() { cancel(ErrAttemptTimeout) })
	resp, err := t.base.RoundTrip(req.WithContext(actx))
	if stop() { // in time: the timer will not fire
		if err != nil {
			cancel(nil)
			return nil, err
		}
		resp.Body = timedBody(resp.Body, cancel)
		return resp, nil
	}
	cancel(ErrAttemptTimeout)
	if resp != nil { // came as the timer fired: its context is gone, so is its body
		discard(resp)
	}
	if ctx.Err() != nil { // the caller's deadline or cancellation came first, or with it
		if err == nil {
			err = ctx.Err()
		}
		return nil, err
	}
	return nil, ErrAttemptTimeout
}

// timedBody makes closing body release its attempt's context. A body that can be written to (a
// 101 Switching Protocols response's) stays one.
func timedBody(body io.ReadCloser, cancel context.CancelCauseFunc) io.ReadCloser {
	if w, ok := body.(io.ReadWriteCloser); ok {
		return &cancelRWBody{cancelBody{w, cancel}, w}
	}
	return &cancelBody{body, cancel}
}

type cancelBody struct {
	io.ReadCloser
	cancel context.CancelCauseFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel(nil)
	return err
}

type cancelRWBody struct {
	cancelBody
	w io.Writer
}

func (b *cancelRWBody) Write(p []byte) (int, error) { return b.w.Write(p) }

// retryAfter reads a response's Retry-After: delay-seconds or an HTTP-date (RFC 9110 10.2.3). A
// date in the past is a wait of zero; an unreadable value is no hint.
func (t *Transport) retryAfter(resp *http.Response) (time.Duration, bool) {
	v := resp.Header.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s < 0 {
			return 0, false
		}
		if s > int64(maxRetryAfter/time.Second) {
			return maxRetryAfter, true
		}
		return time.Duration(s) * time.Second, true
	}
	if d, err := http.ParseTime(v); err == nil {
		return max(d.Sub(t.cfg.wallClock()), 0), true
	}
	return 0, false
}

// maxRetryAfter bounds a Retry-After so it cannot overflow a Duration.
const maxRetryAfter = time.Duration(math.MaxInt64)

// answered says whether err is the retryable answer resp, returned as it came.
func answered(err error, resp *http.Response) bool {
	var se *statusError
	var he *hintedError
	return errors.As(err, &he) && he.resp == resp || errors.As(err, &se) && se.resp == resp
}

// replayable says whether req may be sent again: its body can be rewound, and sending it twice
// does what sending it once does (net/http's own rule for its retries).
func replayable(req *http.Request) bool {
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return false
	}
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	_, a := req.Header["Idempotency-Key"]
	_, b := req.Header["X-Idempotency-Key"]
	return a || b
}

// discard drains a little of a response body, so its connection can be reused, and closes it.
func discard(resp *http.Response) {
	_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
	_ = resp.Body.Close()
}
