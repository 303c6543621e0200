package wardhttp

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/wardgo/ward"
	"github.com/wardgo/ward/adaptive"
	"github.com/wardgo/ward/failurewindow"
	"github.com/wardgo/ward/internal/contract"
	"github.com/wardgo/ward/shed"
)

// ErrInvalid is matched, with errors.Is, by every configuration error of this package (and by
// ward.ErrInvalid); the message names the argument or option.
var ErrInvalid = contract.Invalid("wardhttp: invalid configuration")

// Middleware wraps a handler. Every constructor of this package returns one; compose them with
// [Chain], and protect one route by wrapping only its handler.
type Middleware func(http.Handler) http.Handler

// Chain returns the middlewares applied in order: the first is outermost, so it decides first.
// Put the cheapest refusal first (a per-key rate before an adaptive limit), so a refused request
// holds no slot of the others.
func Chain(mws ...Middleware) Middleware {
	return func(h http.Handler) http.Handler {
		for i := len(mws) - 1; i >= 0; i-- {
			h = mws[i](h)
		}
		return h
	}
}

// Outcome is how a handled request settles its admission.
type Outcome = contract.Outcome

const (
	// Pass is a success.
	Pass = contract.Pass
	// Fail is an overload or a failure: what moves limits, ratios and failure counts.
	Fail = contract.Fail
	// Ignore is neutral: frees the slot and records nothing.
	Ignore = contract.Ignore
)

// Classify says how a request the handler has answered settles, from the request (its context)
// and the status the handler wrote (200 when it wrote a body without a status, 0 when it wrote
// nothing, which net/http sends as 200).
type Classify func(r *http.Request, status int) Outcome

// Classified is the default [Classify]: the client going away (the request's context canceled) is
// Ignore; the request's deadline passing is Fail; a 5xx, handler timeouts included
// (http.TimeoutHandler answers 503), is Fail; a 4xx is Ignore (the client's own error, it says
// nothing about the server's health); anything else is Pass.
func Classified(r *http.Request, status int) Outcome {
	switch err := r.Context().Err(); {
	case errors.Is(err, context.Canceled):
		return Ignore
	case err != nil:
		return Fail
	case status >= 500:
		return Fail
	case status >= 400:
		return Ignore
	}
	return Pass
}

// FailedLogin is a [Classify] for [Failures] in front of a login or any endpoint whose refusals
// mean a wrong guess: 401 and 403 count as Fail, on top of what [Classified] says.
func FailedLogin(r *http.Request, status int) Outcome {
	if status == http.StatusUnauthorized || status == http.StatusForbidden {
		return Fail
	}
	return Classified(r, status)
}

// Refusal describes a refused request to a [RefuseFunc].
type Refusal struct {
	// Err is the refusing package's sentinel (adaptive.ErrLimitExceeded, shed.ErrOverloaded,
	// rate.ErrLimited, failurewindow.ErrTooManyFailures); it matches ward.ErrRefused.
	Err error
	// Status is the status the default answer uses: 503 (overload: an adaptive limit, a
	// shedder) or 429 (a quota: a rate, a failure window).
	Status int
	// Wait is how long until the request would pass, when the refusal knows it; 0 when not.
	Wait time.Duration
}

// RefuseFunc writes the response to a refused request. The handler was not called.
type RefuseFunc func(w http.ResponseWriter, r *http.Request, ref Refusal)

// Refuse is the default [RefuseFunc]: ref.Status with a short plain-text body, and a Retry-After
// header in whole seconds, rounded up, when ref.Wait is known. It allocates nothing for waits up
// to two minutes (the header's values are built once); net/http's own header map may allocate.
func Refuse(w http.ResponseWriter, _ *http.Request, ref Refusal) {
	h := w.Header()
	if ref.Wait > 0 {
		h["Retry-After"] = retryAfterValue(ref.Wait)
	}
	h["Content-Type"] = plainText
	h["X-Content-Type-Options"] = nosniff
	w.WriteHeader(ref.Status)
	switch ref.Status {
	case http.StatusTooManyRequests:
		_, _ = w.Write(bodyTooMany)
	case http.StatusServiceUnavailable:
		_, _ = w.Write(bodyUnavailable)
	}
}

// maxCachedRetryAfter is the largest Retry-After, in seconds, whose header value is built once.
const maxCachedRetryAfter = 120

var (
	plainText       = []string{"text/plain; charset=utf-8"}[:1:1]
	nosniff         = []string{"nosniff"}[:1:1]
	bodyTooMany     = []byte("too many requests\n")
	bodyUnavailable = []byte("service unavailable\n")
	retryAfters     = func() (v [maxCachedRetryAfter + 1][]string) {
		for i := range v {
			v[i] = []string{strconv.Itoa(i)}[:1:1]
		}
		return v
	}()
)

// retryAfterValue is the Retry-After header of a wait: whole seconds, rounded up, at least 1. The
// slices are shared and capped, so an append by anyone copies.
func retryAfterValue(wait time.Duration) []string {
	s := wait / time.Second
	if wait%time.Second != 0 {
		s++ // rounded up without adding first, so rate.Forever does not wrap round
	}
	if s < 1 {
		s = 1
	}
	if s <= maxCachedRetryAfter {
		return retryAfters[s]
	}
	return []string{strconv.FormatInt(int64(s), 10)}
}

// Option configures a middleware; a nil Option or nil function is an error.
type Option func(*config) error

type config struct {
	refuse   RefuseFunc
	classify Classify
}

// WithRefuse replaces the response written to a refused request (default [Refuse]).
func WithRefuse(f RefuseFunc) Option {
	return func(c *config) error {
		if f == nil {
			return contract.Field(ErrInvalid, "WithRefuse", "nil", "a function")
		}
		c.refuse = f
		return nil
	}
}

// WithClassify replaces how an answered request settles (default [Classified]; [FailedLogin] for
// a failure window in front of a login).
func WithClassify(f Classify) Option {
	return func(c *config) error {
		if f == nil {
			return contract.Field(ErrInvalid, "WithClassify", "nil", "a function")
		}
		c.classify = f
		return nil
	}
}

func newConfig(classify Classify, opts []Option) (config, error) {
	c := config{refuse: Refuse, classify: classify}
	err := contract.Apply(ErrInvalid, &c, opts)
	return c, err
}

// settler is the handle of an admitted request: adaptive.Lease, shed.Promise.
type settler interface {
	Pass()
	Fail()
	Ignore()
}

// serve runs h on a recording writer and returns how the request settles. A panic settles
// through settle as Fail (Ignore when the client had gone and the handler aborted) and continues.
func serve(h http.Handler, w http.ResponseWriter, r *http.Request, classify Classify, settle func(Outcome)) {
	rec := &recorder{w: w}
	done := false
	defer func() {
		if done {
			return
		}
		p := recover()
		if p == http.ErrAbortHandler && r.Context().Err() != nil {
			settle(Ignore)
		} else {
			settle(Fail)
		}
		panic(p)
	}()
	h.ServeHTTP(rec, r)
	done = true
	settle(classify(r, rec.status))
}

// serveSettling serves an admitted request and settles its handle. The handle is copied, so the
// caller's variable stays on its stack and a refusal allocates nothing.
func serveSettling[S any, PS interface {
	*S
	settler
}](h http.Handler, w http.ResponseWriter, r *http.Request, classify Classify, handle PS) {
	held := *handle
	serve(h, w, r, classify, func(o Outcome) { settleWith(PS(&held), o) })
}

func settleWith(s settler, o Outcome) {
	switch o {
	case Pass:
		s.Pass()
	case Fail:
		s.Fail()
	default:
		s.Ignore()
	}
}

// Guard admits each request through g ([ward.Guard]: any of ward's guards, a [ward.Chain], or
// a guard of your own) and settles its admission from the response, as the option's [Classify]
// says (default [Classified]). A refusal is answered by the [RefuseFunc] (default [Refuse]): 429
// for a quota (a refusal matching ward.ErrQuota: a rate, a failure window), 503 for an overload,
// with Retry-After when the refusal carries its wait. A request whose context is already done (or
// ends while an adaptive.Queue holds it in line) is answered 503 without reaching the handler. A
// panicking handler settles as Fail (Ignore when the client had gone and the handler aborted with
// http.ErrAbortHandler) and the panic continues.
func Guard(g ward.Guard, opts ...Option) (Middleware, error) {
	if g == nil {
		return nil, contract.Field(ErrInvalid, "Guard", "nil", "a ward.Guard")
	}
	c, err := newConfig(Classified, opts)
	if err != nil {
		return nil, err
	}
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			a, err := g.Admit(r.Context())
			if err != nil {
				c.refuse(w, r, refusalOf(err))
				return
			}
			serveSettling(h, w, r, c.classify, &a)
		})
	}, nil
}

// refusalOf describes the refusal err: 429 for a quota, 503 otherwise, with its wait if known.
func refusalOf(err error) Refusal {
	ref := Refusal{Err: err, Status: http.StatusServiceUnavailable}
	if errors.Is(err, ward.ErrQuota) {
		ref.Status = http.StatusTooManyRequests
	}
	ref.Wait, _ = ward.RetryAfter(err)
	return ref
}

// Limit is [Guard] for an adaptive limit: a request is admitted while fewer than l's limit are in
// flight, and the admitted requests' response times move the limit. A refusal is a 503 without
// Retry-After (an adaptive limit cannot know when a slot frees). It reads no clock and allocates
// nothing on a refusal.
func Limit(l *adaptive.Limiter, opts ...Option) (Middleware, error) {
	if l == nil {
		return nil, contract.Field(ErrInvalid, "Limit", "nil", "an *adaptive.Limiter")
	}
	return Guard(l, opts...)
}

// Shed is [Guard] for a shedder: a request is admitted unless s says the server is overloaded
// (hot and full). A refusal is a 503 without Retry-After.
func Shed(s *shed.Shedder, opts ...Option) (Middleware, error) {
	if s == nil {
		return nil, contract.Field(ErrInvalid, "Shed", "nil", "a *shed.Shedder")
	}
	return Guard(s, opts...)
}

// Failures refuses a request whose key has failed limit times within fw's window, before the
// handler runs, with a 429 and Retry-After (when its oldest counted failure leaves the window);
// an admitted request whose response classifies as Fail counts a failure for its key. Use it with
// [WithClassify]([FailedLogin]) in front of a login: an address guessing passwords is refused
// until its failures age out.
//
// # Edge cases
//
// Requests admitted at once below the limit may push a key past it, by no more than were admitted
// at once (the failure window counts outcomes). A panic counts a failure and continues.
func Failures(fw *failurewindow.Window, key KeyFunc, opts ...Option) (Middleware, error) {
	if fw == nil {
		return nil, contract.Field(ErrInvalid, "Failures", "nil", "a *failurewindow.Window")
	}
	if key == nil {
		return nil, contract.Field(ErrInvalid, "Failures key", "nil", "a KeyFunc")
	}
	c, err := newConfig(Classified, opts)
	if err != nil {
		return nil, err
	}
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			k := key(r)
			if ok, wait := fw.Admit(k); !ok {
				c.refuse(w, r, Refusal{Err: failurewindow.ErrTooManyFailures, Status: http.StatusTooManyRequests, Wait: wait})
				return
			}
			serve(h, w, r, c.classify, func(o Outcome) {
				if o == Fail {
					fw.Record(k)
				}
			})
		})
	}, nil
}

// KeyFunc names the party a request is counted against: a client address, an API key, a route.
// It must not retain r.
type KeyFunc func(r *http.Request) string

// ByClientAddr keys a request by the client's IP address (the host part of RemoteAddr, without
// the port), so every connection of one client shares its allowance. It allocates nothing. Behind
// a proxy, key by the header the proxy sets instead ([ByHeader]).
func ByClientAddr(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

// ByHeader keys a request by the first value of a header (an API key, X-Forwarded-For as a
// trusted proxy sets it); a request without it gets the key "" and shares one allowance with
// every other such request.
func ByHeader(name string) KeyFunc {
	name = http.CanonicalHeaderKey(name)
	return func(r *http.Request) string {
		if v := r.Header[name]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
}

// ByRoute keys a request by the ServeMux pattern that matched it (Request.Pattern, "GET
// /items/{id}"), so each route has an allowance of its own. The pattern is set only once the mux
// has routed the request: wrap the handlers you register, not the mux.
func ByRoute(r *http.Request) string { return r.Pattern }
