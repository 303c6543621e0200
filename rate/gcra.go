package rate

import (
	"math"
	"math/big"
	"math/bits"
	"time"

	"github.com/wardgo/ward/internal/contract"
)

// gcra is the arithmetic [Bucket] and [BucketLimiter] share, so that they decide alike.
//
// A bucket counts in units: a token is 2^shift units, and units accrue on a fixed grid of the
// clock, the count at an instant being floor((now + 2^63) × mul / 2^63), one multiply and a
// shift. mul is the rate in units a nanosecond, scaled by 2^63 and rounded up: at most 2^63 (a
// unit a nanosecond), so the count of any int64 instant fits a uint64 and grows with it. shift
// is as large as keeps mul at most 2^63 and the burst at most 2^62 units: for every bucket that
// fills within 2^63 ns, mul is at least 2^61 (a unit every 1 to 4 ns, the rate held to 1 part in
// 2^61); a bucket that fills slower has coarser units and fewer bits of rate. The count at 0 is mul itself, a whole number: the grid is counted from the
// clock's origin.
//
// The state is the theoretical arrival time (TAT) of GCRA in units: the count at which the
// bucket is full again. A call of inc units at count x is granted when max(TAT, x) + inc lies
// within tau of x, and moves the TAT there.
type gcra struct {
	mul   uint64 // units a nanosecond × 2^63, rounded up: at most 2^63; 0 at rate 0
	one   uint64 // a token in units: 1 << shift
	tau   uint64 // the burst in units: at most 2^62
	room  uint64 // tau - one: how far ahead of x a TAT may lie for a call of one token at x
	far   uint64 // tau plus the units MaxSkew brings: a TAT further ahead of a call is skewed
	shift uint
	burst int
}

// newGCRA checks a bucket's rate and burst and returns its arithmetic.
func newGCRA(rate float64, burst int) (gcra, error) {
	if math.IsNaN(rate) || rate < 0 || rate > 1e9 {
		return gcra{}, contract.Field(ErrInvalid, "rate", rate, "in [0, 1e9]: at most a token a nanosecond")
	}
	if err := checkBurst(burst); err != nil {
		return gcra{}, err
	}
	shift := 62 - bits.Len64(uint64(burst-1)) // burst << shift <= 2^62
	for shift > 0 && math.Ldexp(rate, shift) > 1e9 {
		shift--
	}
	// mul = ceil(rate × 2^(shift+63) / 1e9), exactly: the float64 rate is a dyadic rational.
	r := new(big.Rat).SetFloat64(rate)
	r.Mul(r, new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), uint(shift+63))))
	r.Quo(r, big.NewRat(1e9, 1))
	q, m := new(big.Int).QuoRem(r.Num(), r.Denom(), new(big.Int))
	if m.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	g := gcra{mul: q.Uint64(), one: 1 << shift, tau: uint64(burst) << shift, shift: uint(shift), burst: burst}
	g.room = g.tau - g.one
	g.far = g.tau + g.at(int64(MaxSkew)) - g.at(0)
	return g, nil
}

// at returns the units counted at now.
func (g *gcra) at(now int64) uint64 {
	hi, lo := bits.Mul64(uint64(now)^(1<<63), g.mul)
	return hi<<1 | lo>>63
}

// skewed reports whether tat lies more than the burst plus [MaxSkew] of units after x: the TAT
// of a clock that has since jumped back, or of another origin.
func (g *gcra) skewed(tat, x uint64) bool { return tat > x && tat-x > g.far }

// read returns tat as a call at x reads it: pulled back to x plus tau, the bucket empty at x,
// when it is skewed.
func (g *gcra) read(tat, x uint64) uint64 {
	if g.skewed(tat, x) {
		return x + g.tau // tat is more than tau past x: no overflow
	}
	return tat
}

// grant returns the TAT after a call of inc units (at most tau) at x, and whether the bucket
// holds them: max(tat, x) + inc within tau of x, and within the range of a uint64 (the sum does
// not wrap). A tat that grants is never skewed: it lies within tau of x.
func (g *gcra) grant(tat, x, inc uint64) (next uint64, ok bool) {
	base := max(tat, x)
	next = base + inc
	return next, base-x <= g.tau-inc && next >= base
}

// wait returns how long from now (counted x) until a call of inc units (at most tau) would be
// granted against tat: 0 when it would be now, [Forever] when never within the clock's range.
func (g *gcra) wait(tat, x uint64, now int64, inc uint64) time.Duration {
	if _, ok := g.grant(tat, x, inc); ok {
		return 0
	}
	return g.refused(tat, x, now, inc)
}

// refused returns the wait of a call of inc units that grant refused against tat at now (counted
// x).
func (g *gcra) refused(tat, x uint64, now int64, inc uint64) time.Duration {
	if max(tat, x) > math.MaxUint64-inc { // refused for the end of the range, or would be later
		return Forever
	}
	return g.until(now, tat+inc-g.tau) // refused: more than the count at now, and tat+inc > tau
}

// until returns how long from now until the count reaches y (more than the count at now): the
// first instant whose count is y, found by dividing by mul, exactly. [Forever] when that instant
// lies past the end of the clock's range, or more than a Duration ahead.
func (g *gcra) until(now int64, y uint64) time.Duration {
	hi, lo := y>>1, y<<63 // y × 2^63
	if hi >= g.mul {      // rate 0, or an instant past the end of the range
		return Forever
	}
	q, r := bits.Div64(hi, lo, g.mul) // the first u with u × mul >= y × 2^63
	if r != 0 {
		if q == math.MaxUint64 {
			return Forever
		}
		q++
	}
	return time.Duration(min(q-(uint64(now)^(1<<63)), uint64(Forever)))
}

// held returns the units the bucket holds at x against tat (already read): in [0, tau].
func (g *gcra) held(tat, x uint64) uint64 {
	if tat <= x {
		return g.tau
	}
	return g.tau - min(tat-x, g.tau)
}

// tokens returns units as tokens, fractions included: the whole tokens (at most MaxBurst) are
// exact in a float64.
func (g *gcra) tokens(units uint64) float64 {
	return float64(units>>g.shift) + float64(units&(g.one-1))/float64(g.one)
}

// release returns the TAT with one token given back at x, never past full; ok is false when the
// bucket is full already.
func (g *gcra) release(tat, x uint64) (uint64, bool) {
	if tat <= x {
		return tat, false
	}
	if tat-x > g.one {
		return tat - g.one, true
	}
	return x, true
}

// units returns n tokens (a negative n costs nothing; n at most the burst) in units.
func (g *gcra) units(n int) uint64 { return uint64(cost(n)) << g.shift }
