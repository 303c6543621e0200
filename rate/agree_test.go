package rate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/wardgo/ward/internal/stripe"
)

// This file holds the bucket's reference-model test: a BucketLimiter driven from one goroutine
// gives exactly a Bucket's answers. It uses only the exported API
// (and the build's race flag, to run shorter under the race detector).

// agreeRates are ordinary and awkward rates: emission intervals that are no whole number of
// nanoseconds (3, 7, 6e8), a token every 1000 s, a token a nanosecond and just under, no refill.
var agreeRates = []float64{3, 7, 6e8, 1e-3, 1, 10, 1.0 / 3, 7.77, 1e9, 999_999_999, 5e8 + 1, 123456.789, 1e6, 0, 2.5e-10}

// pair is a Bucket and a BucketLimiter of one policy, the limiter on a clock the test moves.
type pair struct {
	b   *Bucket
	l   *BucketLimiter
	now int64
}

func newPair(t testing.TB, rate float64, burst int, start int64) *pair {
	t.Helper()
	p := &pair{now: start}
	var err error
	if p.b, err = NewBucket(rate, burst, start); err != nil {
		t.Fatalf("NewBucket(%v, %d): %v", rate, burst, err)
	}
	if p.l, err = NewBucketLimiter(rate, burst, WithClock(func() int64 { return p.now })); err != nil {
		t.Fatalf("NewBucketLimiter(%v, %d): %v", rate, burst, err)
	}
	return p
}

// step plays one call on both and says how they differ ("" when they agree). op picks the call:
// 0 Allow, 1 TakeAt(n), 2 Acquire, 3 Acquire then Release, 4 Release; the reads (Next of 1 and
// of n, Left, TokensAt) are compared after every call. It returns the wait of the call, for the
// caller to step to its boundary.
func (p *pair) step(op, n int) (string, time.Duration) {
	now := p.now
	var bOK, lOK bool
	var bWait, lWait time.Duration
	switch op {
	case 0:
		bOK, bWait = p.b.TakeAt(now, 1)
		lOK, lWait = p.l.Allow(), bWait // Allow has no wait: the reads below compare Next
	case 1:
		bOK, bWait = p.b.TakeAt(now, n)
		lOK, lWait = p.l.TakeAt(now, n)
	case 2, 3:
		bOK, lOK = p.b.Acquire(now), p.l.Acquire(now)
		if op == 3 && bOK && lOK {
			p.b.Release(now)
			p.l.Release(now)
		}
	default:
		p.b.Release(now)
		p.l.Release(now)
		bOK, lOK = true, true
	}
	if bOK != lOK || bWait != lWait {
		return fmt.Sprintf("op %d n %d at %d: Bucket %v %v, BucketLimiter %v %v", op, n, now, bOK, bWait, lOK, lWait), bWait
	}
	if a, b := p.b.Next(now, 1), p.l.Next(now, 1); a != b {
		return fmt.Sprintf("op %d at %d: Next(1) Bucket %v, BucketLimiter %v", op, now, a, b), bWait
	}
	if a, b := p.b.Next(now, n), p.l.Next(now, n); a != b {
		return fmt.Sprintf("op %d at %d: Next(%d) Bucket %v, BucketLimiter %v", op, now, n, a, b), bWait
	}
	if a, b := p.b.Left(now), p.l.Left(now); a != b {
		return fmt.Sprintf("op %d at %d: Left Bucket %d, BucketLimiter %d", op, now, a, b), bWait
	}
	if a, b := p.b.TokensAt(now), p.l.TokensAt(now); a != b {
		return fmt.Sprintf("op %d at %d: TokensAt Bucket %v, BucketLimiter %v", op, now, a, b), bWait
	}
	return "", bWait
}

// move returns the next instant of a random run: mostly forwards by up to a few tokens' time,
// often exactly to the last refusal's wait (or 1 ns short of it), sometimes a stale reading a
// little back, now and then a jump back of more than MaxSkew, a jump to Unix time and back, or
// to near an end of the range.
func move(r *rand.Rand, now, start int64, every float64, burst int, wait time.Duration) int64 {
	span := int64(min(every*float64(burst+1), 1<<50)) + 1
	step := int64(min(every, 1<<50)) + 1
	switch k := r.IntN(200); {
	case k < 50:
		return now + r.Int64N(step)
	case k < 80:
		return now + r.Int64N(span)
	case k < 110 && wait > 0 && wait != Forever:
		return now + int64(wait) - r.Int64N(2)
	case k < 140:
		return now
	case k < 170:
		return now - r.Int64N(step) // a stale reading
	case k < 180:
		return now - r.Int64N(int64(time.Minute)) // stale by up to MaxSkew
	case k < 186:
		return now - int64(MaxSkew) - 1 - r.Int64N(span) // a jump back
	case k < 192:
		return now + 1_780_000_000_000_000_000 // to Unix time
	case k < 197:
		return start // back to where it started
	case k < 198:
		return math.MaxInt64 - r.Int64N(span)
	case k < 199:
		return math.MinInt64 + r.Int64N(span)
	default:
		return r.Int64()
	}
}

// TestBucketLimiterAgrees drives a Bucket and a BucketLimiter with the same calls, step by step,
// over about four million steps: the rates above and random ones, random bursts, random starting
// instants, and random instants (see move); calls of Allow, TakeAt of -1 to burst+1 tokens,
// Acquire, Release. Every answer, every wait and every read agrees.
func TestBucketLimiterAgrees(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 7))
	steps := 4_000_000
	if testing.Short() || stripe.Race { // one goroutine: the race build has nothing to find here
		steps = 400_000
	}
	rates := append([]float64{}, agreeRates...)
	for range 25 {
		rates = append(rates, math.Pow(10, r.Float64()*13-4)) // 1e-4 to 1e9
	}
	bursts := []int{1, 2, 3, 10, 64, 1000}
	perRun := steps / (len(rates) * (len(bursts) + 1))
	for _, rate := range rates {
		for bi := range len(bursts) + 1 {
			burst := 0
			if bi < len(bursts) {
				burst = bursts[bi]
			} else {
				burst = 1 + r.IntN(1_000_000)
			}
			start := []int64{0, -5e18, 1_780_000_000_000_000_000, math.MinInt64, r.Int64()}[r.IntN(5)]
			p := newPair(t, rate, burst, start)
			every := 1e9 / rate
			if rate == 0 {
				every = 1e9
			}
			wait := time.Duration(0)
			for i := range perRun {
				op, n := r.IntN(5), r.IntN(burst+3)-1
				if r.IntN(4) != 0 {
					op = r.IntN(2) // mostly Allow and TakeAt
				}
				var diff string
				if diff, wait = p.step(op, n); diff != "" {
					t.Fatalf("rate %v burst %d from %d, step %d: %s", rate, burst, start, i, diff)
				}
				p.now = move(r, p.now, start, every, burst, wait)
			}
		}
	}
}

// TestBucketLimiterAgreesSteady: two million calls of Allow from a steady clock a little faster
// than the rate, at rates with no whole emission interval in nanoseconds (3/s, 7/s, 6e8/s): both
// buckets agree call for call, and admit what the rate allows over the run: rate × elapsed plus
// at most the burst and one token. (A burst of one at 7/s would admit every other call: a call
// a little early is refused, and GCRA keeps no credit past a full bucket of one.)
func TestBucketLimiterAgreesSteady(t *testing.T) {
	for _, c := range []struct {
		rate  float64
		burst int
		every int64 // ns between calls
	}{{3, 10, 166_500_000}, {6e8, 1, 1}, {7, 2, 142_857_142}, {6e8, 1000, 1}} {
		p := newPair(t, c.rate, c.burst, 0)
		admitted, calls := 0, 2_000_000
		if testing.Short() || stripe.Race {
			calls = 100_000
		}
		for i := range calls {
			before := p.l.Left(p.now)
			if diff, _ := p.step(0, 1); diff != "" {
				t.Fatalf("rate %v burst %d, call %d: %s", c.rate, c.burst, i, diff)
			}
			if p.l.Left(p.now) < before {
				admitted++
			}
			p.now += c.every
		}
		ideal := c.rate * float64(int64(calls-1)*c.every) / 1e9
		if a := float64(admitted); a < ideal || a > ideal+float64(c.burst)+1 {
			t.Errorf("rate %v burst %d: %d admitted over %v, the rate allows %.1f plus the burst",
				c.rate, c.burst, admitted, time.Duration(int64(calls-1)*c.every), ideal)
		}
	}
}

// FuzzBucketAgrees plays fuzzed calls at fuzzed instants on a Bucket and a BucketLimiter of a
// fuzzed policy: both build or neither does, and then every answer, wait and read agrees. Each 9
// bytes of data are a call: the kind byte picks the call (see pair.step) and how the instant
// moves (set to the value, or moved by its high bits), the value's low bits the tokens asked.
func FuzzBucketAgrees(f *testing.F) {
	calls := func(kinds ...byte) []byte {
		var out []byte
		for i, k := range kinds {
			out = append(out, op(k, int64(i+1)*333_333_333<<24|int64(i%4))...)
		}
		return out
	}
	for _, c := range []struct {
		rate  float64
		burst int
		start int64
	}{{3, 10, 0}, {7, 1, 5}, {6e8, 1, 0}, {1e-3, 3, -1}, {1.0 / 3, 2, 1 << 60}, {1e9, 64, math.MaxInt64 - 100}, {0, 2, 0}, {7.77, 1 << 30, math.MinInt64}} {
		f.Add(c.rate, c.burst, c.start, calls(1, 3, 1, 1, 5, 7, 9, 11, 13, 1, 1, 1, 15, 17, 0, 2))
	}
	f.Fuzz(func(t *testing.T, rate float64, burst int, start int64, data []byte) {
		b, err := NewBucket(rate, burst, start)
		_, lerr := NewBucketLimiter(rate, burst)
		if (err == nil) != (lerr == nil) {
			t.Fatalf("NewBucket(%v, %d): %v, NewBucketLimiter: %v", rate, burst, err, lerr)
		}
		if err != nil {
			return
		}
		_ = b
		p := newPair(t, rate, burst, start)
		for i, now := range instants(start, data) {
			p.now = now
			kind := data[i*9]
			n := int(data[i*9+1]%8) - 1
			if n == 6 {
				n = burst + 1
			}
			if diff, _ := p.step(int(kind/2%5), n); diff != "" {
				t.Fatalf("call %d: %s", i, diff)
			}
		}
	})
}

// TestStepNearTake: Bucket.Step, the float64 arithmetic for stores, and Take, the exact one,
// over random runs of instants in order. From the tokens Take's bucket held at the previous
// instant, Step refills to within a unit of the grid and float64's rounding of what Take's
// bucket holds, decides alike unless those tokens lie within that of n, and when both refuse
// their waits are within a nanosecond and that rounding of each other.
func TestStepNearTake(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 24))
	for _, rate := range []float64{3, 7, 6e8, 1e-3, 1, 10, 1.0 / 3, 7.77, 1e9, 123456.789, 1e6} {
		for _, burst := range []int{1, 2, 10, 1000} {
			start := []int64{0, 1_780_000_000_000_000_000, -5e18}[r.IntN(3)]
			b, _ := NewBucket(rate, burst, start)
			every := 1e9 / rate
			eps := float64(burst)*0x1p-40 + 1/float64(b.one) // float64's rounding and a unit of the grid
			prev := start
			for range 20_000 {
				now := prev + r.Int64N(int64(min(every*2, 1e15))+1)
				n := 1 + r.IntN(min(burst, 3))
				s := Tokens{Tokens: b.TokensAt(prev), Stamp: prev}
				g := b.Step(now, s, n)
				held := b.TokensAt(now)
				ok, wait := b.TakeAt(now, n)
				if d := math.Abs(min(g.State.Tokens+float64(n)*bool01(g.Granted), float64(burst)) - held); d > eps {
					t.Fatalf("rate %v burst %d at %d: Step refilled to %v, Take's bucket holds %v", rate, burst, now, g.State.Tokens, held)
				}
				if ok != g.Granted && math.Abs(held-float64(n)) > eps {
					t.Fatalf("rate %v burst %d at %d: %v tokens, %d asked: Take %v, Step %v", rate, burst, now, held, n, ok, g.Granted)
				}
				if !ok && !g.Granted && wait != Forever && math.Abs(float64(wait-g.Wait)) > 1+float64(wait)*1e-9+eps*every {
					t.Fatalf("rate %v burst %d at %d: Take waits %v, Step %v", rate, burst, now, wait, g.Wait)
				}
				prev = now
			}
		}
	}
}

func bool01(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
