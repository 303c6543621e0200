package rate

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// ErrInvalid is wrapped by every construction error.
var ErrInvalid = errors.New("rate: invalid parameter")

func invalid(field string, v any, want string) error {
	return fmt.Errorf("%w: %s = %v, want %s", ErrInvalid, field, v, want)
}

// Forever is the wait reported for what can never happen: n tokens from a bucket whose burst is
// under n, or a refill at rate 0. A wait longer than an int64 of nanoseconds holds (about 292
// years) is reported as Forever too.
const Forever = time.Duration(math.MaxInt64)

// MaxBurst is the largest burst a bucket takes: 2^53, the largest count of whole tokens a float64
// holds exactly, so that taking a token always takes one.
const MaxBurst = 1 << 53

// checkBurst is the burst rule of both buckets.
func checkBurst(burst float64) error {
	if math.IsNaN(burst) || burst < 0 || burst > MaxBurst {
		return invalid("burst", burst, "in [0, 2^53] (under 1 is raised to 1)")
	}
	return nil
}

// since returns how many nanoseconds passed from then to now, exactly, for any two instants with
// now after then (now-then would wrap for instants far apart).
func since(now, then int64) uint64 { return uint64(now) - uint64(then) }

// Tokens is a bucket's state apart from its policy: the tokens it held (fractional) and the
// instant they were brought up to date. It is what a store shared by several processes keeps.
type Tokens struct {
	Tokens float64
	Stamp  int64
}

// Grant is the answer of [Bucket.Step]: whether the tokens were granted, the state to write
// back, and, when refused, how long until they would be there.
type Grant struct {
	Granted bool
	State   Tokens
	Wait    time.Duration
}

// Bucket is a token bucket: Rate tokens accrue per second up to Burst, and each call takes some.
// It allows a burst after a quiet period, which is what a limit on a human-facing API wants. It
// starts full.
//
// A Bucket is the pure arithmetic: time is an argument (nanoseconds from any monotonic origin),
// it is not safe for concurrent use, and its state can live elsewhere: [Bucket.Step] answers a
// call against a [Tokens] read from a store, for the caller to write back with a compare-and-set.
// [BucketLimiter] is the lock-free concurrent bucket.
type Bucket struct {
	rate, burst float64
	state       Tokens
}

// NewBucket returns a full bucket at now. rate is tokens per second (0: never refills); burst
// under 1 is raised to 1, since a bucket that cannot hold one token lets nothing through. A full
// bucket grants floor(burst) calls of one token at once. A negative, NaN or infinite rate is an
// error, and so is a burst that is negative, NaN or over [MaxBurst].
func NewBucket(rate, burst float64, now int64) (*Bucket, error) {
	if math.IsNaN(rate) || math.IsInf(rate, 0) || rate < 0 {
		return nil, invalid("rate", rate, "finite and >= 0")
	}
	if err := checkBurst(burst); err != nil {
		return nil, err
	}
	b := &Bucket{rate: rate, burst: max(burst, 1)}
	b.state = b.Opening(now)
	return b, nil
}

// Rate returns tokens per second.
func (b *Bucket) Rate() float64 { return b.rate }

// Burst returns the most tokens the bucket holds.
func (b *Bucket) Burst() float64 { return b.burst }

// Opening returns the state of a bucket nobody has touched at now: full.
func (b *Bucket) Opening(now int64) Tokens { return Tokens{Tokens: b.burst, Stamp: now} }

// cost cleans a requested amount: negative and NaN cost nothing.
func cost(n float64) float64 {
	if !(n > 0) {
		return 0
	}
	return n
}

// refill brings s up to now. A now before the stamp adds nothing and keeps the stamp: the clock
// going backwards never takes tokens away nor adds them twice.
func (b *Bucket) refill(s Tokens, now int64) Tokens {
	s.Tokens = min(max(s.Tokens, 0), b.burst) // a state from a store is held to [0, burst]
	if math.IsNaN(s.Tokens) {
		s.Tokens = 0
	}
	if now > s.Stamp {
		s.Tokens = min(b.burst, s.Tokens+float64(since(now, s.Stamp))/1e9*b.rate)
		s.Stamp = now
	}
	return s
}

// wait returns how long until a refilled state holds n tokens: at least 1 ns when they are not
// there, [Forever] when the wait would not fit a Duration.
func (b *Bucket) wait(s Tokens, n float64) time.Duration {
	if n <= s.Tokens {
		return 0
	}
	if n > b.burst || b.rate == 0 {
		return Forever
	}
	w := math.Ceil((n - s.Tokens) / b.rate * 1e9)
	if !(w < math.MaxInt64) { // float64(MaxInt64) is 2^63: anything below converts exactly
		return Forever
	}
	return time.Duration(max(w, 1))
}

// Step answers a call for n tokens at now against state s (negative or NaN n costs nothing). It
// reads nothing but its arguments: a caller sharing a bucket through a store writes Grant.State
// back only if the store still holds s, and asks again otherwise.
func (b *Bucket) Step(s Tokens, now int64, n float64) Grant {
	n = cost(n)
	s = b.refill(s, now)
	if n <= s.Tokens {
		s.Tokens -= n
		return Grant{Granted: true, State: s}
	}
	return Grant{State: s, Wait: b.wait(s, n)}
}

// Take takes n tokens at now if they are there, and reports whether it did.
func (b *Bucket) Take(now int64, n float64) bool {
	g := b.Step(b.state, now, n)
	b.state = g.State
	return g.Granted
}

// TokensAt returns how many tokens the bucket holds at now.
func (b *Bucket) TokensAt(now int64) float64 { return b.refill(b.state, now).Tokens }

// Next returns how long until n tokens would be there, without taking them: 0 when they are, and
// [Forever] when they never will be. This is what a Retry-After header is computed from.
func (b *Bucket) Next(now int64, n float64) time.Duration {
	return b.wait(b.refill(b.state, now), cost(n))
}

// Acquire takes one token at now: the [Permit] method.
func (b *Bucket) Acquire(now int64) bool { return b.Take(now, 1) }

// Release gives one token back (never past the burst): a [Chained] refusal further down undoes
// this bucket's grant.
func (b *Bucket) Release(now int64) {
	b.state = b.refill(b.state, now)
	b.state.Tokens = min(b.burst, b.state.Tokens+1)
}
