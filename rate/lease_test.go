package rate

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/wardgo/ward/internal/procs"
	"github.com/wardgo/ward/internal/stripe"
)

// leasing turns leases on in b as a first collision would, whatever its burst. Leases need the
// real P index: in the builds without it the test is skipped.
func leasing(t *testing.T, b *BucketLimiter) *BucketLimiter {
	t.Helper()
	if !stripe.Pinned {
		t.Skip("leases need the P index (stripe.Pinned)")
	}
	b.leases.Init(leaseWords)
	b.leasing.Store(b.leasing.Load()&^leaseState | leaseOn)
	return b
}

// TestLeasingStartsOnContention: a limiter never contended stays one word; the first collision
// turns leases on, where the burst allows a lease of 2 tokens a row.
func TestLeasingStartsOnContention(t *testing.T) {
	now := int64(0)
	b, _ := NewBucketLimiter(1e6, 1000, WithClock(func() int64 { return now }))
	for i := 0; i < 10_000; i++ {
		now += 500
		b.Allow()
	}
	if b.state() != leaseOff || b.leases.Current() != nil {
		t.Fatal("a limiter one goroutine calls started leasing")
	}
	b.collided()
	b.Allow()
	if want := stripe.Pinned && 1000 >= 4*stripe.Count(); (b.state() == leaseOn) != want || (b.leases.Current() != nil) != want {
		t.Fatalf("after a collision leasing = %d, want on: %v", b.leasing.Load(), want)
	}
	small, _ := NewBucketLimiter(1e6, 1)
	small.collided()
	small.Allow()
	if small.state() != leaseOff {
		t.Fatal("a burst of 1 started leasing")
	}
}

// TestLeasingOnePEqualsDirect: with one P, a leasing limiter decides every call as the limiter
// without leases does (and so as the pure Bucket does), wait for wait, over random traces of
// Allow, TakeAt of 0 to burst+1 tokens, Acquire then Release, stale readings and jumps between
// clock origins; after every refusal its Next, Left and TokensAt agree too.
func TestLeasingOnePEqualsDirect(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for _, c := range []struct {
		rate  float64
		burst int
	}{{1e6, 64}, {1e9, 1000}, {7, 10}, {1000, 3}, {1e9 / 3, 40}, {0.5, 100}} {
		for seed := uint64(0); seed < 20; seed++ {
			rng := rand.New(rand.NewPCG(seed, 7))
			now := int64(seed) * 1e12
			clock := func() int64 { return now }
			direct, _ := NewBucketLimiter(c.rate, c.burst, WithClock(clock))
			leased, _ := NewBucketLimiter(c.rate, c.burst, WithClock(clock))
			pure, _ := NewBucket(c.rate, c.burst, now)
			leasing(t, leased)
			one := int64(1e9 / c.rate) // a token's time, in ns
			for step := 0; step < 3000; step++ {
				switch k := rng.IntN(100); {
				case k < 40:
				case k < 75:
					now += rng.Int64N(one + 1)
				case k < 90:
					now += rng.Int64N(one*int64(c.burst) + 1)
				case k < 97:
					now -= rng.Int64N(one + 1) // a stale reading
				case k < 98:
					now += 1_767_225_600_000_000_000 // to Unix time
				default:
					now = int64(seed) * 1e12 // and back
				}
				var dOK, lOK, pOK bool
				var dWait, lWait, pWait time.Duration
				switch op := rng.IntN(10); {
				case op < 5:
					dOK, lOK = direct.Allow(), leased.Allow()
					pOK, _ = pure.TakeAt(now, 1)
				case op < 8:
					n := rng.IntN(c.burst+3) - 1
					dOK, dWait = direct.TakeAt(now, n)
					lOK, lWait = leased.TakeAt(now, n)
					pOK, pWait = pure.TakeAt(now, n)
				default:
					dOK, lOK, pOK = direct.Acquire(now), leased.Acquire(now), pure.Acquire(now)
					if dOK && lOK && pOK && rng.IntN(2) == 0 {
						direct.Release(now)
						leased.Release(now)
						pure.Release(now)
					}
				}
				if dOK != lOK || dWait != lWait || pOK != dOK || pWait != dWait {
					t.Fatalf("rate %v burst %d seed %d step %d at %d: leasing %v %v, direct %v %v, Bucket %v %v",
						c.rate, c.burst, seed, step, now, lOK, lWait, dOK, dWait, pOK, pWait)
				}
				if !dOK && dWait != Forever && (direct.Next(now, 1) != leased.Next(now, 1) || direct.Left(now) != leased.Left(now) ||
					direct.TokensAt(now) != leased.TokensAt(now)) {
					t.Fatalf("rate %v burst %d seed %d step %d: after a refusal the reads differ", c.rate, c.burst, seed, step)
				}
			}
		}
	}
}

// conforms reports whether admissions at the counts at (sorted, in a bucket's units of tokens,
// from any base) keep a bucket's promise: at most burst + (c_j - c_i)/one of them in any [c_i,
// c_j], the tokens accrued. In integers: (j-i+1-burst) × one <= c_j - c_i, that is c_i - i×one
// <= c_j - j×one + tau - one, checked against the running maximum of the left side.
func conforms(at []int64, one, tau int64) (bool, int) {
	best := int64(-1 << 63)
	for j, c := range at {
		g := c - int64(j)*one
		best = max(best, g)
		if best > g+tau-one {
			return false, j
		}
	}
	return true, -1
}

func TestConforms(t *testing.T) {
	if ok, _ := conforms([]int64{0, 0, 10, 20}, 10, 20); !ok {
		t.Fatal("two at once, then one an interval: a burst of 2 allows it")
	}
	if ok, at := conforms([]int64{0, 0, 0, 20}, 10, 20); ok || at != 2 {
		t.Fatal("three at once passed a burst of 2")
	}
	if ok, at := conforms([]int64{0, 0, 10, 19}, 10, 20); ok || at != 3 {
		t.Fatal("the fourth 1 ns early passed")
	}
}

// TestLeasesNeverOverAdmit: 64 goroutines call a leasing limiter, while GOMAXPROCS moves between
// 1 and 32, on a shared clock of two kinds: one that moves 100 ns a reading, ten times the rate,
// so the bucket binds; and one that stands still and every 512th reading jumps by half the
// burst's span, so full leases are taken, spent, run short and renewed under contention, calls of
// up to 8 tokens at a time. Every admission is recorded at the instant it was decided at; sorted,
// they keep the single bucket's promise: at most burst + the tokens its grid accrued between
// any two of them.
func TestLeasesNeverOverAdmit(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	for _, c := range []struct {
		name  string
		burst int
		steps bool
	}{{"steady", 64, false}, {"steady", 1000, false}, {"steps", 64, true}, {"steps", 1000, true}} {
		var tick, reads atomic.Int64
		const one = 1000 // ns a token at rate 1e6
		clock := func() int64 { return tick.Add(100) }
		if c.steps {
			clock = func() int64 {
				if reads.Add(1)%512 == 0 {
					return tick.Add(int64(c.burst) * one / 2)
				}
				return tick.Load()
			}
		}
		b, _ := NewBucketLimiter(1e6, c.burst, WithClock(clock))
		leasing(t, b)
		stop := procs.Flip()
		const goroutines, calls = 64, 4000
		got := make([][]int64, goroutines)
		together(goroutines, func(g int) {
			for i := 0; i < calls; i++ {
				now, n := b.Now(), 1+i%8
				if i%2 == 0 {
					n = 1
				}
				if ok, _ := b.TakeAt(now, n); ok {
					got[g] = append(got[g], slices.Repeat([]int64{now}, n)...)
				}
			}
		})
		stop()
		all := slices.Concat(got...)
		slices.Sort(all)
		counts := make([]int64, len(all)) // the units accrued since the first, as int64
		for i, now := range all {
			counts[i] = int64(b.at(now) - b.at(all[0]))
		}
		if ok, at := conforms(counts, int64(b.one), int64(b.tau)); !ok {
			t.Fatalf("%s, burst %d: admission %d of %d at %d breaks the promise", c.name, c.burst, at, len(all), all[at])
		}
		allowed := float64(c.burst) + float64(tick.Load())/one
		if float64(len(all)) < allowed/2 {
			t.Errorf("%s, burst %d: %d admitted of the %.0f the span allowed", c.name, c.burst, len(all), allowed)
		}
		t.Logf("%s, burst %d: %d admitted of %.0f allowed", c.name, c.burst, len(all), allowed)
	}
}

// TestLeasesStrandAtMostHalf: at one instant, nothing refilling, goroutines on every P spend a
// full leasing bucket, one token and three at a time, until each is refused. A P keeps at most one
// lease it cannot give back, so the tokens left in other Ps' leases are at most half the burst: at
// least half is admitted, and never more than the burst.
func TestLeasesStrandAtMostHalf(t *testing.T) {
	const burst = 1000
	b, _ := NewBucketLimiter(1, burst, WithClock(func() int64 { return 5 }))
	leasing(t, b)
	var admitted atomic.Int64
	together(4*runtime.GOMAXPROCS(0), func(g int) {
		for n := 1 + 2*(g%2); ; {
			ok, _ := b.TakeAt(5, n)
			if !ok && n == 1 {
				return
			}
			if ok {
				admitted.Add(int64(n))
			} else {
				n = 1 // the threes refused: spend what is left one at a time
			}
			runtime.Gosched()
		}
	})
	if got := admitted.Load(); got > burst || got < burst/2 {
		t.Fatalf("admitted %d of a burst of %d", got, burst)
	}
}

// TestLeasingAllocates0: a leasing limiter's calls, leased and renewed, allocate nothing.
func TestLeasingAllocates0(t *testing.T) {
	now := int64(0)
	b, _ := NewBucketLimiter(1e6, 100, WithClock(func() int64 { return now }))
	leasing(t, b)
	if a := testing.AllocsPerRun(1000, func() { now += 300; b.Allow(); b.Release(now) }); a != 0 {
		t.Fatalf("a leasing Allow allocates %v", a)
	}
}

// TestLeaseHandBack drives the lease rules on rows made by hand: a lease is given back only by
// the last claimer and only when nothing moved the TAT back since it was taken; a P that cannot
// give its lease back keeps it rather than strand a second one; a pull-back or a Release on the
// shared word makes every lease taken before it unspendable; Release never gives back a slot
// before its lease's start; a call of no tokens takes no lease.
func TestLeaseHandBack(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2)) // two rows: a lease takes a quarter of the room
	fresh := func() *BucketLimiter {
		b, _ := NewBucketLimiter(1e6, 100, WithClock(func() int64 { return 0 })) // 1 µs a token
		b.leases.Init(leaseWords)
		return b
	}
	type row = [leaseWords]int64
	u := func(v uint64) int64 { return int64(v) } // a count as a row holds it
	take := func(b *BucketLimiter, r *row, x uint64, n int) {
		t.Helper()
		if ok, tat := b.renew(unsafe.Pointer(r), x, b.units(n)); !ok {
			t.Fatalf("renew of %d at %d refused against %d", n, x, tat)
		}
	}

	b := fresh()
	x0, one := b.at(0), b.one
	var A, B row
	take(b, &A, x0, 1) // A: slot [0,1 token) and a lease of 24 more (a quarter of the 99 left)
	if A != (row{wLo: u(x0 + one), wHi: u(x0 + 25*one), wStart: u(x0)}) {
		t.Fatalf("A's first lease %v", A)
	}
	take(b, &B, x0, 1) // B claims after A
	if B[wStart] != u(x0+25*one) || u(b.tat.Load()) != B[wHi] {
		t.Fatalf("B's lease %v, TAT %d", B, b.tat.Load())
	}
	// A needs 30 tokens and holds 24 it cannot give back (B claimed after it): it takes the 30
	// alone and keeps its lease.
	tat, kept := b.tat.Load(), A
	take(b, &A, x0, 30)
	if A != kept || b.tat.Load() != tat+30*one {
		t.Fatalf("A, not the last claimer: lease %v (had %v), TAT %d (was %d)", A, kept, b.tat.Load(), tat)
	}

	// The last claimer gives back what it left: its next call starts where it stopped.
	b = fresh()
	A = row{}
	take(b, &A, x0, 1)
	lo := A[wLo]
	take(b, &A, x0, int(uint64(A[wHi]-A[wLo])/one)+1)
	if A[wStart] != lo {
		t.Fatalf("the last claimer's lease not given back: starts at %d, had %d left from", A[wStart], lo)
	}

	// A pull-back: the lease taken before it is not spent, and a TAT that happens to end where
	// it does is not given back to.
	const now = int64(30_000)
	x := b.at(now)
	if !b.spend(unsafe.Pointer(&A), x, one) {
		t.Fatal("a lease with room refused a call")
	}
	b.TakeAt(now-int64(10*time.Minute), 1) // refused, pulls the TAT back, counts the pull-back
	if b.spend(unsafe.Pointer(&A), x, one) {
		t.Fatal("a lease taken before a pull-back was spent after it")
	}
	b.tat.Store(uint64(A[wHi]))
	end := A[wHi]
	take(b, &A, x, 3)
	if A[wStart] != end {
		t.Fatalf("a lease taken before a pull-back was given back: starts at %d, want %d", A[wStart], end)
	}
	// A Release on the shared word (leasing off, or not yet on for the releasing call) does the same.
	if !b.spend(unsafe.Pointer(&A), x, one) {
		t.Fatal("a fresh lease with room refused a call")
	}
	b.Release(now)
	if b.spend(unsafe.Pointer(&A), x, one) {
		t.Fatal("a lease taken before a Release on the shared word was spent after it")
	}

	// Release into the lease: back to its last spent slot, never before its start nor before now.
	take(b, &A, x, 1)
	start := uint64(A[wStart])
	for i := 0; i < 10; i++ {
		b.giveBack(unsafe.Pointer(&A), x)
	}
	if A[wLo] != u(max(start, x)) {
		t.Fatalf("released to %d, the lease starts at %d", A[wLo], start)
	}

	// A call of no tokens takes no lease.
	b = fresh()
	var Z row
	if ok, _ := b.renew(unsafe.Pointer(&Z), x0, 0); !ok || Z[wHi] != Z[wLo] || b.tat.Load() != x0 {
		t.Fatalf("a call of no tokens: lease %v, TAT %d", Z, b.tat.Load())
	}
}
