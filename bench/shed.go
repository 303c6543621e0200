package bench

import (
	"sync"

	"github.com/go-kratos/aegis/ratelimit"
	"github.com/go-kratos/aegis/ratelimit/bbr"
	"github.com/zeromicro/go-zero/core/load"
	"github.com/zeromicro/go-zero/core/logx"

	ushed "github.com/wardgo/ward/bench/user/shed"
	"github.com/wardgo/ward/internal/clock"
	"github.com/wardgo/ward/shed"
)

func init() {
	// go-zero logs every refusal (a formatted report through logx, then stat.Report); the report
	// is still built, but not written to the benchmark's output.
	logx.Disable()
}

// wardShedder is ward's Shedder at a CPU reading of cpu as a user's package calls it (package
// user/shed).
func wardShedder(cpu int) func() Call {
	return func() Call { return must(ushed.Shedder(cpu)) }
}

func mutexShedder(cpu int) func() Call {
	return func() Call {
		var g guarded
		c, _ := shed.NewCore(shed.DefaultPolicy(), clock.Now())
		return func(work func(), o Outcome) bool {
			now := clock.Now()
			g.mu.Lock()
			t, ok := c.Allow(now, cpu)
			g.mu.Unlock()
			if !ok {
				return false
			}
			work()
			now = clock.Now()
			g.mu.Lock()
			if o == Success {
				t.Pass(now)
			} else {
				t.Fail()
			}
			g.mu.Unlock()
			return true
		}
	}
}

// gozeroShedder reads go-zero's process-wide CPU statistic, which cannot be injected: the
// threshold stands in for the CPU instead (1001: never hot; 0: always hot).
func gozeroShedder(threshold int64) func() Call {
	return func() Call {
		s := load.NewAdaptiveShedder(load.WithCpuThreshold(threshold))
		return func(work func(), o Outcome) bool {
			p, err := s.Allow()
			if err != nil {
				return false
			}
			work()
			if o == Success {
				p.Pass()
			} else {
				p.Fail()
			}
			return true
		}
	}
}

func aegisBBR(threshold int64) func() Call {
	return func() Call {
		l := bbr.NewLimiter(bbr.WithCPUThreshold(threshold))
		return func(work func(), o Outcome) bool {
			done, err := l.Allow()
			if err != nil {
				return false
			}
			work()
			var info ratelimit.DoneInfo
			if o == Failure {
				info.Err = errBackend
			}
			done(info)
			return true
		}
	}
}

// Shed is an admitted call through a load shedder on a cool server.
var Shed = Comparison{
	Name:         "Shed",
	WantAdmitted: 1,
	Impls: []Impl{
		{"ward", "Allow + Pass at an injected CPU of 300: per-P flight, one call in 8 timed", wardShedder(300)},
		{"gozero", "go-zero load.AdaptiveShedder, threshold 1001 (never hot): atomics, a mutex on the average, an allocation per promise, 2 clock reads", gozeroShedder(1001)},
		{"aegis-bbr", "kratos aegis bbr, threshold 1001 (never hot): rolling windows under mutexes", aegisBBR(1001)},
		{"mutex", "ward's Core behind one mutex, two clock reads", mutexShedder(300)},
	},
}

// ShedRefuse is a call to a hot, full server: the shedder refuses. Preparing admits a thousand
// calls and fails a hundred, so the average of calls in flight is far over the capacity of 1.
var ShedRefuse = Comparison{
	Name:         "ShedRefuse",
	WantAdmitted: 0,
	Prepare: func(c Call) func() {
		hold := make(chan struct{})
		var started, finished sync.WaitGroup
		for i := 0; i < 1000; i++ {
			started.Add(1)
			finished.Add(1)
			go func() {
				defer finished.Done()
				if !c(func() { started.Done(); <-hold }, Success) {
					started.Done() // refused: nothing to hold
				}
			}()
		}
		started.Wait()
		for i := 0; i < 100; i++ {
			c(None, Failure)
		}
		return func() { close(hold); finished.Wait() }
	},
	Impls: []Impl{
		{"ward", "Allow at an injected CPU of 1000 with 1000 in flight", wardShedder(1000)},
		{"gozero", "go-zero, threshold 0 (always hot) with 1000 in flight: formats a report per refusal", gozeroShedder(0)},
		{"aegis-bbr", "kratos aegis bbr, threshold 0 (always hot) with 1000 in flight", aegisBBR(0)},
		{"mutex", "ward's Core behind one mutex at CPU 1000", mutexShedder(1000)},
	},
}
