package bench

import (
	"time"

	fsrate "github.com/failsafe-go/failsafe-go/ratelimiter"
	uber "go.uber.org/ratelimit"
	xrate "golang.org/x/time/rate"

	"github.com/wardgo/ward/rate"
)

// admitRate and refuseRate are the rates of the two rate scenarios: one so high that every call is
// admitted, one so low that, once the burst is spent, every call is refused.
const (
	admitRate  = 1e9
	refuseRate = 1e-3
)

func wardBucket(r float64) func() Call {
	return func() Call {
		b, _ := rate.NewBucketLimiter(r, 1)
		return func(work func(), _ Outcome) bool {
			if !b.Allow() {
				return false
			}
			work()
			return true
		}
	}
}

func xBucket(r float64) func() Call {
	return func() Call {
		l := xrate.NewLimiter(xrate.Limit(r), 1)
		return func(work func(), _ Outcome) bool {
			if !l.Allow() {
				return false
			}
			work()
			return true
		}
	}
}

func failsafeBucket(r float64) func() Call {
	return func() Call {
		every := time.Duration(float64(time.Second) / r)
		l := fsrate.NewSmoothWithMaxRate[any](max(every, 1))
		return func(work func(), _ Outcome) bool {
			if !l.TryAcquirePermit() {
				return false
			}
			work()
			return true
		}
	}
}

// uberTake is go.uber.org/ratelimit, which only blocks: at a rate of 1e9 a second it never has to.
func uberTake() Call {
	l := uber.New(int(admitRate), uber.WithoutSlack)
	return func(work func(), _ Outcome) bool {
		l.Take()
		work()
		return true
	}
}

func mutexBucket(r float64) func() Call {
	return func() Call {
		var g guarded
		b, _ := rate.NewBucket(r, 1, nowNano())
		return func(work func(), _ Outcome) bool {
			now := nowNano()
			g.mu.Lock()
			ok, _ := b.Take(now, 1)
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
		{"ward", "BucketLimiter.Allow: GCRA, one clock read and one CAS", wardBucket(admitRate)},
		{"x-time-rate", "golang.org/x/time/rate Limiter.Allow: a mutex, time.Now", xBucket(admitRate)},
		{"uber-ratelimit", "go.uber.org/ratelimit Take (blocking only; never blocks at this rate): atomics", uberTake},
		{"failsafe-ratelimiter", "failsafe-go smooth rate limiter TryAcquirePermit: a mutex", failsafeBucket(admitRate)},
		{"mutex", "ward's pure Bucket behind one mutex", mutexBucket(admitRate)},
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
		{"ward", "BucketLimiter.Allow refused: one clock read, no CAS", wardBucket(refuseRate)},
		{"x-time-rate", "x/time/rate Allow refused: a mutex, time.Now", xBucket(refuseRate)},
		{"failsafe-ratelimiter", "failsafe-go smooth TryAcquirePermit refused", failsafeBucket(refuseRate)},
		{"mutex", "ward's pure Bucket behind one mutex", mutexBucket(refuseRate)},
	},
}
