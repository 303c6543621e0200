package ward

import (
	"context"
	"time"

	"github.com/wardgo/ward/internal/clock"
	"github.com/wardgo/ward/internal/contract"
)

// ErrRefused is matched, with errors.Is, by every refusal of every ward type: a middleware maps
// any of them to 503 or 429 without knowing the package. Each package's own sentinel
// (adaptive.ErrLimitExceeded, breaker.ErrUnavailable, shed.ErrOverloaded, rate.ErrLimited,
// failurewindow.ErrTooManyFailures) matches it too.
var ErrRefused = contract.ErrRefused

// ErrQuota is matched, with errors.Is, by every refusal that is a quota rather than an overload
// (rate.ErrLimited, failurewindow.ErrTooManyFailures): the caller has had its share, which HTTP
// answers with 429 and gRPC with ResourceExhausted, where an overload is 503 and Unavailable. It
// matches ErrRefused too. A guard of your own marks its quota refusals by matching it.
var ErrQuota = contract.ErrQuota

// ErrInvalid is matched, with errors.Is, by every configuration error of every ward package; each
// package's ErrInvalid matches it too, and the message names the field.
var ErrInvalid = contract.ErrInvalid

// Refusal returns a refusal sentinel of your own (a guard's, an integration's): an error whose
// message is msg and which matches [ErrRefused] with errors.Is. Returning it allocates nothing.
func Refusal(msg string) error { return contract.Refusal(msg) }

// QuotaRefusal returns a refusal sentinel for a quota: an error whose message is msg and which
// matches [ErrQuota] and [ErrRefused].
func QuotaRefusal(msg string) error { return contract.Quota(msg) }

// Invalid returns a package's configuration sentinel: an error whose message is msg (by
// convention "pkg: invalid configuration") and which matches [ErrInvalid].
func Invalid(msg string) error { return contract.Invalid(msg) }

// Field returns the configuration error of one field, as every ward package words them:
// "<sentinel>: <field> = <got>, want <want>", matching sentinel (and so ErrInvalid).
func Field(sentinel error, field string, got any, want string) error {
	return contract.Field(sentinel, field, got, want)
}

// WithWait returns the refusal err carrying wait, read back by [RetryAfter] (and honoured by
// retry.Do); err itself when wait is zero or less. It allocates one small value.
func WithWait(err error, wait time.Duration) error { return contract.Wait(err, wait) }

// RetryAfter returns how long until a refused call would pass, when the refusal knows (a rate
// limit, a failure window); false when it does not (an adaptive limit, a breaker, a shedder).
// Every wait is read through one method, RetryAfter() time.Duration, on an error anywhere in
// err's chain: ward's refusals that carry a wait have it, retry.Do honours it (retry.Hinted), and
// an error of your own that carries a wait (a server's pushback) implements it to be read here
// and there alike. A negative wait means "do not retry", as gRPC's pushback has it.
func RetryAfter(err error) (time.Duration, bool) { return contract.RetryAfter(err) }

// Outcome is how an admitted call settles: [Pass], [Fail] or [Ignore].
type Outcome = contract.Outcome

const (
	// Pass is a success.
	Pass = contract.Pass
	// Fail is an overload or a failure: the signal that moves limits and ratios.
	Fail = contract.Fail
	// Ignore is neutral: the caller's own error or cancellation. It frees the slot and records
	// nothing.
	Ignore = contract.Ignore
)

// Handle is an admitted call of a type that learns from outcomes: settle it once, through the
// variable the admission returned. Settling it again is a no-op. [Admission] is one, and so are
// the packages' own handles (adaptive.Lease, breaker.Promise, shed.Promise).
type Handle interface {
	// Pass settles a success.
	Pass()
	// Fail settles an overload or a failure: the signal that moves limits and ratios.
	Fail()
	// Ignore settles neutrally: the caller's own error or cancellation. It frees the slot and
	// records nothing.
	Ignore()
}

// Guard is what every concurrent ward type that guards a call has: one non-blocking admission
// that returns a handle, Do, and the clock its short forms read. Integrations (wardhttp's
// middleware, the gRPC interceptors, [With]) are written once on it, so a guard of your own that
// implements it goes wherever ward's go.
type Guard interface {
	// Admit decides whether a call may go ahead now and returns its [Admission], to be settled
	// once when the call ends; or a refusal matching [ErrRefused]; or, when ctx is already done,
	// ctx's error, having spent nothing. It never blocks, except a type whose point is to wait
	// (adaptive.Queue), which waits at most as long as ctx allows.
	Admit(ctx context.Context) (Admission, error)
	// Do runs fn if the guard admits it, settles the outcome and returns fn's error unchanged, or
	// a refusal matching ErrRefused without calling fn.
	Do(ctx context.Context, fn func(context.Context) error) error
	// Now returns the instant its short forms decide at, in nanoseconds of its clock: the origin
	// every …At(now, …) method's now is measured from.
	Now() int64
}

// Settler is the guard's side of an [Admission]: what the guard does when one of its admissions
// settles. A guard of your own implements it on a type of its own (unexported, so that only its
// admissions reach it) and returns Admitted(settler, a, b) from Admit; [Classify] gives its End
// ward's one classification.
type Settler interface {
	// Settle settles the admission that carried the words a and b as o. Settle or End is called
	// at most once for each Admission variable.
	Settle(a, b int64, o Outcome)
	// End settles the admission that carried a and b by how its call ended, err, classified as
	// the guard's Do classifies it: nil is a Pass; context.Canceled while ctx is done is an
	// Ignore; context.DeadlineExceeded is a Fail; any other error as the guard states.
	End(ctx context.Context, a, b int64, err error)
}

// Admission is an admitted call: settle it once with Pass, Fail, Ignore, Settle(o) or End(ctx,
// err), through the variable Admit returned (the methods clear it, so settling the same variable
// twice is a harmless no-op; settling two copies settles the call twice, a bug in the caller).
// The zero Admission settles nothing: it is what a guard that learns nothing from outcomes (a
// rate limit) admits with. An Admission is a few words held by value: admitting and settling
// allocate nothing.
type Admission struct {
	s    Settler
	a, b int64
}

// Admitted returns an admission that settles through s with the words a and b: what a guard's
// Admit returns. A nil s gives the zero Admission.
func Admitted(s Settler, a, b int64) Admission { return Admission{s, a, b} }

// Settle settles the call as o, once.
func (h *Admission) Settle(o Outcome) {
	if s := h.s; s != nil {
		h.s = nil
		s.Settle(h.a, h.b, o)
	}
}

// End settles the call by how it ended, err, as the guard that admitted it classifies errors
// (its Do's classification), once.
func (h *Admission) End(ctx context.Context, err error) {
	if s := h.s; s != nil {
		h.s = nil
		s.End(ctx, h.a, h.b, err)
	}
}

// Pass settles a success.
func (h *Admission) Pass() { h.Settle(Pass) }

// Fail settles an overload or a failure.
func (h *Admission) Fail() { h.Settle(Fail) }

// Ignore settles neutrally: it frees the slot and records nothing.
func (h *Admission) Ignore() { h.Settle(Ignore) }

// Settled reports whether the admission has nothing left to settle (it was settled, or it is
// the zero Admission).
func (h *Admission) Settled() bool { return h.s == nil }

// Classify is ward's one classification of a call's error, for guards of your own: nil is a
// Pass; context.Canceled while ctx is done (the caller gave up) is an Ignore;
// context.DeadlineExceeded is a Fail; any other error settles as other.
func Classify(ctx context.Context, err error, other Outcome) Outcome {
	return contract.Classify(ctx, err, nil, nil, other, other)
}

// Dead returns ctx's error when ctx is already done, and nil otherwise, without blocking: every
// Admit and Do calls it first, so that a call whose caller has given up spends nothing.
func Dead(ctx context.Context) error { return contract.Dead(ctx) }

// Now reads ward's monotonic clock: nanoseconds since an origin fixed when the process started.
// Every concurrent type reads it unless given a clock of its own (WithClock).
func Now() int64 { return clock.Now() }
