package bench

import (
	"errors"
	"time"

	fsbreaker "github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/go-kratos/aegis/circuitbreaker/sre"
	"github.com/sony/gobreaker/v2"
	zbreaker "github.com/zeromicro/go-zero/core/breaker"

	ubreaker "github.com/wardgo/ward/bench/user/breaker"
	"github.com/wardgo/ward/breaker"
	"github.com/wardgo/ward/internal/clock"
)

var errBackend = errors.New("backend failed")

func result(o Outcome) error {
	if o == Failure {
		return errBackend
	}
	return nil
}

// wardBreaker is ward's Breaker with policy p as a user's package calls it (package
// user/breaker).
func wardBreaker(p func() breaker.Policy) func() Call {
	return func() Call { return must(ubreaker.Breaker(p())) }
}

// mutexBreaker is ward's Core behind one mutex, the clock read on both sides.
func mutexBreaker() Call {
	var g guarded
	c, _ := breaker.NewCore(breaker.DefaultPolicy(), clock.Now())
	return func(work func(), o Outcome) bool {
		now := clock.Now()
		g.mu.Lock()
		ok := c.Allow(now, randFloat())
		g.mu.Unlock()
		if !ok {
			return false
		}
		work()
		now = clock.Now()
		g.mu.Lock()
		if o == Success {
			c.Record(now, breaker.Success)
		} else {
			c.Record(now, breaker.Failure)
		}
		g.mu.Unlock()
		return true
	}
}

func gozeroBreaker() Call {
	b := zbreaker.NewBreaker()
	return func(work func(), o Outcome) bool {
		admitted := false
		_ = b.Do(func() error { admitted = true; work(); return result(o) })
		return admitted
	}
}

func aegisBreaker() Call {
	b := sre.NewBreaker()
	return func(work func(), o Outcome) bool {
		if b.Allow() != nil {
			b.MarkFailed() // aegis's documented usage: a local refusal counts as a failure
			return false
		}
		work()
		if o == Success {
			b.MarkSuccess()
		} else {
			b.MarkFailed()
		}
		return true
	}
}

func gobreakerBreaker() Call {
	b := gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{Name: "bench"})
	return func(work func(), o Outcome) bool {
		admitted := false
		_, _ = b.Execute(func() (struct{}, error) { admitted = true; work(); return struct{}{}, result(o) })
		return admitted
	}
}

func failsafeBreaker() Call {
	b := fsbreaker.NewWithDefaults[any]()
	return func(work func(), o Outcome) bool {
		if !b.TryAcquirePermit() {
			return false
		}
		work()
		if o == Success {
			b.RecordSuccess()
		} else {
			b.RecordFailure()
		}
		return true
	}
}

var breakerImpls = []Impl{
	{"ward", "Allow + Pass, DefaultPolicy: cached ratio, one clock read at settle, one per-P stripe write", wardBreaker(breaker.DefaultPolicy)},
	{"ward-gozero", "the same with GoZeroPolicy: go-zero's googlebreaker numbers, decision for decision (the like-for-like row against gozero)", wardBreaker(breaker.GoZeroPolicy)},
	{"gozero", "go-zero core/breaker Do: googlebreaker under a mutex-guarded rolling window, a closure per call", gozeroBreaker},
	{"aegis-sre", "kratos aegis sre.Breaker Allow + Mark: rolling window under a mutex, mutex-guarded rand", aegisBreaker},
	{"gobreaker", "sony/gobreaker v2 Execute: a mutex per call on each side (open/closed, not SRE)", gobreakerBreaker},
	{"failsafe-circuitbreaker", "failsafe-go circuit breaker TryAcquirePermit + Record (count based, open/closed)", failsafeBreaker},
	{"mutex", "ward's Core behind one mutex, two clock reads", mutexBreaker},
}

// Breaker is a healthy call through a breaker: admitted, succeeds.
var Breaker = Comparison{Name: "Breaker", WantAdmitted: 1, Impls: breakerImpls}

// BreakerRefuse is a call to a backend that has failed everything: the breaker refuses. The
// failures keep coming so the ratio stays up (a call let through by the draw fails too).
var BreakerRefuse = Comparison{
	Name:         "BreakerRefuse",
	WantAdmitted: 0,
	Outcome:      Failure,
	Prepare: func(c Call) func() {
		for i := 0; i < 20000; i++ {
			c(None, Failure)
		}
		// a breaker that caches its ratio (ward refreshes it every 62.5 ms) needs the failures to
		// go on until it reads them: fail until ten refusals in a row, for at most 10 s of calls
		for run, start := 0, time.Now(); run < 10 && time.Since(start) < 10*time.Second; {
			if c(None, Failure) {
				run = 0
			} else {
				run++
			}
		}
		return func() {}
	},
	Impls: breakerImpls,
}
