// Package clients is the clients the fault harness compares: ward's Transport with each breaker
// policy, go-zero's breaker, gobreaker, and no breaker, all behind the same retries.
package clients

import (
	"errors"
	"net/http"
	"time"

	"github.com/sony/gobreaker/v2"
	zbreaker "github.com/zeromicro/go-zero/core/breaker"

	"github.com/wardgo/ward"
	"github.com/wardgo/ward/breaker"
	"github.com/wardgo/ward/wardhttp"
)

// Client is one client under test: Wrap builds its http.RoundTripper over base (a Meter over
// the network), fresh for each scenario.
type Client struct {
	Name string
	Note string
	Wrap func(base http.RoundTripper) (http.RoundTripper, error)
}

// Clients returns the clients compared, in the tables' order. Every one is a
// wardhttp.Transport, so all retry alike (retry.DefaultBackoff, Retry-After honoured, the
// default retry budget); what differs is the breaker each attempt passes. go-zero's and
// gobreaker's stand where ward's would, their refusals returned as ward refusals so the
// Transport treats them as it treats its own (never retried).
func Clients() []Client {
	return []Client{
		{"ward default", "wardhttp.NewTransport as it comes: breaker.New's default policy", wardClient()},
		{"ward RecoveryPolicy", "breaker.WithPolicy(breaker.RecoveryPolicy())", wardClient(breaker.WithPolicy(breaker.RecoveryPolicy()))},
		{"ward GoZeroPolicy", "breaker.WithPolicy(breaker.GoZeroPolicy()): go-zero v1.10.3 exactly", wardClient(breaker.WithPolicy(breaker.GoZeroPolicy()))},
		{"go-zero", "github.com/zeromicro/go-zero v1.10.3 core/breaker.NewBreaker()", guarded(func() guard { return goZero{zbreaker.NewBreaker()} })},
		{"gobreaker 60 s", "github.com/sony/gobreaker/v2 v2.4.0 two-step, default Settings (open 60 s)", guarded(func() guard { return newGobreaker(0) })},
		{"gobreaker 5 s", "the same with Settings.Timeout 5 s", guarded(func() guard { return newGobreaker(5 * time.Second) })},
		{"no breaker", "wardhttp.NewTransport with WithoutBreaker(): the retries alone, the baseline", func(base http.RoundTripper) (http.RoundTripper, error) {
			return wardhttp.NewTransport(base, wardhttp.WithoutBreaker())
		}},
	}
}

func wardClient(opts ...breaker.Option) func(http.RoundTripper) (http.RoundTripper, error) {
	return func(base http.RoundTripper) (http.RoundTripper, error) {
		if len(opts) == 0 {
			return wardhttp.NewTransport(base)
		}
		return wardhttp.NewTransport(base, wardhttp.WithBreaker(opts...))
	}
}

// guard is another library's breaker: allow admits an attempt or refuses it, and done settles an
// admitted one.
type guard interface {
	allow() (done func(ok bool), err error)
}

func guarded(make func() guard) func(http.RoundTripper) (http.RoundTripper, error) {
	return func(base http.RoundTripper) (http.RoundTripper, error) {
		return wardhttp.NewTransport(&guardTripper{base: base, g: make()}, wardhttp.WithoutBreaker())
	}
}

// guardTripper sends each attempt through g, which settles it as ward's Transport settles its
// own breaker: a failure on a transport error or a 5xx, a success otherwise.
type guardTripper struct {
	base http.RoundTripper
	g    guard
}

func (t *guardTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	done, err := t.g.allow()
	if err != nil {
		return nil, refusal{err}
	}
	resp, err := t.base.RoundTrip(req)
	done(err == nil && resp.StatusCode < 500)
	return resp, err
}

// refusal is another library's refusal, matching ward.ErrRefused.
type refusal struct{ err error }

func (r refusal) Error() string        { return r.err.Error() }
func (r refusal) Unwrap() error        { return r.err }
func (r refusal) Is(target error) bool { return target == ward.ErrRefused }

// goZero is go-zero's breaker, used as its doc says: Allow, then Accept or Reject.
type goZero struct{ b zbreaker.Breaker }

var errFailed = errors.New("5xx or transport error")

func (z goZero) allow() (func(bool), error) {
	p, err := z.b.Allow()
	if err != nil {
		return nil, err
	}
	return settle(p.Accept, func() { p.Reject(errFailed.Error()) }), nil
}

// settle returns the done of a guard that settles with pass or fail.
func settle(pass, fail func()) func(ok bool) {
	return func(ok bool) {
		if ok {
			pass()
		} else {
			fail()
		}
	}
}

// goBreaker is gobreaker's two-step breaker with its default Settings but Timeout.
type goBreaker struct {
	b *gobreaker.TwoStepCircuitBreaker[struct{}]
}

func newGobreaker(timeout time.Duration) goBreaker {
	return goBreaker{gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{Name: "dependency", Timeout: timeout})}
}

func (g goBreaker) allow() (func(bool), error) {
	done, err := g.b.Allow()
	if err != nil {
		return nil, err
	}
	return settle(func() { done(nil) }, func() { done(errFailed) }), nil
}
