package adaptive

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"

	"github.com/wardgo/ward/internal/stripe"
)

// twice builds two rules alike, one for each side of a differential test.
func twice[R Rule](mk func() (R, error)) (Rule, Rule) {
	a, _ := mk()
	b, _ := mk()
	return a, b
}

// rulePair returns two rules of one kind built alike, with small limits so that runs reach them.
func rulePair(kind uint8) (Rule, Rule) {
	switch kind % 6 {
	case 0:
		p := AIMD{Initial: 4, Min: 1, Max: 40, Backoff: 0.9, Timeout: 5 * time.Second}
		return twice(func() (*AIMDRule, error) { return NewAIMD(p) })
	case 1:
		p := DefaultGradient()
		p.Initial, p.Min, p.Max = 4, 1, 40
		return twice(func() (*GradientRule, error) { return NewGradient(p) })
	case 2:
		p := DefaultVegas()
		p.Initial, p.Max = 4, 40
		return twice(func() (*VegasRule, error) { return NewVegas(p, constRoll(0.3)) })
	case 3:
		p := DefaultMinRTT()
		p.Initial, p.Max, p.ProbeEvery = 4, 40, 5
		return twice(func() (*MinRTTRule, error) { return NewMinRTT(p, constRoll(0.7)) })
	case 4:
		p := DefaultKnee()
		p.Initial, p.Max = 4, 40
		return twice(func() (*KneeRule, error) { return NewKnee(p) })
	}
	return mustFixed(3), mustFixed(3)
}

// differ drives a Limiter (one goroutine, injected clock, every call timed) and a Core with the
// same operations, read from ops two bytes at a time, and fails at the first decision, limit or
// snapshot that differs. Operations: acquire; settle the k-th open call with Pass, Fail or
// Ignore; move the clock forward, back, or to an instant of another origin.
func differ(t *testing.T, kind uint8, w Window, start int64, ops []byte) (windows int64) {
	t.Helper()
	inside, model := rulePair(kind)
	clk := &manual{now: start}
	l, err := New(inside, WithClock(clk.read), WithSampleEvery(1), WithWindow(w))
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewCore(model, w, start)
	if err != nil {
		t.Fatal(err)
	}
	var leases []Lease
	var tickets []Ticket
	for i := 0; i+1 < len(ops); i += 2 {
		op, arg := ops[i], int(ops[i+1])
		var what string
		switch op % 8 {
		case 0, 1:
			what = "Acquire"
			lease, ok := l.Acquire()
			ticket, ok2 := c.Acquire(clk.now)
			if ok != ok2 {
				t.Fatalf("op %d: Limiter.Acquire() = %v, Core.Acquire(%d) = %v", i/2, ok, clk.now, ok2)
			}
			if ok {
				leases, tickets = append(leases, lease), append(tickets, ticket)
			}
		case 2, 3, 4:
			if len(leases) == 0 {
				continue
			}
			k := arg % len(leases)
			what = []string{"Pass", "Fail", "Ignore"}[op%8-2]
			switch op % 8 {
			case 2:
				leases[k].Pass()
				tickets[k].Pass(clk.now)
			case 3:
				leases[k].Fail()
				tickets[k].Fail(clk.now)
			case 4:
				leases[k].Ignore()
				tickets[k].Ignore()
			}
			leases, tickets = append(leases[:k], leases[k+1:]...), append(tickets[:k], tickets[k+1:]...)
		case 5, 6:
			what = "advance"
			clk.advance(time.Duration(arg) * 10 * ms)
		case 7:
			what = "jump"
			switch arg % 4 {
			case 0:
				clk.now -= int64(time.Duration(arg) * time.Minute) // back
			case 1:
				clk.now = 1_767_225_600_000_000_000 + int64(arg) // a Unix-nanosecond instant
			case 2:
				clk.now = int64(arg) // near the monotonic origin
			case 3:
				clk.now = math.MaxInt64 - int64(arg)
			}
		}
		if ls, cs := l.Snapshot(), c.Snapshot(); ls != cs {
			t.Fatalf("op %d (%s at %d): Limiter %+v, Core %+v", i/2, what, clk.now, ls, cs)
		}
	}
	return c.Snapshot().Windows
}

// TestLimiterMatchesCore: for every rule, a long random run with windows of 1 s and 10 samples,
// clock jumps included, gives the same decisions and snapshots from both layers.
func TestLimiterMatchesCore(t *testing.T) {
	for kind := uint8(0); kind < 6; kind++ {
		r := rand.New(rand.NewPCG(uint64(kind), 11))
		ops := make([]byte, 40000)
		for i := range ops {
			ops[i] = byte(r.IntN(256))
			if i%2 == 0 && ops[i]%8 == 7 && r.IntN(50) != 0 {
				ops[i] = 5 // jumps are rare, so that windows close between them
			}
		}
		if w := differ(t, kind, DefaultWindow(), 0, ops); w < 20 {
			t.Errorf("rule %d: %d windows closed; the test needs at least 20", kind, w)
		}
	}
}

// FuzzLimiterCore is the random part of the differential test: any rule, window, start and
// sequence of operations.
func FuzzLimiterCore(f *testing.F) {
	f.Add(uint8(0), int64(time.Second), uint8(10), int64(0), []byte{0, 0, 0, 0, 5, 200, 2, 0, 3, 0, 7, 1, 0, 0, 2, 0})
	f.Add(uint8(1), int64(1), uint8(1), int64(-5), []byte{0, 0, 5, 1, 2, 0, 0, 0, 7, 0, 3, 0, 7, 3, 0, 0, 4, 0})
	f.Add(uint8(3), int64(math.MaxInt64), uint8(1), int64(math.MaxInt64/2), []byte{0, 0, 7, 2, 2, 0})
	f.Add(uint8(4), int64(time.Millisecond), uint8(2), int64(0), []byte{0, 0, 0, 0, 0, 0, 0, 0, 5, 1, 2, 0, 2, 0, 3, 0, 2, 0, 0, 0, 0, 0, 5, 9, 2, 0, 2, 0})
	f.Fuzz(func(t *testing.T, kind uint8, d int64, minSamples uint8, start int64, ops []byte) {
		w := Window{Duration: time.Duration(d), MinSamples: int(minSamples)}
		if w.Validate() != nil {
			return
		}
		differ(t, kind, w, start, ops)
	})
}

// TestCoreTrace: windows over explicit instants, as a table: a window closes once its time has
// run and it holds MinSamples; a short one is extended, keeping its samples; a clock that jumps
// back is read as the window's time having run.
func TestCoreTrace(t *testing.T) {
	rec := &recorder{limit: 2}
	c, err := NewCore(rec, Window{Duration: time.Second, MinSamples: 2}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var open []Ticket
	for i, s := range []struct {
		op      string // "acquire", "pass", "fail", "ignore" (settle the oldest open ticket)
		now     time.Duration
		ok      bool // acquire's answer
		windows int  // samples fed to the rule so far
	}{
		{"acquire", 0, true, 0},
		{"acquire", 0, true, 0},
		{"acquire", 0, false, 0}, // at the limit
		{"pass", 100 * ms, true, 0},
		{"fail", 1100 * ms, true, 1}, // due at 1 s with 2 samples, MinSamples: closes
		{"acquire", 1100 * ms, true, 1},
		{"pass", 2200 * ms, true, 1}, // due at 2.1 s with 1 sample: extended to 3.2 s
		{"acquire", 2200 * ms, true, 1},
		{"ignore", 2300 * ms, true, 1}, // no sample
		{"acquire", 2300 * ms, true, 1},
		{"pass", 2400 * ms, true, 1}, // 2 samples, but the window now ends at 3.2 s
		{"acquire", -time.Hour, true, 1},
		{"pass", -time.Hour, true, 2}, // the clock jumped back an hour: due, and 3 samples
		{"acquire", -time.Hour + 500*ms, true, 2},
		{"pass", -time.Hour + 500*ms, true, 2}, // the new window ends 1 s after the jump
	} {
		now := int64(s.now)
		switch s.op {
		case "acquire":
			tk, ok := c.Acquire(now)
			if ok != s.ok {
				t.Fatalf("step %d: Acquire(%v) = %v, want %v", i, s.now, ok, s.ok)
			}
			if ok {
				open = append(open, tk)
			}
		case "pass":
			open[0].Pass(now)
			open = open[1:]
		case "fail":
			open[0].Fail(now)
			open = open[1:]
		case "ignore":
			open[0].Ignore()
			open = open[1:]
		}
		if len(rec.got) != s.windows {
			t.Fatalf("step %d: %s at %v: %d windows closed, want %d (%v)", i, s.op, s.now, len(rec.got), s.windows, rec.got)
		}
	}
	want := []Sample{
		{RTT: 600 * ms, InFlight: 2, Dropped: true},    // (100 + 1100) / 2
		{RTT: (1100*ms + 100*ms + 0) / 3, InFlight: 1}, // 1.1 s, 0.1 s, and 0 for a start after now
	}
	if rec.got[0] != want[0] || rec.got[1] != want[1] {
		t.Fatalf("samples %v, want %v", rec.got, want)
	}
}

// TestMixedOrigins: a Core or a Limiter given instants of two origins (a monotonic clock near 0
// and Unix nanoseconds) is neither wedged (windows keep closing and the limit keeps moving) nor
// opened wide (never more in flight than the limit, which stays within the rule's bounds).
func TestMixedOrigins(t *testing.T) {
	const unix = int64(1_767_225_600_000_000_000)
	for _, origins := range [][2]int64{{0, unix}, {unix, 0}} {
		p := DefaultAIMD()
		p.Initial, p.Min, p.Max = 10, 1, 20
		rule, _ := NewAIMD(p)
		c, _ := NewCore(rule, DefaultWindow(), origins[0])
		clk := &manual{now: origins[0]}
		rule2, _ := NewAIMD(p)
		l, _ := New(rule2, WithClock(clk.read), WithSampleEvery(1))
		for phase, base := range []int64{origins[0], origins[1], origins[0]} {
			before := c.Snapshot().Windows
			lBefore := l.Snapshot().Windows
			clk.now = base
			for i := 0; i < 200; i++ {
				now := base + int64(i)*int64(100*ms)
				clk.now = now
				var tickets []Ticket
				var leases []Lease
				for {
					tk, ok := c.Acquire(now)
					ls, ok2 := l.Acquire()
					if !ok || !ok2 {
						break
					}
					tickets, leases = append(tickets, tk), append(leases, ls)
				}
				if c.InFlight() > c.Limit() || l.InFlight() > l.Limit() || c.Limit() > p.Max || l.Limit() > p.Max {
					t.Fatalf("phase %d: in flight %d / %d over limits %d / %d", phase, c.InFlight(), l.InFlight(), c.Limit(), l.Limit())
				}
				for k := range tickets {
					tickets[k].Pass(now + int64(ms))
					leases[k].Pass()
				}
			}
			if c.Snapshot().Windows-before < 10 || l.Snapshot().Windows-lBefore < 10 {
				t.Fatalf("origins %v, phase %d: only %d / %d windows closed in 20 s: wedged", origins, phase,
					c.Snapshot().Windows-before, l.Snapshot().Windows-lBefore)
			}
		}
	}
}

// TestLayout: the central credits sit alone on the line after one line of padding, the shared
// limit and window end on the next, and the Limiter is a whole number of lines, on every target
// (GOARCH=arm included).
func TestLayout(t *testing.T) {
	line := uintptr(stripe.CacheLine)
	var l Limiter
	if off := unsafe.Offsetof(l.credits); off != line {
		t.Errorf("Limiter.credits at offset %d, want %d", off, line)
	}
	if off := unsafe.Offsetof(l.limiterShared); off != 2*line {
		t.Errorf("Limiter.limiterShared at offset %d, want %d", off, 2*line)
	}
	if off := unsafe.Offsetof(l.limiterCold); off%line != 0 {
		t.Errorf("Limiter.limiterCold at offset %d, not on a line boundary", off)
	}
	if size := unsafe.Sizeof(l); size%line != 0 {
		t.Errorf("sizeof(Limiter) = %d, not a whole number of %d-byte lines", size, line)
	}
}
