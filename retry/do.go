package retry

import (
	"context"
	"errors"
	"time"

	"github.com/wardgo/ward/internal/draw"
)

// Hinted is an error that says how long to wait before the next try, as a Retry-After header
// does. Do waits that long instead of its own delay (never longer than the context allows).
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
// ctx ends. Between tries it waits the backoff's delay, or the error's RetryAfter hint when it
// carries one ([Hinted]). It returns nil on success, else the last error fn returned (joined with
// ctx's error if the context ended while waiting). An invalid backoff is returned as an error
// without calling fn.
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
		wait := b.Delay(made, c.roll(), prev)
		prev = wait
		var h Hinted
		if errors.As(err, &h) && h.RetryAfter() > 0 {
			wait = h.RetryAfter()
		}
		if serr := c.sleep(ctx, wait); serr != nil {
			return errors.Join(err, serr)
		}
	}
}
