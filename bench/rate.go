package bench

import (
	"time"

	fsrate "github.com/failsafe-go/failsafe-go/ratelimiter"
	uber "go.uber.org/ratelimit"
	xrate "golang.org/x/time/rate"

	urate "github.com/wardgo/ward/bench/user/rate"
	"github.com/wardgo/ward/rate"
)

// admitRate and refuseRate are the rates of the two rate scenarios: one so high that every call is
// admitted, one so low that, once the burst is spent, every call is refused.
const (
	admitRate  = 1e9
	refuseRate = 1e-3
)

// burstSize is the burst of the RateBurst scenario: 10 µs of tokens at admitRate. A bucket of
// burst 1 gives every call the slot at its own instant, so its callers share one word whatever
// the library; a burst is what lets ward lease tokens to Ps.
const burstSize = 10_000

// gated is the Call of a limiter that only admits: allow, then the work.
func gated(allow func() bool) Call {
	return func(work func(), _ Outcome) bool {
		if !allow() {
			return false
		}
		work()
		return true
	}
}

// wardBucket is ward's BucketLimiter as a user's package calls it (package user/rate).
func wardBucket(r float64, burst int) func() Call {
	return func() Call { return must(urate.Bucket(r, burst)) }
}

// wardCounted is wardBucket built WithCounts.
func wardCounted(r float64, burst int) func() Call {
	return func() Call { return must(urate.Bucket(r, burst, rate.WithCounts())) }
}

func xBucket(r float64, burst int) func() Call {
	return func() Call {
		l := xrate.NewLimiter(xrate.Limit(r), burst)
		return gated(l.Allow)
	}
}

func failsafeBucket(r float64) func() Call {
	return func() Call {
		every := time.Duration(float64(time.Second) / r)
		l := fsrate.NewSmoothWithMaxRate[any](max(every, 1))
		return gated(l.TryAcquirePermit)
	}
}

// uberTake is go.uber.org/ratelimit, which only blocks: at a rate of 1e9 a second it never has to.
// Its slack is what it keeps of unused time, its burst: none, or slack calls.
func uberTake(slack int) func() Call {
	return func() Call {
		opt := uber.WithoutSlack
		if slack > 0 {
			opt = uber.WithSlack(slack)
		}
		l := uber.New(int(admitRate), opt)
		return func(work func(), _ Outcome) bool {
			l.Take()
			work()
			return true
		}
	}
}

// failsafeBursty is failsafe-go's bursty rate limiter: burst permits a period of burst/rate.
func failsafeBursty(r float64, burst int) func() Call {
	return func() Call {
		l := fsrate.NewBursty[any](uint(burst), time.Duration(float64(burst)/r*1e9))
		return gated(l.TryAcquirePermit)
	}
}

func mutexBucket(r float64, burst int) func() Call {
	return func() Call {
		var g guarded
		b, _ := rate.NewBucket(r, burst, nowNano())
		return func(work func(), _ Outcome) bool {
			now := nowNano()
			g.mu.Lock()
			ok, _ := b.TakeAt(now, 1)
			g.mu.Unlock()
			if !ok {
				return false
			}
			work()
			return true
		}
	}
}

var epoch = time.Now()

func nowNano() int64 { return int64(time.Since(epoch)) }

// Rate is a call within a token bucket's rate.
var Rate = Comparison{
	Name:         "Rate",
	WantAdmitted: 1,
	Impls: []Impl{
		{"ward", "BucketLimiter.Allow, burst 1: GCRA, one clock read and one CAS", wardBucket(admitRate, 1)},
		{"ward-counts", "the same, built WithCounts: plus one pinned per-P add", wardCounted(admitRate, 1)},
		{"x-time-rate", "golang.org/x/time/rate Limiter.Allow: a mutex, time.Now", xBucket(admitRate, 1)},
		{"uber-ratelimit", "go.uber.org/ratelimit Take (blocking only; never blocks at this rate): atomics", uberTake(0)},
		{"failsafe-ratelimiter", "failsafe-go smooth rate limiter TryAcquirePermit: a mutex", failsafeBucket(admitRate)},
		{"mutex", "ward's pure Bucket behind one mutex", mutexBucket(admitRate, 1)},
	},
}

// RateBurst is a call within a token bucket's rate, the bucket holding a burst of burstSize.
var RateBurst = Comparison{
	Name:         "RateBurst",
	WantAdmitted: 1,
	Impls: []Impl{
		{"ward", "BucketLimiter.Allow, burst 10,000: one clock read; once callers collide, tokens leased to Ps", wardBucket(admitRate, burstSize)},
		{"ward-counts", "the same, built WithCounts: plus one pinned per-P add", wardCounted(admitRate, burstSize)},
		{"x-time-rate", "x/time/rate Limiter.Allow, burst 10,000: a mutex, time.Now", xBucket(admitRate, burstSize)},
		{"uber-ratelimit", "go.uber.org/ratelimit Take, slack 10,000: atomics", uberTake(burstSize)},
		{"failsafe-ratelimiter", "failsafe-go bursty limiter, 10,000 permits a 10 µs period: a mutex", failsafeBursty(admitRate, burstSize)},
		{"mutex", "ward's pure Bucket, burst 10,000, behind one mutex", mutexBucket(admitRate, burstSize)},
	},
}

// RateRefuse is a call over the rate: refused.
var RateRefuse = Comparison{
	Name:         "RateRefuse",
	WantAdmitted: 0,
	Prepare: func(c Call) func() {
		c(None, Success) // spend the burst of one
		return func() {}
	},
	Impls: []Impl{
		{"ward", "BucketLimiter.Allow refused: one clock read, no CAS", wardBucket(refuseRate, 1)},
		{"ward-counts", "the same, built WithCounts: plus one pinned per-P add", wardCounted(refuseRate, 1)},
		{"x-time-rate", "x/time/rate Allow refused: a mutex, time.Now", xBucket(refuseRate, 1)},
		{"failsafe-ratelimiter", "failsafe-go smooth TryAcquirePermit refused", failsafeBucket(refuseRate)},
		{"mutex", "ward's pure Bucket behind one mutex", mutexBucket(refuseRate, 1)},
	},
}
