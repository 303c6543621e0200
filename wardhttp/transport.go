package wardhttp

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
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
// limit on the calls in flight, and retries with backoff (retry.Do) that honour Retry-After and
// spend from a [RetryBudget], so that retries cannot multiply an outage.
//
// An attempt settles Fail on a transport error (other than the caller's cancellation, which is
// Ignore) or a 5xx; Ignore on a 4xx other than none, since a client error says nothing of the
// backend; Pass otherwise. A limit's lease is held until the response's headers arrive.
//
// Retries: an attempt is retried when it failed with a transport error or answered 429, 502, 503
// or 504; the request can be sent again (no body, or GetBody to rewind it); it is idempotent (GET,
// HEAD, OPTIONS, TRACE, PUT, DELETE, or an Idempotency-Key or X-Idempotency-Key header, as net/http
// itself decides); the backoff has attempts left; the budget allows a retry; and the wait a
// Retry-After asks (seconds or an HTTP-date) is at most the most it accepts (WithMaxRetryAfter).
// The wait is the Retry-After when the response has one, else the backoff's. A ward refusal (the
// breaker's, the limit's: errors matching ward.ErrRefused) is returned at once and never retried.
// When the retries end on a retryable status, that last response is returned as it came, body
// open.
//
// Safe for concurrent use; must not be copied after first use. Build one with NewTransport.
type Transport struct {
	_        noCopy
	base     http.RoundTripper
	breakers sync.Map // host → *breaker.Breaker
	cfg      transportConfig
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
	c := transportConfig{backoff: retry.DefaultBackoff(), maxWait: 10 * time.Second, wallClock: time.Now}
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
	return &Transport{base: base, cfg: c}, nil
}

// Breaker returns the breaker guarding host (as in a URL: "example.com:8443"), made on first
// use; nil when breakers are off.
func (t *Transport) Breaker(host string) *breaker.Breaker {
	if t.cfg.noBreaker {
		return nil
	}
	if b, ok := t.breakers.Load(host); ok {
		return b.(*breaker.Breaker)
	}
	nb, err := breaker.New(t.cfg.breakerOpts...)
	if err != nil { // checked at NewTransport; options are the same
		panic(err)
	}
	b, _ := t.breakers.LoadOrStore(host, nb)
	return b.(*breaker.Breaker)
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
		case !replay, ctx.Err() != nil, errors.Is(err, contract.ErrRefused):
			return false
		case errors.As(err, &he) && he.wait > t.cfg.maxWait:
			return false
		case errors.As(err, &se) || errors.As(err, &he) || !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded):
			return t.cfg.budget.Allow()
		}
		return false
	}
	opts := append(append([]retry.Option{}, t.cfg.retryOpts...), retry.WithRetryIf(retryIf))
	err := retry.Do(ctx, t.cfg.backoff, func(ctx context.Context) error {
		if last != nil {
			discard(last)
			last = nil
		}
		r := req
		if attempt > 0 && req.GetBody != nil && req.Body != nil && req.Body != http.NoBody {
			body, err := req.GetBody()
			if err != nil {
				return err
			}
			r = req.Clone(ctx)
			r.Body = body
		}
		attempt++
		resp, err := t.once(r)
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
		if ctx.Err() == nil && (err == nil || answered(err, last)) {
			return last, nil
		}
		discard(last)
	}
	return nil, err
}

// once makes one attempt through the host's breaker and the client limit.
func (t *Transport) once(req *http.Request) (*http.Response, error) {
	var promise breaker.Promise
	if b := t.Breaker(req.URL.Host); b != nil {
		p, err := b.Allow()
		if err != nil {
			return nil, err
		}
		promise = p
	}
	var lease adaptive.Lease
	if t.cfg.limit != nil {
		l, ok := t.cfg.limit.Acquire()
		if !ok {
			promise.Ignore()
			return nil, adaptive.ErrLimitExceeded
		}
		lease = l
	}
	resp, err := t.base.RoundTrip(req)
	o := Pass
	switch {
	case err != nil && req.Context().Err() != nil && errors.Is(err, context.Canceled),
		err != nil && errors.Is(req.Context().Err(), context.Canceled):
		o = Ignore
	case err != nil, resp.StatusCode >= 500:
		o = Fail
	case resp.StatusCode >= 400:
		o = Ignore
	}
	if resp != nil && resp.StatusCode == http.StatusTooManyRequests {
		t.cfg.budget.Failure() // a quota's refusal is a failed attempt for the budget (A6 pushback)
	} else {
		switch o {
		case Pass:
			t.cfg.budget.Success()
		case Fail:
			t.cfg.budget.Failure()
		}
	}
	settleWith(&promise, o)
	settleWith(&lease, o)
	return resp, err
}

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
