package breaker

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

const (
	ms  = int64(time.Millisecond)
	sec = int64(time.Second)
)

func newCore(t *testing.T) *Core {
	t.Helper()
	c, err := NewCore(GoZeroPolicy(), 0)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestSixthFailure: with protection 5, five failures refuse nothing; after the sixth the ratio is
// positive and a low draw is refused.
func TestSixthFailure(t *testing.T) {
	c := newCore(t)
	for i := 1; i <= 6; i++ {
		if !c.Allow(int64(i)*ms, 0) {
			t.Fatalf("call %d refused with %d failures in the window", i, i-1)
		}
		c.Record(int64(i)*ms, Failure)
	}
	// total 6, accepts 0, one failing bucket: (6 − 5 − 0) / 7
	if got, want := c.Ratio(7*ms), 1.0/7; math.Abs(got-want) > 1e-12 {
		t.Fatalf("Ratio after six failures = %v, want %v", got, want)
	}
	if c.Allow(7*ms, 1.0/7-1e-9) != false {
		t.Fatal("a draw under the ratio was let through")
	}
	// the refusal counts in total: (7 − 5) / 8
	if got := c.Ratio(8 * ms); got != 0.25 {
		t.Fatalf("Ratio after the refusal = %v, want 0.25", got)
	}
}

// TestKDecay: k falls by (1.5 − 1.1) / 40 = 0.01 for every bucket of uninterrupted failure.
func TestKDecay(t *testing.T) {
	width := int64(250 * time.Millisecond)
	for failing := 1; failing <= 45; failing++ {
		c := newCore(t)
		// 100 successes in bucket 0, then one failure in each of the next `failing` buckets
		for i := 0; i < 100; i++ {
			c.Record(0, Success)
		}
		var now int64
		for b := 1; b <= failing; b++ {
			now = int64(b) * width
			c.Record(now, Failure)
		}
		h := c.history(now)
		wantFailing := min(failing, 40) // bucket 0 ages out once 40 more have opened
		if h.failing != wantFailing {
			t.Fatalf("%d failing buckets: history says %d, want %d", failing, h.failing, wantFailing)
		}
		w := max(1.5-0.01*float64(wantFailing), 1.1)
		raw, _ := c.p.ratio(h)
		want := (float64(h.total) - 5 - w*float64(h.accepts)) / float64(h.total+1)
		if math.Abs(raw-want) > 1e-12 {
			t.Fatalf("%d failing buckets: raw ratio %v, want %v (k = %v)", failing, raw, want, w)
		}
	}
}

// TestCleanBucketsRecover: after an outage, 40 buckets of successes bring the ratio to 0, and
// the working run scales it down on the way.
func TestCleanBucketsRecover(t *testing.T) {
	c := newCore(t)
	width := int64(250 * time.Millisecond)
	for i := 0; i < 200; i++ {
		c.Record(0, Failure)
	}
	prev := c.Ratio(0)
	if prev < 0.9 {
		t.Fatalf("ratio after 200 failures = %v, want > 0.9", prev)
	}
	for b := int64(1); b <= 40; b++ {
		now := b * width
		c.Record(now, Success)
		r := c.Ratio(now)
		if r > prev {
			t.Fatalf("bucket %d: ratio rose from %v to %v on successes", b, prev, r)
		}
		if b == 39 && r == 0 {
			t.Fatalf("bucket 39: ratio already 0 with the outage bucket still inside")
		}
		prev = r
	}
	if r := c.Ratio(40 * width); r != 0 {
		t.Fatalf("after 40 clean buckets ratio = %v, want 0", r)
	}
}

// TestProbe: while refusing everything (draw 0), exactly one call passes once a second has gone
// by since the last call let through.
func TestProbe(t *testing.T) {
	c := newCore(t)
	for i := 0; i < 100; i++ {
		c.Record(0, Failure)
	}
	if c.Allow(0, 0) {
		t.Fatal("the first call after 100 failures passed with a draw of 0: no call was let through yet, so no probe")
	}
	if !c.Allow(0, 0.9999) { // a high draw passes: now the probe is armed, last pass at 0
		t.Fatal("a draw over the ratio was refused")
	}
	passes := 0
	for now := int64(0); now <= 2500*ms; now += 10 * ms {
		if c.Allow(now, 0) {
			passes++
			if now != 1010*ms && now != 2020*ms {
				t.Fatalf("a probe passed at %dms, want 1010ms and 2020ms", now/ms)
			}
		}
	}
	if passes != 2 {
		t.Fatalf("%d probes in 2.5 s, want 2", passes)
	}
}

// TestRefusalsKeepRatioUp: refusals count in total, so a breaker that refuses does not read back
// as idle.
func TestRefusalsKeepRatioUp(t *testing.T) {
	c := newCore(t)
	for i := 0; i < 20; i++ {
		c.Record(0, Failure)
	}
	before := c.Ratio(ms)
	for i := 0; i < 50; i++ {
		c.Allow(ms, 0)
	}
	if after := c.Ratio(ms); after <= before {
		t.Fatalf("ratio after 50 refusals %v, want over %v", after, before)
	}
}

// TestRunsIgnoreQuietBuckets: a bucket with neither successes nor failures (empty, or refusals
// only) neither extends nor breaks a run; the current partial bucket counts.
func TestRunsIgnoreQuietBuckets(t *testing.T) {
	c := newCore(t)
	width := int64(250 * time.Millisecond)
	c.Record(0, Success)
	c.Record(width, Failure)
	c.Record(2*width, Drop)    // refusals only
	c.Record(4*width, Failure) // bucket 3 empty
	c.Record(5*width, Failure) // current
	if h := c.history(5 * width); h.failing != 3 || h.working != 0 {
		t.Fatalf("failing %d working %d, want 3 and 0", h.failing, h.working)
	}
	c.Record(6*width, Success)
	c.Record(8*width, Success)
	if h := c.history(8 * width); h.failing != 0 || h.working != 2 {
		t.Fatalf("failing %d working %d, want 0 and 2", h.failing, h.working)
	}
}

func TestBadInput(t *testing.T) {
	c := newCore(t)
	for i := 0; i < 50; i++ {
		c.Record(sec, Failure)
	}
	for _, roll := range []float64{math.NaN(), -3, math.Inf(-1)} {
		if c.Allow(sec, roll) { // held to 0: under any positive ratio
			t.Fatalf("roll %v passed", roll)
		}
	}
	for _, roll := range []float64{1, 42, math.Inf(1)} {
		if !c.Allow(sec, roll) { // held under 1: over any ratio, which is < 1
			t.Fatalf("roll %v refused", roll)
		}
	}
	// the clock going backwards writes into the newest bucket and reads as of it
	c.Record(0, Success)
	if r := c.Ratio(0); math.IsNaN(r) || r < 0 || r >= 1 {
		t.Fatalf("ratio %v after a clock step backwards", r)
	}
	c.Record(sec, Outcome(99)) // an unknown outcome is ignored
}

func TestPolicyErrors(t *testing.T) {
	for _, c := range []struct {
		field string
		edit  func(*Policy)
	}{
		{"Policy.K", func(p *Policy) { p.K = 1.0 }},
		{"Policy.K", func(p *Policy) { p.K = math.NaN() }},
		{"Policy.KFloor", func(p *Policy) { p.KFloor = 0 }},
		{"Policy.Protection", func(p *Policy) { p.Protection = -1 }},
		{"Policy.ProbeAfter", func(p *Policy) { p.ProbeAfter = -time.Second }},
		{"Policy.Buckets", func(p *Policy) { p.Buckets = 0 }},
		{"Policy.Window", func(p *Policy) { p.Window = 10 }},
		{"Policy.Tolerance", func(p *Policy) { p.Tolerance = 1 }},
		{"Policy.Tolerance", func(p *Policy) { p.Tolerance = -0.1 }},
		{"Policy.Tolerance", func(p *Policy) { p.Tolerance = math.NaN() }},
		{"Policy.Trip", func(p *Policy) { p.Trip = -1 }},
	} {
		p := DefaultPolicy()
		c.edit(&p)
		_, err := NewCore(p, 0)
		_, err2 := New(WithPolicy(p))
		for _, e := range []error{err, err2} {
			if !errors.Is(e, ErrInvalid) || !strings.Contains(e.Error(), c.field) {
				t.Errorf("want an error naming %s, got %v", c.field, e)
			}
		}
	}
	if _, err := New(WithRefresh(-1)); !errors.Is(err, ErrInvalid) {
		t.Errorf("WithRefresh(-1): %v", err)
	}
	if _, err := New(WithClock(nil)); !errors.Is(err, ErrInvalid) {
		t.Errorf("WithClock(nil): %v", err)
	}
}

// offered runs a loop over now: 100 calls a second, each failing when fails(now, i) says so.
// It returns the first instant at or after from when the ratio reads 0 (or -1), and the number of
// refusals.
func offered(c *Core, seconds int, fails func(now int64, i int) bool, from int64) (zeroAt int64, refused int) {
	zeroAt = -1
	roll := uint64(12345)
	for i := 0; i < seconds*100; i++ {
		now := int64(i) * 10 * ms
		roll = roll*6364136223846793005 + 1442695040888963407
		r := float64(roll>>11) / (1 << 53)
		if c.Allow(now, r) {
			if fails(now, i) {
				c.Record(now+5*ms, Failure)
			} else {
				c.Record(now+5*ms, Success)
			}
		} else {
			refused++
		}
		if zeroAt < 0 && now >= from && c.Ratio(now+5*ms) == 0 {
			zeroAt = now
		}
	}
	return zeroAt, refused
}

// TestRecoveryRun: a backend failing every call for 30 s, then healthy; 100 calls a second. The
// ratio is back to 0 within 11 s of the recovery (go-zero#4101 reports its breaker staying open
// for minutes).
func TestRecoveryRun(t *testing.T) {
	c := newCore(t)
	recovery := 30 * sec
	zeroAt, refused := offered(c, 60, func(now int64, _ int) bool { return now < recovery }, recovery)
	if zeroAt < 0 || zeroAt-recovery > 11*sec {
		t.Fatalf("ratio back to 0 at %v after the recovery, want within 11s", time.Duration(zeroAt-recovery))
	}
	t.Logf("ratio 0 again %v after the recovery; %d calls refused in all", time.Duration(zeroAt-recovery), refused)
}

// TestTwentyPercentNeverThrottled: a backend failing one call in five is never throttled.
func TestTwentyPercentNeverThrottled(t *testing.T) {
	c := newCore(t)
	if _, refused := offered(c, 120, func(_ int64, i int) bool { return i%5 == 0 }, 0); refused != 0 {
		t.Fatalf("%d calls refused at a 20%% failure rate", refused)
	}
}

func TestRecoveryPolicy(t *testing.T) {
	p := RecoveryPolicy()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, r := range []time.Duration{-1, p.Window + 1} {
		q := p
		q.Recovery = r
		if err := q.Validate(); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "Policy.Recovery") {
			t.Errorf("Recovery %v: %v, want an error naming Policy.Recovery", r, err)
		}
	}
	// Recovery 1 s is 4 buckets of 250 ms: the ratio falls by a quarter with each bucket that only
	// succeeded, and is 0 after four.
	if got := p.recovery(); got != 4 {
		t.Fatalf("recovery() = %v buckets, want 4", got)
	}
	for working, want := range []float64{1, 0.75, 0.5, 0.25, 0, 0} {
		_, scaled := p.ratio(history{accepts: 0, total: 105, working: working})
		raw, _ := p.ratio(history{accepts: 0, total: 105})
		if got := scaled / raw; math.Abs(got-want) > 1e-12 {
			t.Errorf("working %d: scale %v, want %v", working, got, want)
		}
	}
}

// TestGoZeroPolicy: the go-zero preset is go-zero's constants, with the trip and the tolerance
// off and the recovery scaling over the whole window.
func TestGoZeroPolicy(t *testing.T) {
	want := Policy{K: 1.5, KFloor: 1.1, Protection: 5, ProbeAfter: time.Second, Buckets: 40, Window: 10 * time.Second}
	if got := GoZeroPolicy(); got != want {
		t.Fatalf("GoZeroPolicy() = %+v, want %+v", got, want)
	}
	want.Recovery = time.Second
	if got := RecoveryPolicy(); got != want {
		t.Fatalf("RecoveryPolicy() = %+v, want %+v", got, want)
	}
}

// trace runs rows of {now, input, want} against a Core: an Allow with a draw, or a Record.
type step struct {
	now   int64
	roll  float64 // Allow with this draw, when o is none
	o     Outcome
	allow bool // Allow's answer wanted
	ratio float64
}

const none = Outcome(255)

func trace(t *testing.T, c *Core, steps []step) {
	t.Helper()
	for i, s := range steps {
		if s.o != none {
			c.Record(s.now, s.o)
		} else if got := c.Allow(s.now, s.roll); got != s.allow {
			t.Fatalf("step %d: Allow(%v, %v) = %v, want %v", i, time.Duration(s.now), s.roll, got, s.allow)
		}
		if got := c.Ratio(s.now); math.Abs(got-s.ratio) > 1e-9 {
			t.Fatalf("step %d at %v: Ratio = %v, want %v", i, time.Duration(s.now), got, s.ratio)
		}
	}
}

// TestTrip: under the default policy, ten failures with no success between them trip the breaker
// (ratio 1, every draw refused, nothing recorded as a Drop); a probe passes 500 ms after the
// first refusal and every 500 ms after while the probes fail; the first success ends the trip and
// takes the run's failures out of the tally, so the ratio is 0 at once.
func TestTrip(t *testing.T) {
	c, _ := NewCore(DefaultPolicy(), 0)
	var steps []step
	for i := int64(0); i < 9; i++ {
		steps = append(steps, step{now: i * ms, o: Failure, ratio: max(float64(i+1-5)/float64(i+2), 0)}) // go-zero's arithmetic until the trip
	}
	steps = append(steps,
		step{now: 9 * ms, o: Failure, ratio: 1},                      // the tenth: tripped
		step{now: 10 * ms, o: none, roll: 0.9999, ratio: 1},          // refused; the probe counts from here
		step{now: 500 * ms, o: none, roll: 0.9999, ratio: 1},         // 490 ms later: refused
		step{now: 511 * ms, o: none, roll: 0, allow: true, ratio: 1}, // the probe
		step{now: 520 * ms, o: Failure, ratio: 1},
		step{now: 1000 * ms, o: none, roll: 0.5, ratio: 1},
		step{now: 1012 * ms, o: none, roll: 0.5, allow: true, ratio: 1}, // the next probe
		step{now: 1020 * ms, o: Success, ratio: 0},                      // the trip ends
		step{now: 1021 * ms, o: none, roll: 0, allow: true, ratio: 0},
	)
	trace(t, c, steps)
	if h := c.history(1021 * ms); h.total != 1 || h.accepts != 1 {
		t.Fatalf("after the trip: total %d accepts %d, want 1 and 1 (no drops, the run's failures out)", h.total, h.accepts)
	}
}

// TestToleranceRecovers: after an outage, a backend failing 2% of calls (one in fifty) brings the
// default policy's ratio to 0 at the first working bucket, where go-zero's numbers wait for
// buckets with no failure at all.
func TestToleranceRecovers(t *testing.T) {
	width := int64(250 * time.Millisecond)
	for _, c := range []struct {
		name string
		p    Policy
		zero bool
	}{{"default", DefaultPolicy(), true}, {"recovery", RecoveryPolicy(), false}} {
		p := c.p
		p.Trip = 0 // the SRE arithmetic alone
		core, _ := NewCore(p, 0)
		for i := 0; i < 200; i++ {
			core.Record(0, Failure)
		}
		for b := int64(1); b <= 4; b++ { // four buckets of 25 calls, one failing in each
			for i := 0; i < 25; i++ {
				o := Success
				if i == 12 {
					o = Failure
				}
				core.Record(b*width, o)
			}
		}
		if r := core.Ratio(4 * width); (r == 0) != c.zero {
			t.Errorf("%s: ratio %v after four buckets failing 4%%, want zero: %v", c.name, r, c.zero)
		}
	}
}
