package bench

import (
	"context"
	"time"

	"github.com/failsafe-go/failsafe-go/adaptivelimiter"
	"github.com/platinummonkey/go-concurrency-limits/core"
	"github.com/platinummonkey/go-concurrency-limits/limit"
	"github.com/platinummonkey/go-concurrency-limits/limiter"
	"github.com/platinummonkey/go-concurrency-limits/strategy"

	"github.com/wardgo/ward/adaptive"
	uadaptive "github.com/wardgo/ward/bench/user/adaptive"
	"github.com/wardgo/ward/internal/clock"
)

// wide is a limit no benchmark reaches, so the admission path is what is measured.
const wide = 1 << 20

// wardGradient is ward's Limiter as a user's package calls it (package user/adaptive).
func wardGradient(every int) func() Call {
	return func() Call { return must(uadaptive.Gradient(wide, every)) }
}

// wardPartition is a call through a partition of ward's Limiter (package user/adaptive).
func wardPartition(every int) func() Call {
	return func() Call { return must(uadaptive.Partition(wide, every)) }
}

// netflixGo builds the Go port's DefaultLimiter around a limit algorithm with a SimpleStrategy.
// The port's WindowedLimit ignores samples under its minRTTThreshold, which defaults to 1e8 ns
// (100 ms, documented as 100 µs: a factor of 1000 off); the comparison passes 1e5 (100 µs) so the
// windows see the samples, as the Java original would.
func netflixGo(mk func() core.Limit, windowed bool) func() Call {
	return func() Call {
		var lim core.Limit = mk()
		if windowed {
			w, err := limit.NewWindowedLimit("bench", int64(time.Second), int64(time.Second), 10, 1e5, lim, core.EmptyMetricRegistryInstance)
			if err != nil {
				panic(err)
			}
			lim = w
		}
		l, err := limiter.NewDefaultLimiter(lim, int64(time.Second), int64(time.Second), 1e5, 10,
			strategy.NewSimpleStrategy(wide), limit.NoopLimitLogger{}, core.EmptyMetricRegistryInstance)
		if err != nil {
			panic(err)
		}
		ctx := context.Background()
		return func(work func(), o Outcome) bool {
			listener, ok := l.Acquire(ctx)
			if !ok {
				return false
			}
			work()
			if o == Success {
				listener.OnSuccess()
			} else {
				listener.OnDropped()
			}
			return true
		}
	}
}

func failsafeAdaptive() Call {
	l := adaptivelimiter.NewBuilder[any]().WithLimits(wide/2, wide, wide).Build()
	return func(work func(), o Outcome) bool {
		p, ok := l.TryAcquirePermit()
		if !ok {
			return false
		}
		work()
		if o == Success {
			p.Record()
		} else {
			p.Drop()
		}
		return true
	}
}

// mutexAdaptive is ward's windowed Gradient behind one mutex: what a straightforward
// implementation of the same arithmetic costs (two clock reads, a lock on each side).
func mutexAdaptive() Call {
	var g guarded
	p := adaptive.DefaultGradient()
	p.Initial, p.Min, p.Max = wide, wide, wide
	rule, _ := adaptive.NewGradient(p)
	var inFlight, n, peak int64
	var sum time.Duration
	end := clock.Now() + int64(time.Second)
	return func(work func(), o Outcome) bool {
		start := clock.Now()
		g.mu.Lock()
		if inFlight >= int64(rule.Limit()) {
			g.mu.Unlock()
			return false
		}
		inFlight++
		mine := inFlight
		g.mu.Unlock()
		work()
		now := clock.Now()
		g.mu.Lock()
		inFlight--
		sum += time.Duration(now - start)
		n++
		peak = max(peak, mine)
		if now >= end && n >= 10 {
			rule.Sample(adaptive.Sample{RTT: sum / time.Duration(n), InFlight: int(peak), Dropped: o == Failure})
			sum, n, peak, end = 0, 0, 0, now+int64(time.Second)
		}
		g.mu.Unlock()
		return true
	}
}

// Adaptive is acquire + release of an adaptive concurrency limit that never fills.
var Adaptive = Comparison{
	Name:         "Adaptive",
	WantAdmitted: 1,
	Impls: []Impl{
		{"ward", "Gradient2 rule; CAS in and out, a per-P stripe sample, one call in 8 timed (2 clock reads)", wardGradient(adaptive.DefaultSampleEvery)},
		{"ward-every", "as ward, every call timed (2 clock reads per call, Netflix's behaviour)", wardGradient(1)},
		{"ward-partition", "as ward, through the first of two partitions (70%/30%) of the limiter: the partition's counts in the same pinned sections", wardPartition(adaptive.DefaultSampleEvery)},
		{"netflix-go-gradient2", "DefaultLimiter + WindowedLimit(Gradient2), SimpleStrategy: a global mutex per acquire, 2 clock reads, allocations per call", netflixGo(func() core.Limit {
			return limit.NewDefaultGradient2Limit("bench", limit.NoopLimitLogger{}, core.EmptyMetricRegistryInstance)
		}, true)},
		{"netflix-go-aimd", "DefaultLimiter + AIMD", netflixGo(func() core.Limit { return limit.NewDefaultAIMDLimit("bench", core.EmptyMetricRegistryInstance) }, false)},
		{"netflix-go-vegas", "DefaultLimiter + Vegas", netflixGo(func() core.Limit {
			return limit.NewDefaultVegasLimit("bench", limit.NoopLimitLogger{}, core.EmptyMetricRegistryInstance)
		}, false)},
		{"failsafe-adaptivelimiter", "failsafe-go adaptivelimiter TryAcquirePermit + Record: semaphore and sample under mutexes", failsafeAdaptive},
		{"mutex", "ward's windowed Gradient behind one mutex, every call timed", mutexAdaptive},
		{"semaphore", "a fixed bulkhead: CAS in, atomic add out; the floor", func() Call { s := &semaphore{limit: wide}; return s.call }},
	},
}
