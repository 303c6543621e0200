package rate

import (
	"math"
	"time"

	"github.com/wardgo/ward/internal/contract"
)

// ErrInvalid is matched by every configuration error of this package, and by ward.ErrInvalid;
// the message names the field.
var ErrInvalid = contract.Invalid("rate: invalid configuration")

// ErrLimited is the refusal of this package's Do methods: the call is over the rate or the quota.
// It matches ward.ErrRefused, and a refusal from Do carries how long until the call would pass
// (ward.RetryAfter).
var ErrLimited = contract.Quota("rate: limited")

// Forever is the wait reported for what can never happen: n tokens from a bucket whose burst is
// under n, or a refill at rate 0. A wait longer than an int64 of nanoseconds holds (about 292
// years) is reported as Forever too.
const Forever = time.Duration(math.MaxInt64)

// MaxBurst is the largest burst a bucket takes: 2^53, the largest count of whole tokens a float64
// holds exactly, so that taking a token always takes one.
const MaxBurst = 1 << 53

// MaxSkew is how far an instant may lie behind the state a limiter recorded (beyond the burst a
// bucket may run ahead) and still be read as a late reading of the same clock. Further behind, it
// is read as the clock having jumped back (or as an instant of another origin): the state is
// pulled back to that instant, spent there, so the limiter neither refuses for decades nor admits
// more than its allowance. See "Edge cases" in the package doc.
const MaxSkew = time.Minute

// checkBurst is the burst rule of both buckets.
func checkBurst(burst int) error {
	if burst < 1 || int64(burst) > MaxBurst {
		return contract.Field(ErrInvalid, "burst", burst, "in [1, 2^53]")
	}
	return nil
}

// since returns how many nanoseconds passed from then to now, exactly, for any two instants with
// now after then (now-then would wrap for instants far apart).
func since(now, then int64) uint64 { return uint64(now) - uint64(then) }

// skewed reports whether state lies more than [MaxSkew] after now: recorded on a clock that has
// since jumped back, or on another origin.
func skewed(state, now int64) bool {
	return state > now && since(state, now) > uint64(MaxSkew)
}

// cost cleans a requested count: a negative one costs nothing.
func cost(n int) int { return max(n, 0) }

// Tokens is a bucket's state apart from its policy: the tokens it held (fractional) and the
// instant they were brought up to date. It is what a store shared by several processes keeps.
type Tokens struct {
	Tokens float64
	Stamp  int64
}

// Grant is the answer of a Step ([Bucket.Step], [Period.Step]): whether the call was granted, the
// state to write back, and, when refused, how long until it would be granted ([Forever] when it
// never will be).
type Grant[S Tokens | Usage] struct {
	Granted bool
	State   S
	Wait    time.Duration
}

// Bucket is a token bucket: Rate tokens accrue per second up to Burst, and each call takes some.
// It allows a burst after a quiet period, which is what a limit on a human-facing API wants. It
// starts full.
//
// A Bucket is the pure arithmetic: time is an argument (nanoseconds from any monotonic origin)
// and it is not safe for concurrent use. [BucketLimiter] is the lock-free concurrent bucket, and
// the two decide alike: driven with the same calls, a BucketLimiter called from one goroutine
// gives a Bucket's answers, waits included. Its state can also live elsewhere: [Bucket.Step]
// answers a call against a [Tokens] read from a store, for the caller to write back with a
// compare-and-set.
//
// # How it works
//
// Take, Next, Left, TokensAt, Acquire and Release keep GCRA's one number, the theoretical
// arrival time at which the bucket is full again, counted in fixed-point units of a token on a
// grid of the clock: the units accrued by an instant are now × rate / 1e9 from the clock's
// origin, in units, rounded down, computed exactly with one 64-bit multiply against the rate
// held as a binary fraction (rounded up). A call is granted when the units accrued since the
// bucket was last full cover it. For every bucket that fills within an int64 of nanoseconds the
// rate is held to 1 part in 2^61 and a unit accrues every 1 to 4 nanoseconds, so the bucket runs
// at its rate, with no emission interval rounded to a nanosecond. Step keeps tokens and a stamp
// in float64 instead, arithmetic a store that only has doubles (a Redis script) can repeat; see
// [Bucket.Step].
type Bucket struct {
	gcra
	rate float64
	tat  uint64
}

// NewBucket returns a full bucket at now. rate is tokens per second, in [0, 1e9] (0: never
// refills; at most a token a nanosecond); burst is the most tokens it holds, in [1, [MaxBurst]].
// A full bucket grants burst calls of one token at once. Anything else is an error naming the
// field.
func NewBucket(rate float64, burst int, now int64) (*Bucket, error) {
	g, err := newGCRA(rate, burst)
	if err != nil {
		return nil, err
	}
	b := &Bucket{gcra: g, rate: rate}
	b.tat = b.at(now)
	return b, nil
}

// Rate returns tokens per second.
func (b *Bucket) Rate() float64 { return b.rate }

// Burst returns the most tokens the bucket holds.
func (b *Bucket) Burst() int { return b.burst }

// Opening returns the state of a bucket nobody has touched at now, for [Bucket.Step]: full.
func (b *Bucket) Opening(now int64) Tokens { return Tokens{Tokens: float64(b.burst), Stamp: now} }

// refill brings s up to now, for Step. A now before the stamp adds nothing and keeps the stamp:
// the clock going backwards never takes tokens away nor adds them twice. A stamp more than
// [MaxSkew] after now is pulled back to now, with the bucket empty.
func (b *Bucket) refill(now int64, s Tokens) Tokens {
	burst := float64(b.burst)
	s.Tokens = min(max(s.Tokens, 0), burst) // a state from a store is held to [0, burst]
	if math.IsNaN(s.Tokens) {
		s.Tokens = 0
	}
	switch {
	case skewed(s.Stamp, now):
		return Tokens{Stamp: now}
	case now > s.Stamp:
		s.Tokens = min(burst, s.Tokens+float64(since(now, s.Stamp))/1e9*b.rate)
		s.Stamp = now
	}
	return s
}

// stepWait returns how long until a refilled state holds n tokens, for Step: at least 1 ns when
// they are not there, [Forever] when the wait would not fit a Duration.
func (b *Bucket) stepWait(s Tokens, n int) time.Duration {
	want := float64(n)
	if want <= s.Tokens {
		return 0
	}
	if n > b.burst || b.rate == 0 {
		return Forever
	}
	w := math.Ceil((want - s.Tokens) / b.rate * 1e9)
	if !(w < math.MaxInt64) { // float64(MaxInt64) is 2^63: anything below converts exactly
		return Forever
	}
	return time.Duration(max(w, 1))
}

// Step answers a call for n tokens at now against state s (a negative n costs nothing). It reads
// nothing but its arguments: a caller sharing a bucket through a store writes Grant.State back
// only if the store still holds s, and asks again otherwise.
//
// Step is arithmetic of its own, in float64, that a store with only doubles can repeat step for
// step: the tokens held, brought up to now by the time passed × rate / 1e9, at most the burst;
// a call is granted when they cover it, and a refusal waits the missing tokens / rate, rounded
// up to a nanosecond (at least 1). A stamp more than [MaxSkew] after now (another origin, or a
// clock that jumped back) is pulled back to now, empty; a stamp less far after now adds nothing.
// It agrees with Take to within a unit of Take's grid and float64's rounding, a small fraction
// of a token below 5e8 tokens a second: from the tokens a Bucket held at an earlier instant,
// Step finds at now the tokens the Bucket holds at now, give or take that, and decides alike
// unless they lie that close to n. An instant before the stamp finds the tokens held at the
// stamp, where Take finds the fewer held at that instant.
func (b *Bucket) Step(now int64, s Tokens, n int) Grant[Tokens] {
	n = cost(n)
	s = b.refill(now, s)
	if float64(n) <= s.Tokens {
		s.Tokens -= float64(n)
		return Grant[Tokens]{Granted: true, State: s}
	}
	return Grant[Tokens]{State: s, Wait: b.stepWait(s, n)}
}

// TakeAt takes n tokens at now if they are there. If not, wait is how long until they would be: 0
// when ok, [Forever] when they never will be (more than the burst, rate 0, or past the end of
// the clock's range).
func (b *Bucket) TakeAt(now int64, n int) (ok bool, wait time.Duration) {
	if cost(n) > b.burst {
		return false, Forever
	}
	x, inc := b.at(now), b.units(n)
	tat := b.read(b.tat, x)
	if next, ok := b.grant(tat, x, inc); ok {
		b.tat = next
		return true, 0
	}
	b.tat = tat
	return false, b.refused(tat, x, now, inc)
}

// TokensAt returns how many tokens the bucket holds at now, fractions included.
func (b *Bucket) TokensAt(now int64) float64 {
	x := b.at(now)
	return b.tokens(b.held(b.read(b.tat, x), x))
}

// Left returns how many calls of one token at now would be granted one after another: the whole
// tokens held.
func (b *Bucket) Left(now int64) int {
	x := b.at(now)
	return int(b.held(b.read(b.tat, x), x) >> b.shift)
}

// Next returns how long until n tokens would be there, without taking them: 0 when they are, and
// [Forever] when they never will be. This is what a Retry-After header is computed from.
func (b *Bucket) Next(now int64, n int) time.Duration {
	if cost(n) > b.burst {
		return Forever
	}
	x := b.at(now)
	return b.wait(b.read(b.tat, x), x, now, b.units(n))
}

// Acquire takes one token at now: the [Permit] method.
func (b *Bucket) Acquire(now int64) bool {
	ok, _ := b.TakeAt(now, 1)
	return ok
}

// Release gives one token back (never past the burst): a [Chained] refusal further down undoes
// this bucket's grant.
func (b *Bucket) Release(now int64) {
	x := b.at(now)
	b.tat, _ = b.release(b.read(b.tat, x), x)
}
