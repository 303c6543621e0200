package breaker

import (
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/wardgo/ward/internal/procs"
	"github.com/wardgo/ward/internal/stripe"
)

// TestLowTrafficRecovers: after a 10 s outage, a healthy backend called once every 10 s for ten
// minutes. The Breaker, with its default cached ratio and coarse clock, must refuse no more than
// the Core does (here none: the outage has left the window by the first call). Its refusals used
// to decide on the last settle's clock reading, which a refusal never moved, so the ratio did not
// decay and the probe did not fire: it refused 8 of the 60 calls.
func TestLowTrafficRecovers(t *testing.T) {
	now := int64(0)
	rollsB := rand.New(rand.NewPCG(1, 2))
	rollsC := rand.New(rand.NewPCG(1, 2))
	b, err := New(WithClock(func() int64 { return now }), WithRand(rollsB.Float64))
	if err != nil {
		t.Fatal(err)
	}
	c, _ := NewCore(DefaultPolicy(), 0)
	// the outage: 100 calls a second for 10 s, every one failing
	for i := 0; i < 1000; i++ {
		now = int64(i) * int64(10*time.Millisecond)
		if p, err := b.Allow(); err == nil {
			p.Fail()
		}
		if c.Allow(now, rollsC.Float64()) {
			c.Record(now, Failure)
		}
	}
	var refusedB, refusedC int
	for i := 1; i <= 60; i++ {
		now = int64(10*time.Second) + int64(i)*int64(10*time.Second)
		if p, err := b.Allow(); err == nil {
			p.Pass()
		} else {
			refusedB++
		}
		if c.Allow(now, rollsC.Float64()) {
			c.Record(now, Success)
		} else {
			refusedC++
		}
	}
	t.Logf("refused: Breaker %d, Core %d", refusedB, refusedC)
	if refusedB > refusedC+1 {
		t.Fatalf("Breaker refused %d of 60 calls 10 s apart to a healthy backend; the Core refused %d", refusedB, refusedC)
	}
}

// TestRefusalCountExactAcrossGOMAXPROCS: every refusal is counted once, while GOMAXPROCS moves,
// on each refusal path: decided in full (an injected draw), tripped on the default source (the
// short path while tripped) and throttled on the default source (go-zero's policy, which never
// trips: the draw, the count and the Drop in one pinned section).
func TestRefusalCountExactAcrossGOMAXPROCS(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for _, c := range []struct {
		name string
		opts []Option
	}{
		{"decided", []Option{WithRand(func() float64 { return 0 })}},
		{"tripped", nil},
		{"throttled", []Option{WithPolicy(GoZeroPolicy())}},
	} {
		t.Run(c.name, func(t *testing.T) {
			runtime.GOMAXPROCS(1)
			var at atomic.Int64 // a clock that moves 100 µs a reading, so the cached ratio refreshes
			tick := func() int64 { return at.Add(int64(100 * time.Microsecond)) }
			b, err := New(append([]Option{WithClock(tick)}, c.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 500; i++ { // fail it until it refuses
				if p, err := b.Allow(); err == nil {
					p.Fail()
				}
			}
			base := b.Snapshot().Refused
			stop := procs.Flip()
			var wg sync.WaitGroup
			var mu sync.Mutex
			refused := int64(0)
			for g := 0; g < 32; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					n := int64(0)
					for i := 0; i < 2000; i++ {
						if p, err := b.Allow(); err != nil {
							n++
						} else {
							p.Fail()
						}
					}
					mu.Lock()
					refused += n
					mu.Unlock()
				}()
			}
			wg.Wait()
			stop()
			if refused == 0 {
				t.Fatal("no call refused: the refusal path was not run")
			}
			if got := b.Snapshot().Refused - base; got != refused {
				t.Fatalf("Refused counted %d, callers saw %d refusals", got, refused)
			}
			if got := int64(b.Counts().Refused) - base; got != refused {
				t.Fatalf("Counts().Refused counted %d, callers saw %d refusals", got, refused)
			}
		})
	}
}

// TestClockJumpsFarAndBack: a Breaker has no …At forms (every instant comes from its clock), so
// the clock itself jumps: to a Unix time (years past ward's monotonic origin) and back. Whether
// the backend fails or works in each stretch, the Breaker neither wedges shut (refusing a healthy
// backend forever because it decides at the far-future instant) nor wedges open (never refusing a
// failing backend because its ratio stopped refreshing). Before the rule that pulls a reading more
// than a window ahead back to the clock, the first refused every call after the jump back and the
// second admitted every failing call.
func TestClockJumpsFarAndBack(t *testing.T) {
	const ms = int64(time.Millisecond)
	future := time.Date(2031, 3, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	for _, refresh := range []time.Duration{0, -1} { // exact, and the default cached ratio
		now := int64(0)
		rolls := rand.New(rand.NewPCG(3, 4))
		opts := []Option{WithClock(func() int64 { return now }), WithRand(rolls.Float64)}
		if refresh >= 0 {
			opts = append(opts, WithRefresh(refresh))
		}
		b, err := New(opts...)
		if err != nil {
			t.Fatal(err)
		}
		// run calls 10 ms apart from start; fails says whether the backend fails; it returns the
		// share refused
		run := func(start int64, calls int, fails bool) float64 {
			refused := 0
			for i := 0; i < calls; i++ {
				now = start + int64(i)*10*ms
				p, err := b.Allow()
				switch {
				case err != nil:
					refused++
				case fails:
					p.Fail()
				default:
					p.Pass()
				}
			}
			return float64(refused) / float64(calls)
		}
		check := func(what string, got, lo, hi float64) {
			t.Helper()
			if got < lo || got > hi {
				t.Fatalf("refresh %v: %s: refused %.2f of calls, want within [%.2f, %.2f]", refresh, what, got, lo, hi)
			}
		}
		check("outage at the origin", run(0, 500, true), 0.5, 0.99)
		check("outage at the far-future instant", run(future, 500, true), 0.5, 0.99)
		// back at the origin's clock, healthy: the far-future readings must not hold it shut
		run(6000*ms, 100, false) // one second to find its feet
		check("healthy after the jump back", run(7000*ms, 500, false), 0, 0.02)
		// and failing again once the healthy stretch has aged out: its ratio must move as at the
		// origin, not stay where the far future left it
		check("outage after the jump back", run(30000*ms, 500, true), 0.5, 0.99)
		// forward again and back to a healthy backend, with nothing settled in between
		check("outage far ahead again", run(future+int64(time.Hour), 200, true), 0.5, 0.99)
		run(40000*ms, 100, false)
		check("healthy after the second jump back", run(41000*ms, 500, false), 0, 0.02)
	}
}

// TestLayout: the words every Allow reads start one cache line in, each group of fields fills
// whole lines, and so does the Breaker; the pads are sized from unsafe.Sizeof, so this holds on
// 32-bit targets too (make test-arm64 runs it under GOARCH=arm).
func TestLayout(t *testing.T) {
	line := uintptr(stripe.CacheLine)
	var b Breaker
	if off := unsafe.Offsetof(b.breakerHot); off != line {
		t.Errorf("breakerHot at offset %d, want %d", off, line)
	}
	for name, off := range map[string]uintptr{
		"breakerProbe": unsafe.Offsetof(b.breakerProbe),
		"breakerCold":  unsafe.Offsetof(b.breakerCold),
		"sizeof":       unsafe.Sizeof(b),
	} {
		if off%line != 0 {
			t.Errorf("%s = %d, not a whole number of %d-byte lines", name, off, line)
		}
	}
}

// TestTrippedShortPath: a Breaker on the default source (which draws nothing while tripped, so
// Allow takes its short path) and one with WithRand (which draws on every refusal, so it never
// does) make the same decisions at the same instants, the probe passing at the same calls, and
// count the same. The policy refuses only while tripped (a protection no window reaches), so the
// draw never decides and the two must agree call for call. Calls come at uneven steps, now and then
// backwards, and a probe sometimes succeeds, ending the trip until the failures trip it again.
// One P, so both count their refusals in the same row and read the clock at the same calls.
func TestTrippedShortPath(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // one P: the clock reads are paced per P
	const ms = int64(time.Millisecond)
	p := DefaultPolicy()
	p.Protection, p.Trip = 1e9, 3
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		now := int64(0)
		short, err := New(WithPolicy(p), WithClock(func() int64 { return now }))
		if err != nil {
			t.Fatal(err)
		}
		full, _ := New(WithPolicy(p), WithClock(func() int64 { return now }), WithRand(func() float64 { return 0.5 }))
		probes, held := 0, 0
		for i := 0; i < 20000; i++ {
			if short.seen.Load() < short.until.Load() {
				held++ // this call takes the short path
			}
			switch r := rng.IntN(100); {
			case r < 2:
				now -= rng.Int64N(5 * ms)
			case r < 90:
				now += rng.Int64N(ms / 4)
			default:
				now += rng.Int64N(200 * ms)
			}
			tripped := math.Float64frombits(full.scaled.Load()) >= 1
			ps, errS := short.Allow()
			pf, errF := full.Allow()
			if (errS == nil) != (errF == nil) {
				t.Fatalf("seed %d step %d at %d: short path allowed %v, full path %v", seed, i, now, errS == nil, errF == nil)
			}
			if errS != nil {
				continue
			}
			if tripped {
				probes++
			}
			if rng.IntN(10) == 0 {
				ps.Pass()
				pf.Pass()
			} else {
				ps.Fail()
				pf.Fail()
			}
		}
		if probes == 0 || held == 0 {
			t.Fatalf("seed %d: %d probes passed while tripped, %d calls took the short path", seed, probes, held)
		}
		if cs, cf := short.Counts(), full.Counts(); cs != cf {
			t.Fatalf("seed %d: counts %+v, want %+v", seed, cs, cf)
		}
		t.Logf("seed %d: %d probes, %d calls on the short path, %+v", seed, probes, held, short.Counts())
	}
}

// TestThrottledLowTrafficRecovers: throttling on the default source (go-zero's policy, which
// never trips; its probe off), a backend that failed every call and then went quiet. No call
// settles after the last failure, so the latest reading stays where that failure left it; the
// first refusal after a pause longer than the window reads the clock (the first refusal at a
// reading always does), decides again at the fresh instant, finds the window empty and lets the
// call through, taking its refusal back; the ratio it refreshed there admits every call after
// it. Without that read, each call would be drawn for at the stale reading against the old
// ratio.
func TestThrottledLowTrafficRecovers(t *testing.T) {
	p := GoZeroPolicy()
	p.ProbeAfter = 0
	var now int64
	b, err := New(WithPolicy(p), WithClock(func() int64 { return now }))
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	for i := 0; i < 100000 && failed < 100; i++ { // ends on a failure's settle: no refusal counted at its reading
		now += int64(time.Millisecond)
		if p, err := b.Allow(); err == nil {
			p.Fail()
			failed++
		}
	}
	if r := b.Ratio(); failed < 100 || r < 0.5 {
		t.Fatalf("setup: %d failures, ratio %v; want 100 and over 0.5", failed, r)
	}
	refused := b.Counts().Refused
	now += int64(p.Window) + int64(time.Second)
	for i := 0; i < 50; i++ {
		if _, err := b.Allow(); err != nil {
			t.Fatalf("call %d after a quiet %v: refused (ratio cached at the stale reading)", i, p.Window+time.Second)
		}
	}
	if got := b.Counts().Refused; got != refused {
		t.Fatalf("Counts().Refused = %d after the quiet, want %d (a refusal taken back is not counted)", got, refused)
	}
}
