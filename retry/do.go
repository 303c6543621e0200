package retry

import (
	"context"
	"errors"
	"time"

	"github.com/wardgo/ward/internal/contract"
	"github.com/wardgo/ward/internal/draw"
)

// Hinted is an error that says how long to wait before the next try, as a server's pushback
// (gRPC's grpc-retry-pushback-ms) or a Retry-After header does. [Do] reads it as gRPC's proposal
// A6 reads a pushback:
//
//   - a negative RetryAfter means "do not retry": Do returns the error at once. A caller that
//     parses a pushback maps an unparseable value to a negative one, as A6 asks;
//   - zero means "retry now": Do tries again without waiting;
//   - a positive RetryAfter is waited exactly, instead of the backoff's delay (never longer than the
//     context allows).
//
// A hint resets the backoff: the next wait that has no hint is the first retry's again. An error
// that does not implement Hinted (anywhere in its chain, as errors.As finds it) has no hint,
// unless it is a ward refusal without a wait, read as a negative one. A ward refusal that carries
// its wait implements Hinted: the wait is its hint, the same one ward.RetryAfter reads.
type Hinted interface {
	error
	RetryAfter() time.Duration
}

// Option configures [Do]; a nil Option is an error.
type Option func(*config) error

type config struct {
	sleep   func(context.Context, time.Duration) error
	roll    func() float64
	retryIf func(error) bool
	custom  bool // a WithRetryIf replaced the default retryIf
}

// WithSleep replaces the wait between tries: it must wait d or return ctx's error when ctx ends
// first. Tests inject one that returns at once, so nothing ever sleeps. A nil sleep is an error.
func WithSleep(sleep func(ctx context.Context, d time.Duration) error) Option {
	return func(c *config) error {
		if sleep == nil {
			return contract.Field(ErrInvalid, "WithSleep", "nil", "a function")
		}
		c.sleep = sleep
		return nil
	}
}

// WithRand replaces the draw source for the jitter (default: math/rand/v2); a draw outside
// [0, 1) is held into it. A nil source is an error.
func WithRand(roll func() float64) Option {
	return func(c *config) error {
		if roll == nil {
			return contract.Field(ErrInvalid, "WithRand", "nil", "a function")
		}
		c.roll = draw.Func(roll)
		return nil
	}
}

// WithRetryIf says which errors are worth another try (default: every error but the context's
// own). It narrows what Do retries and never widens it: a ward refusal without a wait is not
// retried whatever it says. Several WithRetryIf narrow together: an error is retried only when
// every one of them accepts it, so a rule added by a wrapper (an HTTP transport's) never drops
// the caller's. A nil predicate is an error.
func WithRetryIf(retryable func(error) bool) Option {
	return func(c *config) error {
		if retryable == nil {
			return contract.Field(ErrInvalid, "WithRetryIf", "nil", "a predicate")
		}
		if prev := c.retryIf; c.custom {
			c.retryIf = func(err error) bool { return prev(err) && retryable(err) }
			return nil
		}
		c.retryIf, c.custom = retryable, true
		return nil
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Do calls fn until it succeeds, the backoff has no attempts left, fn's error is not retryable, or
// ctx ends. Between tries it waits the backoff's delay, or what the error says:
//
//   - a [Hinted] error's hint: a negative hint stops the retries, zero retries at once, a positive
//     one is waited exactly and resets the backoff;
//   - a ward refusal (an error matching ward.ErrRefused) is retried only when it carries a wait
//     (ward.RetryAfter: a rate limit, a failure window), which is read as a positive hint; a
//     refusal without one (an adaptive limit, a breaker, a shedder) is returned at once, since
//     retrying a local refusal is how retry storms start.
//
// It returns nil on success, else the last error fn returned (joined with ctx's error if the
// context ended while waiting). An invalid backoff or option is returned as an error without
// calling fn.
func Do(ctx context.Context, b Backoff, fn func(context.Context) error, opts ...Option) error {
	if err := b.Validate(); err != nil {
		return err
	}
	c := config{sleep: sleepCtx, roll: draw.Float64, retryIf: func(err error) bool {
		return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
	}}
	if err := contract.Apply(ErrInvalid, &c, opts); err != nil {
		return err
	}
	prev := b.Base
	retries := 0 // retries since the start or the last hint: what the backoff's delay counts
	for made := 1; ; made++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := fn(ctx)
		if err == nil {
			return nil
		}
		if !b.More(made) || !c.retryIf(err) {
			return err
		}
		wait, hinted := hint(err)
		switch {
		case hinted && wait < 0:
			return err
		case hinted:
			retries, prev = 0, b.Base
		default:
			retries++
			wait = b.Delay(retries, c.roll(), prev)
			prev = wait
		}
		if serr := c.sleep(ctx, wait); serr != nil {
			return errors.Join(err, serr)
		}
	}
}

// hint returns the wait err asks for before the next try, if it asks: a [Hinted] error's hint, a
// ward refusal's wait, or −1 (do not retry) for a ward refusal without one.
func hint(err error) (time.Duration, bool) {
	if h := Hinted(nil); errors.As(err, &h) { // a ward refusal's wait is one too
		return h.RetryAfter(), true
	}
	if errors.Is(err, contract.ErrRefused) {
		return -1, true
	}
	return 0, false
}
