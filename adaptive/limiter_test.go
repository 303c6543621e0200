package adaptive

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/wardgo/ward/internal/contract"
)

// manual is an injected clock.
type manual struct{ now int64 }

func (m *manual) read() int64             { return m.now }
func (m *manual) advance(d time.Duration) { m.now += int64(d) }

func TestAcquireRefusesAtLimit(t *testing.T) {
	l, err := New(mustFixed(2))
	if err != nil {
		t.Fatal(err)
	}
	a, ok1 := l.Acquire()
	b, ok2 := l.Acquire()
	_, ok3 := l.Acquire()
	if !ok1 || !ok2 || ok3 {
		t.Fatalf("Acquire ×3 at mustFixed(2) = %v %v %v, want true true false", ok1, ok2, ok3)
	}
	a.Pass()
	a.Pass() // settling the same lease twice is a no-op
	a.Fail()
	a.Ignore()
	if l.InFlight() != 1 {
		t.Fatalf("InFlight after one lease settled (four times) = %d, want 1", l.InFlight())
	}
	b.Ignore()
	var zero Lease
	zero.Pass() // the zero lease is settled already
	if s := l.Snapshot(); s.InFlight != 0 || s.Refused != 1 || s.Limit != 2 || s.Min != 2 || s.Max != 2 {
		t.Fatalf("Snapshot = %+v", s)
	}
}

// TestNewErrors: every bad option, a nil option and a nil rule are errors matching ErrInvalid
// (and ward's shared one) that name what was wrong.
func TestNewErrors(t *testing.T) {
	for field, opts := range map[string][]Option{
		"WithClock":          {WithClock(nil)},
		"Window.Duration":    {WithWindow(Window{Duration: 0, MinSamples: 10})},
		"Window.MinSamples":  {WithWindow(Window{Duration: time.Second, MinSamples: 0})},
		"WithSampleEvery":    {WithSampleEvery(3)},
		"WithOwnError":       {WithOwnError(nil)},
		"WithFailure":        {WithFailure(nil)},
		"option 1":           {WithSampleEvery(1), nil},
		"option 0":           {nil},
		"Window.Duration = ": {WithWindow(Window{Duration: -1, MinSamples: 1})},
	} {
		_, err := New(mustFixed(1), opts...)
		if !errors.Is(err, ErrInvalid) || !errors.Is(err, contract.ErrInvalid) || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: err = %v, want ErrInvalid naming %s", field, err, field)
		}
	}
	if _, err := New(nil); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "rule") {
		t.Errorf("nil rule: err = %v", err)
	}
	if _, err := NewCore(nil, DefaultWindow(), 0); !errors.Is(err, ErrInvalid) {
		t.Errorf("NewCore(nil rule): err = %v", err)
	}
	if _, err := NewCore(mustFixed(1), Window{Duration: time.Second}, 0); !errors.Is(err, ErrInvalid) ||
		!strings.Contains(err.Error(), "Window.MinSamples") {
		t.Errorf("NewCore(MinSamples 0): err = %v", err)
	}
}

// TestNow: Now reads the limiter's clock, the one its leases are timed on.
func TestNow(t *testing.T) {
	clk := &manual{now: 12345}
	l, err := New(mustFixed(1), WithClock(clk.read))
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Now(); got != 12345 {
		t.Fatalf("Now() = %d, want the injected clock's 12345", got)
	}
	clk.advance(ms)
	if got := l.Now(); got != 12345+int64(ms) {
		t.Fatalf("Now() = %d after 1ms, want %d", got, 12345+int64(ms))
	}
	d, _ := New(mustFixed(1))
	if a, b := d.Now(), d.Now(); b < a {
		t.Fatalf("the default clock went back: %d then %d", a, b)
	}
}

// TestWindowing checks the Limiter's windows: at least the duration and at least the minimum of
// samples; a short window is extended and keeps its samples; one Sample per window, with the
// average rtt, the largest in-flight count and the drop flag.
func TestWindowing(t *testing.T) {
	clk := &manual{}
	rec := &recorder{limit: 10}
	l, _ := New(rec, WithClock(clk.read), WithSampleEvery(1))
	call := func(rtt time.Duration, drop bool) {
		lease, ok := l.Acquire()
		if !ok {
			t.Fatal("refused under the limit")
		}
		clk.advance(rtt)
		if drop {
			lease.Fail()
		} else {
			lease.Pass()
		}
	}
	for i := 0; i < 5; i++ {
		call(100*ms, false) // 5 samples over 500 ms
	}
	if len(rec.got) != 0 {
		t.Fatalf("a window closed before 1 s: %v", rec.got)
	}
	for i := 0; i < 4; i++ {
		call(200*ms, i == 2) // 9 samples at 1300 ms: over the time, short of samples: extended to 2300
	}
	if len(rec.got) != 0 {
		t.Fatalf("a window of 9 samples closed: %v", rec.got)
	}
	call(100*ms, false) // 10 samples at 1400 ms, but the window now ends at 2300
	if len(rec.got) != 0 {
		t.Fatalf("an extended window closed early: %v", rec.got)
	}
	call(900*ms, false) // 2300 ms: closes with 11 samples
	want := Sample{RTT: (5*100 + 4*200 + 100 + 900) * ms / 11, InFlight: 1, Dropped: true}
	if len(rec.got) != 1 || rec.got[0] != want {
		t.Fatalf("windows = %v, want [%v]", rec.got, want)
	}
	if s := l.Snapshot(); s.Windows != 1 || s.Latency != want.RTT {
		t.Fatalf("Snapshot = %+v", s)
	}
	// The next window holds only its own calls: no drop, its own average and in-flight maximum.
	held, _ := l.Acquire()
	for i := 0; i < 10; i++ {
		call(90*ms, false) // 10 samples, 2 in flight each: 3200 ms
	}
	held.Pass()         // held 900 ms
	call(100*ms, false) // 3300 ms: due, 12 samples
	want = Sample{RTT: (10*90 + 900 + 100) * ms / 12, InFlight: 2}
	if len(rec.got) != 2 || rec.got[1] != want {
		t.Fatalf("windows = %v, want a second %v", rec.got, want)
	}
}

// TestWindowTotalsWrap: a window is the growth of totals that only grow; the response times'
// total wraps past the largest int64 after long enough, and the window's sum survives it.
func TestWindowTotalsWrap(t *testing.T) {
	clk := &manual{}
	rec := &recorder{limit: 10}
	l, _ := New(rec, WithClock(clk.read), WithSampleEvery(1), WithWindow(Window{Duration: time.Second, MinSamples: 4}))
	for row := range l.pools.All() {
		*(*int64)(unsafe.Add(row, wLatency*8)) = math.MaxInt64 - 5
		l.closed.rtt += math.MaxInt64 - 5 // wraps with as many rows as there are
	}
	for i := 0; i < 4; i++ {
		lease, _ := l.Acquire()
		clk.advance(300 * ms)
		lease.Pass()
	}
	if want := (Sample{RTT: 300 * ms, InFlight: 1}); len(rec.got) != 1 || rec.got[0] != want {
		t.Fatalf("windows = %v, want [%v]", rec.got, want)
	}
}

// recorder is a Rule that keeps what it was fed.
type recorder struct {
	limit int
	got   []Sample
}

func (r *recorder) Limit() int      { return r.limit }
func (r *recorder) Sample(s Sample) { r.got = append(r.got, s) }

// TestLimiterMatchesRule drives a limiter single-threaded with random calls and feeds a second
// copy of the rule the window aggregates computed here independently: the limit trajectories are
// equal.
func TestLimiterMatchesRule(t *testing.T) {
	minRTT := DefaultMinRTT()
	minRTT.ProbeEvery = 20
	aimd := DefaultAIMD()
	aimd.Min = 1
	rules := map[string]func() (Rule, Rule){
		"AIMD": func() (Rule, Rule) { return twice(func() (*AIMDRule, error) { return NewAIMD(aimd) }) },
		"Gradient": func() (Rule, Rule) {
			return twice(func() (*GradientRule, error) { return NewGradient(DefaultGradient()) })
		},
		"Vegas": func() (Rule, Rule) {
			return twice(func() (*VegasRule, error) { return NewVegas(DefaultVegas(), constRoll(0.3)) })
		},
		"MinRTT": func() (Rule, Rule) {
			return twice(func() (*MinRTTRule, error) { return NewMinRTT(minRTT, constRoll(0.7)) })
		},
	}
	for name, mk := range rules {
		t.Run(name, func(t *testing.T) {
			inside, model := mk()
			clk := &manual{}
			l, _ := New(inside, WithClock(clk.read), WithSampleEvery(1), WithWindow(Window{Duration: time.Second, MinSamples: 10}))
			r := rand.New(rand.NewPCG(7, 9))
			var open []Lease
			var sum, n, peak int64
			var dropped bool
			end := int64(time.Second)
			windows := 0
			for i := 0; i < 20000; i++ {
				clk.advance(time.Duration(r.Int64N(int64(30 * ms))))
				if len(open) < 200 && r.IntN(2) == 0 {
					if lease, ok := l.Acquire(); ok {
						open = append(open, lease)
					}
					continue
				}
				if len(open) == 0 {
					continue
				}
				k := r.IntN(len(open))
				lease := open[k]
				open = append(open[:k], open[k+1:]...)
				rtt, inflight := clk.now-lease.start, lease.probe>>1
				switch r.IntN(20) {
				case 0:
					lease.Ignore()
					continue
				case 1:
					lease.Fail()
					dropped = true
				default:
					lease.Pass()
				}
				sum += rtt
				n++
				peak = max(peak, inflight)
				if clk.now >= end {
					end = clk.now + int64(time.Second)
					if n >= 10 {
						model.Sample(Sample{RTT: time.Duration(sum / n), InFlight: int(peak), Dropped: dropped})
						sum, n, peak, dropped = 0, 0, 0, false
						windows++
					}
				}
				if got, want := l.Limit(), max(model.Limit(), 1); got != want {
					t.Fatalf("call %d, window %d: limiter limit %d, rule fed the same windows %d", i, windows, got, want)
				}
			}
			if windows < 50 || l.Snapshot().Windows != int64(windows) {
				t.Fatalf("%d windows closed (limiter says %d); the test needs at least 50", windows, l.Snapshot().Windows)
			}
		})
	}
}

// TestSampledTiming: with the default sampling, one admitted call in DefaultSampleEvery is timed
// (per P), and untimed drops still mark the window.
func TestSampledTiming(t *testing.T) {
	// One P, so the per-P tick that picks the timed calls is one counter: a goroutine moving
	// between Ps would otherwise change which calls are timed.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	clk := &manual{}
	rec := &recorder{limit: 1000}
	l, _ := New(rec, WithClock(clk.read), WithWindow(Window{Duration: time.Second, MinSamples: 1}))
	reads := 0
	l.clock = func() int64 { reads++; return clk.now }
	for i := 0; i < 8*DefaultSampleEvery; i++ {
		lease, _ := l.Acquire()
		clk.advance(10 * ms)
		lease.Pass()
	}
	// one P: exactly 1 in 8 timed, each timed call two reads
	if reads != 2*8 {
		t.Fatalf("%d clock reads for %d calls, want %d", reads, 8*DefaultSampleEvery, 2*8)
	}
	lease, _ := l.Acquire() // untimed (the 65th call)
	lease.Fail()
	clk.advance(time.Second)
	for i := 0; i < DefaultSampleEvery; i++ {
		lease, _ := l.Acquire()
		lease.Pass()
	}
	if n := len(rec.got); n == 0 || !rec.got[n-1].Dropped {
		t.Fatalf("the untimed drop did not mark the window: %v", rec.got)
	}
}

func TestAllocs(t *testing.T) {
	l, _ := New(mustFixed(1), WithSampleEvery(1))
	if a := testing.AllocsPerRun(1000, func() {
		lease, _ := l.Acquire()
		lease.Pass()
	}); a != 0 {
		t.Fatalf("Acquire+Pass allocates %v", a)
	}
	hold, _ := l.Acquire()
	if a := testing.AllocsPerRun(1000, func() {
		if _, ok := l.Acquire(); ok {
			t.Fatal("admitted over the limit")
		}
	}); a != 0 {
		t.Fatalf("a refusal allocates %v", a)
	}
	hold.Pass()
	ctx := context.Background()
	fn := func(context.Context) error { return nil }
	if a := testing.AllocsPerRun(1000, func() { _ = l.Do(ctx, fn) }); a != 0 {
		t.Fatalf("Do allocates %v", a)
	}
}

// TestDo walks ward's one classification through Do: which errors are samples (Pass, Fail) and
// which only free the slot (Ignore), with fn's error returned unchanged and a nested call over
// the limit refused without running.
func TestDo(t *testing.T) {
	errOverload := errors.New("overloaded")
	errNotFound := errors.New("not found")
	errOther := errors.New("something else")
	cancelled := context.Context(nil) // a context fn cancels as it returns: the caller gave up
	live := context.Background()
	type row struct {
		name    string
		ctx     context.Context
		err     error
		outcome string // "pass", "fail" or "ignore"
	}
	rows := []row{
		{"nil", live, nil, "pass"},
		{"the caller's cancel", cancelled, context.Canceled, "ignore"},
		{"the caller's cancel, wrapped", cancelled, fmt.Errorf("read: %w", context.Canceled), "ignore"},
		{"a cancel of fn's own making", live, context.Canceled, "ignore"}, // any other error
		{"deadline", live, context.DeadlineExceeded, "fail"},
		{"deadline, wrapped", live, fmt.Errorf("dial: %w", context.DeadlineExceeded), "fail"},
		{"WithFailure's", live, errOverload, "fail"},
		{"WithOwnError's", live, errNotFound, "pass"}, // the backend answered: a sample
		{"WithOwnError's and WithFailure's", live, errors.Join(errNotFound, errOverload), "fail"},
		{"other", live, errOther, "ignore"},
	}
	for _, r := range rows {
		clk := &manual{}
		rec := &recorder{limit: 1}
		l, err := New(rec, WithClock(clk.read), WithSampleEvery(1), WithWindow(Window{Duration: 1, MinSamples: 1}),
			WithFailure(func(err error) bool { return errors.Is(err, errOverload) }),
			WithOwnError(func(err error) bool { return errors.Is(err, errNotFound) }))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := r.ctx, context.CancelFunc(func() {})
		if ctx == cancelled {
			ctx, cancel = context.WithCancel(live)
		}
		got := l.Do(ctx, func(ctx context.Context) error {
			if inner := l.Do(ctx, func(context.Context) error { t.Error("ran over the limit"); return nil }); inner != ErrLimitExceeded {
				t.Errorf("%s: a nested call over a limit of 1 returned %v, want ErrLimitExceeded", r.name, inner)
			}
			clk.advance(ms)
			cancel()
			return r.err
		})
		cancel()
		if got != r.err {
			t.Errorf("%s: Do returned %v, want fn's %v unchanged", r.name, got, r.err)
		}
		outcome := "ignore"
		if len(rec.got) == 1 {
			outcome = map[bool]string{false: "pass", true: "fail"}[rec.got[0].Dropped]
			if rec.got[0].RTT != ms {
				t.Errorf("%s: sample %+v, want RTT 1ms", r.name, rec.got[0])
			}
		}
		if outcome != r.outcome || len(rec.got) > 1 || l.InFlight() != 0 {
			t.Errorf("%s: settled as %s (samples %v, in flight %d), want %s", r.name, outcome, rec.got, l.InFlight(), r.outcome)
		}
	}
}

// TestDoPanic: a panicking fn settles as a Fail (a sample marked dropped, the slot freed) and the
// panic continues.
func TestDoPanic(t *testing.T) {
	rec := &recorder{limit: 1}
	l, _ := New(rec, WithClock(func() int64 { return 5 }), WithSampleEvery(1), WithWindow(Window{Duration: 1, MinSamples: 1}))
	l.end.Store(0) // due at once
	func() {
		defer func() {
			if recover() != "boom" {
				t.Fatal("the panic did not continue")
			}
		}()
		_ = l.Do(context.Background(), func(context.Context) error { panic("boom") })
	}()
	if l.InFlight() != 0 {
		t.Fatalf("a panicking fn left %d in flight", l.InFlight())
	}
	if len(rec.got) != 1 || !rec.got[0].Dropped {
		t.Fatalf("a panicking fn gave samples %v, want one marked dropped", rec.got)
	}
}

// TestDoubleSettle: every pair of verbs on one variable settles it once; the zero Lease and the
// zero Ticket are settled already.
func TestDoubleSettle(t *testing.T) {
	verbs := map[string]func(*Lease){"Pass": (*Lease).Pass, "Fail": (*Lease).Fail, "Ignore": (*Lease).Ignore}
	for first, f := range verbs {
		for second, g := range verbs {
			rec := &recorder{limit: 2}
			l, _ := New(rec, WithClock(func() int64 { return 0 }), WithSampleEvery(1), WithWindow(Window{Duration: 1 << 40, MinSamples: 1}))
			held, _ := l.Acquire()
			lease, _ := l.Acquire()
			f(&lease)
			g(&lease)
			if l.InFlight() != 1 {
				t.Errorf("%s then %s: InFlight = %d, want 1 (the other lease)", first, second, l.InFlight())
			}
			if w, _ := l.window(); (first == "Ignore" && w[fTimed] != 0) || (first != "Ignore" && w[fTimed] != 1) {
				t.Errorf("%s then %s: %d timed samples", first, second, w[fTimed])
			}
			held.Ignore()
		}
	}
	var zero Lease
	zero.Pass()
	zero.Fail()
	zero.Ignore()
	c, _ := NewCore(mustFixed(1), DefaultWindow(), 0)
	ticket, _ := c.Acquire(0)
	ticket.Pass(1)
	ticket.Fail(2)
	ticket.Ignore()
	var zt Ticket
	zt.Pass(0)
	zt.Fail(0)
	zt.Ignore()
	if c.InFlight() != 0 || c.sums[fTimed] != 1 {
		t.Fatalf("Core after one ticket settled three times: InFlight %d, timed %d; want 0, 1", c.InFlight(), c.sums[fTimed])
	}
}

// TestStressFixed: 256 goroutines against mustFixed(8); an independent counter inside the admitted
// section never passes 8, and nothing is left in flight.
func TestStressFixed(t *testing.T) {
	stress(t, mustFixed(8), 8)
}

// TestStressMoving: the same with AIMD moving the limit under the goroutines' feet (every tenth
// call drops); the counter never passes the rule's Max.
func TestStressMoving(t *testing.T) {
	p := AIMD{Initial: 10, Min: 1, Max: 40, Backoff: 0.5, Timeout: time.Second}
	r, _ := NewAIMD(p)
	stress(t, r, int64(p.Max))
}

func stress(t *testing.T, rule Rule, bound int64) {
	var tick atomic.Int64
	l, _ := New(rule, WithClock(func() int64 { return tick.Add(int64(ms)) }), WithWindow(Window{Duration: ms, MinSamples: 1}), WithSampleEvery(2))
	goroutines, calls := 256, 400
	if testing.Short() {
		calls = 50
	}
	var inside, peak atomic.Int64
	var start, done sync.WaitGroup
	start.Add(1)
	for g := 0; g < goroutines; g++ {
		done.Add(1)
		go func() {
			defer done.Done()
			start.Wait()
			for i := 0; i < calls; i++ {
				lease, ok := l.Acquire()
				if !ok {
					continue
				}
				n := inside.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				if lim := int64(l.Limit()); n > bound {
					t.Errorf("%d inside, over the bound %d (limit now %d)", n, bound, lim)
				}
				runtime.Gosched() // let others in while this one holds its slot
				inside.Add(-1)
				switch i % 10 {
				case 0:
					lease.Fail()
				case 1:
					lease.Ignore()
				default:
					lease.Pass()
				}
			}
		}()
	}
	start.Done()
	done.Wait()
	if l.InFlight() != 0 {
		t.Fatalf("InFlight after every lease settled = %d, want 0", l.InFlight())
	}
	t.Logf("peak inside %d, limit %d, windows %d, refused %d", peak.Load(), l.Limit(), l.Snapshot().Windows, l.Snapshot().Refused)
}

func TestAsPermit(t *testing.T) {
	l, _ := New(mustFixed(2))
	p := l.AsPermit()
	first, second, third := p.Acquire(0), p.Acquire(0), p.Acquire(0)
	if !first || !second || third {
		t.Fatal("the permit does not hold mustFixed(2)")
	}
	p.Release(0)
	p.Release(0)
	p.Release(0) // one too many: nothing goes negative
	if l.InFlight() != 0 {
		t.Fatalf("InFlight = %d", l.InFlight())
	}
}
