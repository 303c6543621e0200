package ward_test

import (
	"testing"
	"time"

	"github.com/wardgo/ward"
	"github.com/wardgo/ward/adaptive"
	"github.com/wardgo/ward/breaker"
	"github.com/wardgo/ward/shed"
)

// TestPureSettle: every pure core settles with the one vocabulary, Settle(now, ward.Outcome),
// exactly as its own verbs do.
func TestPureSettle(t *testing.T) {
	ms := int64(time.Millisecond)
	for _, o := range []ward.Outcome{ward.Pass, ward.Fail, ward.Ignore} {
		// adaptive: the same limit after a window settled by Settle as by the verbs.
		var cores [2]*adaptive.Core
		for k := range cores {
			rule := must(adaptive.NewAIMD(adaptive.DefaultAIMD()))
			cores[k] = must(adaptive.NewCore(rule, adaptive.DefaultWindow(), 0))
			for i := int64(0); i < 40; i++ {
				tk, _ := cores[k].Acquire(i * 50 * ms)
				now := i*50*ms + 10*ms
				if k == 0 {
					tk.Settle(now, o)
				} else {
					[]func(){func() { tk.Pass(now) }, func() { tk.Fail(now) }, tk.Ignore}[o]()
				}
				tk.Settle(now, ward.Fail) // settled already: nothing
			}
		}
		if a, b := cores[0].Limit(), cores[1].Limit(); a != b || cores[0].InFlight() != 0 {
			t.Errorf("adaptive %v: Settle gives limit %d (in flight %d), the verbs %d", o, a, cores[0].InFlight(), b)
		}

		// breaker: Settle records what Record of the matching outcome records.
		var bs [2]*breaker.Core
		for k := range bs {
			bs[k] = must(breaker.NewCore(breaker.GoZeroPolicy(), 0))
			for i := int64(0); i < 30; i++ {
				if k == 0 {
					bs[k].Settle(i*ms, o)
				} else if o != ward.Ignore {
					bs[k].Record(i*ms, [...]breaker.Outcome{ward.Pass: breaker.Success, ward.Fail: breaker.Failure}[o])
				}
			}
		}
		if a, b := bs[0].Ratio(30*ms), bs[1].Ratio(30*ms); a != b {
			t.Errorf("breaker %v: Settle gives ratio %v, Record %v", o, a, b)
		}

		// shed: the same capacity and in flight.
		var ss [2]*shed.Core
		for k := range ss {
			ss[k] = must(shed.NewCore(shed.DefaultPolicy(), 0))
			for i := int64(0); i < 30; i++ {
				tk, _ := ss[k].Allow(i*ms, 0)
				if k == 0 {
					tk.Settle(i*ms+ms, o)
				} else {
					[]func(){func() { tk.Pass(i*ms + ms) }, tk.Fail, tk.Ignore}[o]()
				}
			}
		}
		if a, b := ss[0].Capacity(40*ms), ss[1].Capacity(40*ms); a != b || ss[0].InFlight() != 0 {
			t.Errorf("shed %v: Settle gives capacity %v (in flight %d), the verbs %v", o, a, ss[0].InFlight(), b)
		}
	}
}
