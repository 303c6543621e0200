// Package contract holds the pieces every ward package shares to keep one contract: the two
// sentinels every refusal and every configuration error match, the refusal that carries a wait,
// the field-naming configuration error, the option loop, and the one classification Do applies to
// fn's error. The root package re-exports what users need.
package contract

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrRefused is matched, with errors.Is, by every refusal of every ward type.
var ErrRefused = errors.New("ward: refused")

// ErrQuota is matched, with errors.Is, by every refusal that is a quota (a rate, a failure
// window: the caller has had its share) rather than an overload; it matches ErrRefused too.
var ErrQuota = &sentinel{"ward: over quota", ErrRefused}

// ErrInvalid is matched, with errors.Is, by every configuration error of every ward package.
var ErrInvalid = errors.New("ward: invalid configuration")

// sentinel is a package's own error that also matches a shared one.
type sentinel struct {
	msg    string
	parent error
}

func (s *sentinel) Error() string { return s.msg }
func (s *sentinel) Is(target error) bool {
	for p := s.parent; p != nil; {
		if target == p {
			return true
		}
		q, ok := p.(*sentinel)
		if !ok {
			return false
		}
		p = q.parent
	}
	return false
}

// Refusal returns a package's refusal sentinel: its own error, matching [ErrRefused] too.
// Returning it allocates nothing.
func Refusal(msg string) error { return &sentinel{msg, ErrRefused} }

// Quota returns a package's refusal sentinel for a quota: its own error, matching [ErrQuota] and
// [ErrRefused] too.
func Quota(msg string) error { return &sentinel{msg, ErrQuota} }

// Invalid returns a package's configuration sentinel, matching [ErrInvalid] too.
func Invalid(msg string) error { return &sentinel{msg, ErrInvalid} }

// Field returns a configuration error naming the field: "<pkg sentinel>: <field> = <got>, want
// <want>", matching the package's sentinel and [ErrInvalid].
func Field(pkg error, field string, got any, want string) error {
	return fmt.Errorf("%w: %s = %v, want %s", pkg, field, got, want)
}

// Apply runs every option over c in order and stops at the first error; a nil option is an error
// naming its position.
func Apply[C any, O ~func(*C) error](pkg error, c *C, opts []O) error {
	for i, o := range opts {
		if o == nil {
			return Field(pkg, fmt.Sprintf("option %d", i), "nil", "an Option")
		}
		if err := o(c); err != nil {
			return err
		}
	}
	return nil
}

// Waited is a refusal that knows how long until the call would pass.
type Waited struct {
	Err  error         // the package's refusal sentinel
	Wait time.Duration // how long until a call would pass; > 0
}

func (w *Waited) Error() string { return w.Err.Error() + " (retry in " + w.Wait.String() + ")" }
func (w *Waited) Unwrap() error { return w.Err }

// RetryAfter returns the wait: a Waited is a hinted error (retry.Hinted), the one way every wait
// is read.
func (w *Waited) RetryAfter() time.Duration { return w.Wait }

// Wait returns err with its wait attached, or err itself when the wait is unknown (zero or less).
// Attaching allocates one small value; the sentinel alone allocates nothing.
func Wait(err error, wait time.Duration) error {
	if wait <= 0 {
		return err
	}
	return &Waited{Err: err, Wait: wait}
}

// RetryAfter returns the wait err carries, if it carries one: the RetryAfter() of the first
// error in its chain that has that method (a [Waited], retry.Hinted, an error of the caller's
// own). It follows the chain of single Unwrap methods by hand, not errors.As, so that reading a
// refusal allocates nothing.
func RetryAfter(err error) (time.Duration, bool) {
	for err != nil {
		if h, ok := err.(interface{ RetryAfter() time.Duration }); ok {
			return h.RetryAfter(), true
		}
		err = errors.Unwrap(err)
	}
	return 0, false
}

// Outcome is how a call is settled.
type Outcome uint8

const (
	// Pass is a success.
	Pass Outcome = iota
	// Fail is an overload or a failure: the signal that moves limits and ratios.
	Fail
	// Ignore is neutral: the caller's own error or cancellation. It frees the slot and records
	// nothing.
	Ignore
)

// Classify is the one classification every Do applies to fn's error: nil is a success; the
// caller's own cancellation (context.Canceled while ctx is done) is neutral; a deadline
// (context.DeadlineExceeded) is an overload; an error own says is the caller's own (not found,
// validation) settles as ownAs; any other error settles as otherAs, or as Fail if fail says it is
// an overload. own and fail may be nil.
func Classify(ctx context.Context, err error, own, fail func(error) bool, ownAs, otherAs Outcome) Outcome {
	switch {
	case err == nil:
		return Pass
	case ctx.Err() != nil && errors.Is(err, context.Canceled):
		return Ignore
	case errors.Is(err, context.DeadlineExceeded):
		return Fail
	case fail != nil && fail(err):
		return Fail
	case own != nil && own(err):
		return ownAs
	}
	return otherAs
}

// Func is the shape of the functions options take: a clock, a draw source, a CPU reading, an
// error predicate.
type Func interface {
	~func() int64 | ~func() float64 | ~func() int | ~func(error) bool
}

// Set stores f in *dst for the option named option, or returns an error naming the option when f
// is nil: every option taking a function reads `return contract.Set(ErrInvalid, "WithClock",
// &c.clock, now)`.
func Set[F Func](pkg error, option string, dst *F, f F) error {
	if f == nil {
		return Field(pkg, option, "nil", "a function")
	}
	*dst = f
	return nil
}

// Hook is Set for an event callback: it stores f in *dst, or returns an error naming the option
// when f is nil.
func Hook[E any](pkg error, option string, dst *func(E), f func(E)) error {
	if f == nil {
		return Field(pkg, option, "nil", "a function")
	}
	*dst = f
	return nil
}

// Dead returns ctx's error when ctx is already done, and nil otherwise: every Do calls it before
// it takes anything, so a call whose caller has given up spends no token, slot or sample and
// returns the context's own error (context.Canceled or context.DeadlineExceeded), not a refusal.
// It reads Done without blocking, as go-zero's AllowCtx does, so a context that can never be
// done (context.Background) costs a nil check.
func Dead(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	default:
		return nil
	}
}

// Settle calls the verb o names: every Do ends with Settle(Classify(…), h.Pass, h.Fail, h.Ignore).
// It is small enough to inline, so the method values neither escape nor allocate.
func Settle(o Outcome, pass, fail, ignore func()) {
	switch o {
	case Pass:
		pass()
	case Fail:
		fail()
	default:
		ignore()
	}
}
