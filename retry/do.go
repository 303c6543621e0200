package retry

import (
	"context"
	"errors"
	"time"

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
// that does not implement Hinted (anywhere in its chain, as errors.As finds it) has no hint.
type Hinted interface {
	error
	RetryAfter() time.Duration
}

// Option configures [Do].
type Option func(*doConfig)

type doConfig struct {
	sleep   func(context.Context, time.Duration) error
	roll    func() float64
	retryIf func(error) bool
}

// WithSleep replaces the wait between tries: it must wait d or return ctx's error when ctx ends
// first. Tests inject one that returns at once, so nothing ever sleeps.
func WithSleep(sleep func(ctx context.Context, d time.Duration) error) Option {
	return func(c *doConfig) {
		if sleep != nil {
			c.sleep = sleep
		}
	}
}

// WithRand replaces the draw source for the jitter (default: math/rand/v2).
func WithRand(roll func() float64) Option { return func(c *doConfig) { c.roll = draw.Func(roll) } }

// WithRetryIf says which errors are worth another try (default: every error but the context's
// own).
func WithRetryIf(retryable func(error) bool) Option {
	return func(c *doConfig) {
		if retryable != nil {
			c.retryIf = retryable
		}
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
// ctx ends. Between tries it waits the backoff's delay, or what the error's hint says ([Hinted]:
// a negative hint stops the retries, zero retries at once). It returns nil on success, else the
// last error fn returned (joined with ctx's error if the context ended while waiting). An invalid
// backoff is returned as an error without calling fn.
func Do(ctx context.Context, b Backoff, fn func(context.Context) error, opts ...Option) error {
	if err := b.Validate(); err != nil {
		return err
	}
	c := doConfig{sleep: sleepCtx, roll: draw.Float64, retryIf: func(err error) bool {
		return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
	}}
	for _, o := range opts {
		o(&c)
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
		var wait time.Duration
		if h := Hinted(nil); errors.As(err, &h) {
			if wait = h.RetryAfter(); wait < 0 {
				return err
			}
			retries, prev = 0, b.Base
		} else {
			retries++
			wait = b.Delay(retries, c.roll(), prev)
			prev = wait
		}
		if serr := c.sleep(ctx, wait); serr != nil {
			return errors.Join(err, serr)
		}
	}
}
