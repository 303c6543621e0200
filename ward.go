package ward

import (
	"context"
	"time"

	"github.com/wardgo/ward/internal/contract"
)

// ErrRefused is matched, with errors.Is, by every refusal of every ward type: a middleware maps
// any of them to 503 or 429 without knowing the package. Each package's own sentinel
// (adaptive.ErrLimitExceeded, breaker.ErrUnavailable, shed.ErrOverloaded, rate.ErrLimited,
// failurewindow.ErrTooManyFailures) matches it too.
var ErrRefused = contract.ErrRefused

// ErrInvalid is matched, with errors.Is, by every configuration error of every ward package; each
// package's ErrInvalid matches it too, and the message names the field.
var ErrInvalid = contract.ErrInvalid

// RetryAfter returns how long until a refused call would pass, when the refusal knows (a rate
// limit, a failure window); false when it does not (an adaptive limit, a breaker, a shedder).
func RetryAfter(err error) (time.Duration, bool) { return contract.RetryAfter(err) }

// Handle is an admitted call of a type that learns from outcomes (adaptive.Lease, breaker.Promise,
// shed.Promise): settle it once, through the variable the admission returned. Settling it again is
// a no-op.
type Handle interface {
	// Pass settles a success.
	Pass()
	// Fail settles an overload or a failure: the signal that moves limits and ratios.
	Fail()
	// Ignore settles neutrally: the caller's own error or cancellation. It frees the slot and
	// records nothing.
	Ignore()
}

// Guard is what every concurrent ward type that guards a call has: Do, and the clock its short
// forms read.
type Guard interface {
	// Do runs fn if the guard admits it, settles the outcome and returns fn's error unchanged, or
	// a refusal matching ErrRefused without calling fn.
	Do(ctx context.Context, fn func(context.Context) error) error
	// Now returns the instant its short forms decide at, in nanoseconds of its clock: the origin
	// every …At(now, …) method's now is measured from.
	Now() int64
}
