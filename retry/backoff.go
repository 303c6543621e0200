package retry

import (
	"fmt"
	"math"
	"time"

	"github.com/wardgo/ward/internal/contract"
	"github.com/wardgo/ward/internal/draw"
)

// Jitter is how much randomness goes into a delay. A retry with no jitter makes every client that
// failed together try again together, which is how one outage becomes a second one.
//
// Full, Equal and Decorrelated are the strategies of AWS's "Exponential Backoff and Jitter";
// Spread is the randomisation factor of Google's client libraries and the one gRPC retries with.
// A Jitter is a plain value: the four named ones are constants, and Spread(f) for f in [0, 1].
type Jitter float64

const (
	// Rigid is the ceiling unchanged: reproducible, and it synchronises clients.
	Rigid Jitter = -1
	// Full is uniform over [0, ceiling]: the one that spreads clients furthest.
	Full Jitter = -2
	// Equal is half the ceiling plus uniform over [0, ceiling/2]: keeps a floor under the wait.
	Equal Jitter = -3
	// Decorrelated is uniform over [base, previous × 3], at most the cap: it grows from where the
	// last delay landed rather than from the attempt number.
	Decorrelated Jitter = -4
)

// Spread returns the jitter uniform over [ceiling × (1 − f), ceiling × (1 + f)] for f in [0, 1]:
// the wait can pass the cap by f. gRPC's A6 draws random(0.8, 1.2): Spread(0.2). An f outside
// [0, 1] is not clamped: Spread(f) over 1 is itself, and a negative or NaN f gives Spread(NaN)
// (a negative f would otherwise read as one of the named jitters); both are Jitters
// [Backoff.Validate] rejects, naming Backoff.Jitter, as it rejects any other value.
func Spread(f float64) Jitter {
	if !(f >= 0) {
		return Jitter(math.NaN())
	}
	return Jitter(f)
}

func (j Jitter) String() string {
	switch j {
	case Rigid:
		return "Rigid"
	case Full:
		return "Full"
	case Equal:
		return "Equal"
	case Decorrelated:
		return "Decorrelated"
	}
	return fmt.Sprintf("Spread(%g)", float64(j))
}

// Backoff says when to try again, and how long to wait first.
type Backoff struct {
	Base     time.Duration // the first ceiling; 100 ms (gRPC A6 initialBackoff)
	Factor   float64       // each retry's ceiling over the last, >= 1; 2 (gRPC A6 backoffMultiplier)
	Cap      time.Duration // the largest ceiling, >= Base; 1 s (gRPC A6 maxBackoff)
	Attempts int           // calls in all, the first included, >= 1; 3 (the AWS SDKs' standard mode)
	Jitter   Jitter        // Spread(0.2) (gRPC A6's random(0.8, 1.2), as grpc-go and grpc-java draw it)
}

// DefaultBackoff returns the preset: three attempts, 100 ms doubling to a 1 s ceiling, spread by a
// fifth either way.
func DefaultBackoff() Backoff {
	return Backoff{Base: 100 * time.Millisecond, Factor: 2, Cap: time.Second, Attempts: 3, Jitter: Spread(0.2)}
}

// ErrInvalid is matched by every configuration error of this package (as is ward.ErrInvalid): a
// Backoff field out of range, or a nil option or function given to [Do]. The message names the
// field or option.
var ErrInvalid = contract.Invalid("retry: invalid configuration")

// Validate reports the first field out of range, by name.
func (b Backoff) Validate() error {
	switch {
	case b.Base <= 0:
		return contract.Field(ErrInvalid, "Backoff.Base", b.Base, "> 0")
	case !(b.Factor >= 1) || math.IsInf(b.Factor, 0):
		return contract.Field(ErrInvalid, "Backoff.Factor", b.Factor, "finite and >= 1")
	case b.Cap < b.Base:
		return contract.Field(ErrInvalid, "Backoff.Cap", b.Cap, fmt.Sprintf(">= Base (%v)", b.Base))
	case b.Attempts < 1:
		return contract.Field(ErrInvalid, "Backoff.Attempts", b.Attempts, ">= 1")
	case b.Jitter != Rigid && b.Jitter != Full && b.Jitter != Equal && b.Jitter != Decorrelated &&
		!(b.Jitter >= 0 && b.Jitter <= 1):
		return contract.Field(ErrInvalid, "Backoff.Jitter", b.Jitter, "Rigid, Full, Equal, Decorrelated or Spread(f) with f in [0, 1]")
	}
	return nil
}

// Ceiling returns the undelayed ceiling before the retry-th retry, the first retry being 1:
// min(Base × Factor^(retry−1), Cap). A retry under 1 counts as 1; a huge one gives Cap. This is
// what a jitter-free client sleeps and what every other strategy draws within.
func (b Backoff) Ceiling(retry int) time.Duration {
	retry = max(retry, 1)
	return b.held(float64(b.Base) * math.Pow(b.Factor, float64(retry-1)))
}

// held converts nanoseconds to a Duration within [0, Cap] (NaN counts as 0, +Inf as Cap). The
// comparison is made on the Duration, not the float64: float64(Cap) rounds, and near the largest
// Duration it rounds past it.
func (b Backoff) held(ns float64) time.Duration {
	return min(saturate(ns), b.Cap)
}

// saturate converts nanoseconds to a Duration, holding it within [0, the largest Duration]; NaN
// counts as 0. A plain conversion of a float64 at or over 2⁶³ gives the most negative Duration on
// amd64, a wait that a sleep takes as none at all.
func saturate(ns float64) time.Duration {
	switch {
	case !(ns > 0):
		return 0
	case ns >= math.MaxInt64: // float64(MaxInt64) is 2⁶³, one past it
		return math.MaxInt64
	}
	return time.Duration(ns)
}

// Delay returns how long to wait before the retry-th retry. roll is a draw from [0, 1) the caller
// makes (outside it, NaN included, it is held into it); the same roll gives the same delay.
// previous is what the last delay turned out to be, which only Decorrelated reads (under Base it
// counts as Base).
//
// The delay is never negative and never over Cap, for any retry number and any Cap up to the
// largest Duration (which reads as "no cap"); Spread(f) alone may pass Cap, by at most Cap × f,
// and never passes the largest Duration.
func (b Backoff) Delay(retry int, roll float64, previous time.Duration) time.Duration {
	roll = draw.Clean(roll)
	ceiling := b.Ceiling(retry)
	c := float64(ceiling)
	switch b.Jitter {
	case Rigid:
		return ceiling
	case Full:
		return b.held(roll * c)
	case Equal:
		return b.held(c/2 + roll*c/2)
	case Decorrelated:
		p := float64(max(previous, b.Base))
		return b.held(float64(b.Base) + roll*(3*p-float64(b.Base)))
	}
	f := float64(b.Jitter)
	return min(saturate(c*(1-f+2*f*roll)), b.Cap+min(saturate(float64(b.Cap)*f), math.MaxInt64-b.Cap))
}

// More reports whether a call that has made `made` attempts may make another; the first attempt
// is 1, so a policy of three attempts allows two retries.
func (b Backoff) More(made int) bool { return made < b.Attempts }

// MaxScheduled is the most delays [Backoff.Schedule] lists: a policy of more attempts (one that
// retries until its context ends, Attempts = math.MaxInt) is listed up to there.
const MaxScheduled = 1 << 10

// Schedule returns every delay a run of retries would wait, for a test or a log line explaining a
// plan: Attempts − 1 delays, at most [MaxScheduled]. rolls supplies the draws, one per retry; when
// it runs short the rest use 0, the low end of the jitter.
func (b Backoff) Schedule(rolls []float64) []time.Duration {
	n := min(max(b.Attempts-1, 0), MaxScheduled)
	out := make([]time.Duration, 0, n)
	prev := b.Base
	for r := 1; r <= n; r++ {
		var roll float64
		if r-1 < len(rolls) {
			roll = rolls[r-1]
		}
		prev = b.Delay(r, roll, prev)
		out = append(out, prev)
	}
	return out
}

// Deadline is a time budget measured from the instant it started. A budget of zero or less never
// expires: that is how go-zero, gRPC and most servers spell "no timeout", and a configuration that
// leaves the timeout unset should not time everything out at once.
//
// Start and every now given to its methods are instants of one monotonic clock the caller reads,
// in nanoseconds: the Now() of the ward type the deadline is spent against, or any other, as long
// as it is the same one throughout. An instant of another origin reads as that clock jumping: one
// before Start leaves the whole budget, one far after it spends it; neither wraps.
type Deadline struct {
	Start  int64         // nanoseconds of the caller's monotonic clock
	Budget time.Duration // zero or less: none
}

// NewDeadline returns a deadline of budget starting at now, an instant of the clock every later
// now given to it is read from.
func NewDeadline(budget time.Duration, now int64) Deadline {
	return Deadline{Start: now, Budget: budget}
}

// Expired reports whether the budget is spent at now.
func (d Deadline) Expired(now int64) bool {
	r, ok := d.Remaining(now)
	return ok && r == 0
}

// Remaining returns what is left of the budget at now: never negative, never more than the budget
// even if the clock went backwards, and exact for any two instants, the ends of int64 included.
// ok is false when there is no budget, which has no finite remainder.
func (d Deadline) Remaining(now int64) (left time.Duration, ok bool) {
	if d.Budget <= 0 {
		return 0, false
	}
	if now <= d.Start {
		return d.Budget, true
	}
	// now − Start in uint64: exact for any two instants, where int64 would wrap between the ends
	// of the clock.
	if elapsed := uint64(now) - uint64(d.Start); elapsed < uint64(d.Budget) {
		return d.Budget - time.Duration(elapsed), true
	}
	return 0, true
}
