package rate

import (
	"encoding/binary"
	"errors"
	"math"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"
)

// instants decodes fuzz data into at most 256 instants: each is 9 bytes, a kind and a value; an
// even kind sets the instant to the value (anywhere in the int64 range), an odd one moves it by
// the value's low 40 bits, forwards or backwards, wrapping round at the ends of the range.
func instants(start int64, data []byte) []int64 {
	var out []int64
	now := start
	for len(data) >= 9 && len(out) < 256 {
		v := int64(binary.LittleEndian.Uint64(data[1:9]))
		if data[0]%2 == 0 {
			now = v
		} else {
			now = int64(uint64(now) + uint64(v>>24)) // v>>24: within ±2^39
		}
		out = append(out, now)
		data = data[9:]
	}
	return out
}

func op(kind byte, v int64) []byte {
	b := make([]byte, 9)
	b[0] = kind
	binary.LittleEndian.PutUint64(b[1:], uint64(v))
	return b
}

// accrual adds up the time a bucket can refill over a run of instants: from start, or from the
// instant a pull back moved its state to, up to the latest instant after it. A jump back (pulled
// back) followed by a jump forward reads as time passed, so the span from start to the latest
// instant is not the bound: each stretch between pulls back counts.
type accrual struct {
	sum    *big.Int // nanoseconds of the stretches closed so far
	lo, hi int64    // the open stretch
}

func newAccrual(start int64) *accrual { return &accrual{sum: new(big.Int), lo: start, hi: start} }

// from closes the open stretch and opens one at t.
func (a *accrual) from(t int64) {
	if a.hi > a.lo {
		a.sum.Add(a.sum, new(big.Int).SetUint64(since(a.hi, a.lo)))
	}
	a.lo, a.hi = t, t
}

// at extends the open stretch to t.
func (a *accrual) at(t int64) { a.hi = max(a.hi, t) }

// total closes the open stretch and returns the nanoseconds of all of them.
func (a *accrual) total() *big.Int {
	a.from(a.hi)
	return a.sum
}

func checkWait(t *testing.T, what string, w time.Duration, granted bool) {
	t.Helper()
	if w < 0 || (granted && w != 0) || (!granted && w < 1) {
		t.Fatalf("%s: wait %v (granted %v)", what, w, granted)
	}
}

// FuzzBucket builds both buckets from fuzzed parameters (any float64 rate, NaN and infinities
// among them, any int burst) and plays fuzzed calls at fuzzed instants on both: construction
// errors exactly outside the documented bounds, naming the field, and alike for both; every
// answer of the BucketLimiter, wait included, equals the Bucket's, and so do Next, Left and
// TokensAt after every call; a full bucket admits burst at once; waits are within [1 ns, Forever]
// on a refusal and 0 on a grant; a refusal's wait is exact (granted then, refused 1 ns before,
// when nothing else moved); neither ever grants more than the burst plus the refill over the
// span of the instants, plus one burst for each jump back of more than MaxSkew (the state pulled
// back, empty, to an instant that refills again).
func FuzzBucket(f *testing.F) {
	seeds := []struct {
		rate     float64
		burst, n int
		start    int64
	}{
		{6, 1, 1, 0}, {7, 0, 1, 5}, {600, 3, 2, -5}, {1500, 1, 1, 1 << 60}, {1.0 / 3, 10, 0, 0},
		{1e9, 1e6, 1, math.MinInt64}, {1, int(^uint(0) >> 24), 1, 0}, {1e-10, 1, 1, 0}, {math.NaN(), 1, 1, 0},
		{math.Inf(1), math.MaxInt, -1, math.MaxInt64}, {0, -1, -1, 0}, {1e300, int(^uint(0) >> 14), 1 << 20, 0},
		{math.SmallestNonzeroFloat64, 2, 1, math.MaxInt64 - 5}, {3, 10, 1, 0}, {6e8, 1, 1, 0}, {1e-3, 4, 5, -1},
	}
	for _, c := range seeds {
		data := slices.Concat(op(1, 1e9<<24), op(0, math.MaxInt64), op(0, math.MinInt64), op(1, -3<<24), op(0, c.start+1),
			op(3, 333_333_333<<24), op(5, 1<<24), op(7, 0), op(9, 2<<24))
		f.Add(c.rate, c.burst, c.n, c.start, data)
	}
	f.Fuzz(func(t *testing.T, rate float64, burst, n int, start int64, data []byte) {
		b, err := NewBucket(rate, burst, start)
		now := start
		l, lerr := NewBucketLimiter(rate, burst, WithClock(func() int64 { return now }))
		validRate := !math.IsNaN(rate) && rate >= 0 && rate <= 1e9
		validBurst := burst >= 1 && int64(burst) <= MaxBurst
		if (err == nil) != (validRate && validBurst) || (lerr == nil) != (err == nil) {
			t.Fatalf("NewBucket(%v, %v): %v; NewBucketLimiter: %v", rate, burst, err, lerr)
		}
		if err != nil {
			field := "burst"
			if !validRate {
				field = "rate"
			}
			for _, e := range []error{err, lerr} {
				if !errors.Is(e, ErrInvalid) || !strings.Contains(e.Error(), field) {
					t.Fatalf("NewBucket(%v, %v): %v does not name %s", rate, burst, e, field)
				}
			}
			return
		}
		if burst <= 1000 {
			got, full := 0, *b
			for got <= burst && l.Allow() {
				if ok, _ := full.TakeAt(start, 1); !ok {
					t.Fatalf("BucketLimiter admitted call %d of a full bucket, the Bucket refused it", got+1)
				}
				got++
			}
			if got != burst && b.at(start) <= math.MaxUint64-b.tau {
				t.Fatalf("BucketLimiter(%v, %v): a full bucket admitted %v, want %v", rate, burst, got, burst)
			}
			b = &full
		} else if ok, wait := b.TakeAt(start, burst); !ok && b.at(start) <= math.MaxUint64-b.tau {
			t.Fatalf("Bucket(%v, %v): a full bucket refused its burst: %v", rate, burst, wait)
		} else if lok, lwait := l.TakeAt(start, burst); lok != ok || lwait != wait {
			t.Fatalf("BucketLimiter(%v, %v): the burst of a full bucket %v %v, the Bucket's %v %v", rate, burst, lok, lwait, ok, wait)
		}

		granted, pulls := 0.0, 0
		run := newAccrual(start)
		for i, at := range instants(start, data) {
			now = at
			c := []int{1, n}[i%2]
			if b.skewed(b.tat, b.at(now)) {
				pulls++
				run.from(now) // pulled back to now: time accrues from here
			}
			run.at(now)
			next := b.Next(now, c)
			ok, wait := b.TakeAt(now, c)
			checkWait(t, "Bucket.Take", wait, ok)
			if wait != next {
				t.Fatalf("Bucket: Take waits %v, Next said %v", wait, next)
			}
			var lok bool
			lwait := wait // Acquire and Allow have no wait: Next is compared below
			kind := data[i*9] / 2 % 4
			switch {
			case kind == 0 || c != 1:
				lok, lwait = l.TakeAt(now, c)
			case kind == 1:
				lok = l.Acquire(now)
			default:
				lok = l.Allow()
			}
			if lok != ok || lwait != wait {
				t.Fatalf("at %d, %d tokens: Bucket %v %v, BucketLimiter %v %v", now, c, ok, wait, lok, lwait)
			}
			if kind == 2 && ok && c == 1 {
				b.Release(now)
				l.Release(now)
				ok = false // given back: not counted
			}
			if ok {
				granted += float64(cost(c))
			}
			if a, b2 := b.TokensAt(now), l.TokensAt(now); a != b2 || b.Left(now) != l.Left(now) || b.Next(now, 1) != l.Next(now, 1) {
				t.Fatalf("at %d: TokensAt %v and %v, Left %d and %d, Next %v and %v", now, a, b2, b.Left(now), l.Left(now), b.Next(now, 1), l.Next(now, 1))
			}
			if tok, left := b.TokensAt(now), b.Left(now); !(tok >= 0 && tok <= float64(burst)) || left < 0 || left > burst || math.Abs(float64(left)-tok) >= 1+tok*1e-12 {
				t.Fatalf("Bucket: %v tokens, Left %d", tok, left)
			}
			if !ok && wait > 1 && wait != Forever && now <= math.MaxInt64-int64(wait) && cost(c) <= burst {
				// The wait is exact: 1 ns short, still refused; at the wait, granted.
				probe := *b
				if early, _ := probe.TakeAt(now+int64(wait)-1, c); early {
					t.Fatalf("at %d: %d tokens granted 1 ns before the wait of %v", now, c, wait)
				}
				if late, _ := probe.TakeAt(now+int64(wait), c); !late {
					t.Fatalf("at %d: %d tokens refused at the end of the wait of %v", now, c, wait)
				}
			}
		}
		// The refill: the rate over the stretches, plus the rounding of its grid, at most a
		// unit a stretch and the rate's last bit.
		elapsed, _ := new(big.Float).Quo(new(big.Float).SetInt(run.total()), big.NewFloat(1e9)).Float64()
		units := float64(3*(1+pulls)) / float64(b.one)
		if bound := float64(burst*(1+pulls)) + rate*elapsed; granted > bound*(1+1e-9)+units+1e-6 {
			t.Fatalf("Bucket granted %v, at most %v over %v s with %d pulls back", granted, bound, elapsed, pulls)
		}
	})
}

// FuzzSliding builds a window from fuzzed parameters and plays fuzzed instants and releases: at
// most quota admissions in any window-long stretch, whatever their order; Left and Next agree
// with Take; an instant at or after every admission is judged exactly.
func FuzzSliding(f *testing.F) {
	trace := slices.Concat(op(0, 0), op(0, 1), op(0, 11), op(0, 2))
	f.Add(2, int64(10), trace)
	f.Add(3, int64(time.Second), slices.Concat(op(0, math.MaxInt64), op(0, math.MinInt64), op(3, 0), op(1, 5<<24)))
	f.Add(math.MaxInt, int64(1), trace)
	f.Add(1, int64(math.MaxInt64), trace)
	f.Add(0, int64(-1), trace)
	f.Fuzz(func(t *testing.T, quota int, window int64, data []byte) {
		valid := quota >= 1 && quota <= MaxSlidingQuota && window > 0
		if valid && quota > 4096 {
			return // valid and large: what it does is the same, and 8 bytes a slot make it slow
		}
		s, err := NewSliding(quota, time.Duration(window))
		if (err == nil) != valid {
			t.Fatalf("NewSliding(%d, %d): %v", quota, window, err)
		}
		if err != nil {
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "quota") && !strings.Contains(err.Error(), "window") {
				t.Fatalf("NewSliding(%d, %d): %v does not name the field", quota, window, err)
			}
			return
		}
		var kept []int64
		newest := int64(math.MinInt64)
		for i, now := range instants(0, data) {
			if data[i*9]%4 == 3 {
				s.Release(now)
				best := -1
				for k, v := range kept {
					if v <= now && (best < 0 || v > kept[best]) {
						best = k
					}
				}
				if best >= 0 {
					kept = slices.Delete(kept, best, best+1)
				}
				continue
			}
			if s.skewed(now) {
				// A jump back of more than MaxSkew: Take pulls the window back to now, full. The
				// promise holds from there on, with quota events at now.
				checkWindows(t, kept, quota, window)
				kept = slices.Repeat([]int64{now}, quota)
				newest = now
			}
			left, next := s.Left(now), s.Next(now, 1)
			ok, wait := s.TakeAt(now, 1)
			if (left > 0) != ok || wait != next || (next == 0) != ok || next < 0 || left < 0 || left > quota {
				t.Fatalf("Take(%d) = %v, but Left = %d, Next = %v", now, ok, left, next)
			}
			if now >= newest {
				if now != newest && next > time.Duration(window) {
					t.Fatalf("in order at %d: Next = %v, over the window", now, next)
				}
				live := 0
				for _, k := range kept {
					if !s.out(k, now) {
						live++
					}
				}
				if ok != (live < quota) {
					t.Fatalf("in order at %d: Take = %v with %d live of %d", now, ok, live, quota)
				}
			}
			if ok {
				kept = append(kept, now)
				newest = max(newest, now)
			}
		}
		checkWindows(t, kept, quota, window)
	})
}

// FuzzPeriod builds a period counter (pure and concurrent) from fuzzed parameters and plays
// fuzzed instants: both give the same answers; no period ends before a period has passed since
// its start; at most quota admissions per period; Left and Next stay within their bounds.
func FuzzPeriod(f *testing.F) {
	jumps := slices.Concat(op(0, 5e18), op(0, -5e18), op(0, math.MaxInt64), op(0, math.MinInt64+1), op(1, 7<<24))
	f.Add(3, int64(time.Second), true, jumps)
	f.Add(1, int64(time.Hour), false, jumps)
	f.Add(math.MaxInt, int64(math.MaxInt64), true, jumps)
	f.Add(2, int64(10), true, jumps)
	f.Add(0, int64(-5), false, jumps)
	f.Fuzz(func(t *testing.T, quota int, period int64, align bool, data []byte) {
		p, err := NewPeriod(quota, time.Duration(period), align)
		l, lerr := NewPeriodLimiter(quota, time.Duration(period), align)
		if (err == nil) != (quota >= 1 && period > 0) || (lerr == nil) != (err == nil) {
			t.Fatalf("NewPeriod(%d, %d): %v, %v", quota, period, err, lerr)
		}
		if err != nil {
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "quota") && !strings.Contains(err.Error(), "period") {
				t.Fatalf("NewPeriod(%d, %d): %v does not name the field", quota, period, err)
			}
			return
		}
		length := period
		count := 0
		var u Usage
		for i, now := range instants(0, data) {
			jump := p.usage.Open && skewed(p.usage.Start, now)
			if data[i*9]%4 == 3 {
				p.Release(now)
				l.Release(now)
				if v := p.current(now, p.usage); !jump && v.Open && v.Start == u.Start {
					count = v.Count
				}
				continue
			}
			q := p.TakeQuota(now)
			if lq := l.TakeQuota(now); lq != q {
				t.Fatalf("at %d: PeriodLimiter %v, Period %v", now, lq, q)
			}
			v := p.usage
			if jump {
				// A jump back of more than MaxSkew: the period is pulled back to now, spent.
				if q != Over || v.Count != quota || v.Start != p.open(now) {
					t.Fatalf("a jump back to %d from a period at %d: %v %+v", now, u.Start, q, v)
				}
				u, count = v, quota
			} else if !u.Open || v.Start != u.Start {
				if u.Open && !(now >= u.Start && since(now, u.Start) >= uint64(length)) {
					t.Fatalf("the period from %d ended at %d, before %d ns", u.Start, now, length)
				}
				if v.Start > now || (v.Start != math.MinInt64 && since(now, v.Start) >= uint64(length)) {
					t.Fatalf("a period opened at %d starts at %d", now, v.Start)
				}
				if align && v.Start != math.MinInt64 && v.Start%length != 0 {
					t.Fatalf("an aligned period starts at %d", v.Start)
				}
				count = 0
			}
			u = v
			if q != Over {
				count++
			}
			if count > quota {
				t.Fatalf("%d admitted in the period from %d, quota %d", count, u.Start, quota)
			}
			left, reset, next := p.Left(now), p.Reset(now), p.Next(now, 1)
			if left < 0 || left > quota || reset < 0 || reset > time.Duration(length) || left != l.Left(now) || reset != l.Reset(now) || next != l.Next(now, 1) {
				t.Fatalf("at %d: Left %d (limiter %d), Reset %v (%v), Next %v (%v)", now, left, l.Left(now), reset, l.Reset(now), next, l.Next(now, 1))
			}
			if (left > 0) != (next == 0) || left == 0 && next != reset {
				t.Fatalf("at %d: Left %d, Next %v, Reset %v", now, left, next, reset)
			}
		}
	})
}
