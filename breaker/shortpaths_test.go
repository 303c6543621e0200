package breaker

import (
	"errors"
	"math"
	"testing"
	"time"
)

// throttled returns a GoZeroPolicy breaker on the default draw source, on the clock *now, whose
// cached ratio is positive and under 1: 60 successes and 140 failures at instant 0, then a
// refresh at 100 ms (past the 62.5 ms interval), frozen there while the clock stays.
func throttled(t *testing.T, now *int64) *Breaker {
	t.Helper()
	b, err := New(WithPolicy(GoZeroPolicy()), WithClock(func() int64 { return *now }))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200; i++ {
		p, err := b.Allow()
		if err != nil {
			t.Fatalf("call %d refused while the ratio was still 0", i)
		}
		if i < 60 {
			p.Pass()
		} else {
			p.Fail()
		}
	}
	*now = int64(100 * time.Millisecond) // past the refresh interval: the next settle refreshes
	p, _ := b.Allow()
	p.Fail()
	return b
}

// TestShortPathWords: Allow's short-path words say what the full path would do until the next
// refresh: open while healthy, thr while throttling on the default source; no thr with an
// injected draw (which must be drawn on every call the ratio decides), neither with
// WithRefresh(0) (which reads the clock on every call) or on a Nop breaker.
func TestShortPathWords(t *testing.T) {
	now := int64(0)
	b := throttled(t, &now)
	if b.open.Load() != math.MinInt64 || b.thr.Load() != b.next.Load() {
		t.Fatalf("throttling: open %d, thr %d, want MinInt64 and the next refresh %d", b.open.Load(), b.thr.Load(), b.next.Load())
	}
	if s := math.Float64frombits(b.scaled.Load()); !(s > 0 && s < 1) {
		t.Fatalf("scaled ratio %v, want in (0, 1)", s)
	}
	h, _ := New(WithClock(func() int64 { return now }))
	p, _ := h.Allow()
	p.Pass()
	if h.open.Load() != h.next.Load() || h.thr.Load() != math.MinInt64 {
		t.Fatalf("healthy: open %d, thr %d, want the next refresh %d and MinInt64", h.open.Load(), h.thr.Load(), h.next.Load())
	}
	for name, o := range map[string]Option{"WithRand": WithRand(func() float64 { return 0.5 }), "WithRefresh(0)": WithRefresh(0)} {
		for _, p := range []Policy{DefaultPolicy(), GoZeroPolicy()} {
			x, _ := New(WithPolicy(p), WithClock(func() int64 { return now }), o)
			for i := 0; i < 300; i++ {
				now += int64(time.Millisecond)
				if p, err := x.Allow(); err == nil {
					p.Fail()
				}
				// an injected draw is drawn on every call the ratio decides, none while healthy
				if x.thr.Load() != math.MinInt64 || (x.every == 0 && x.open.Load() != math.MinInt64) {
					t.Fatalf("%s: call %d: open %d, thr %d", name, i, x.open.Load(), x.thr.Load())
				}
			}
		}
	}
	if n := Nop(); n.open.Load() != math.MinInt64 || n.thr.Load() != math.MinInt64 {
		t.Fatal("Nop: a short path is open")
	}
}

// TestThrottleDefaultSource: throttling on the default source (the P's own generator, drawn in
// the pin that counts the refusal and writes its Drop), at a frozen instant so the cached ratio
// stays: every refusal is counted once in Counts and once as a Drop in the window, the admitted
// share is 1 − ratio within ten standard deviations, and the calls allocate nothing.
func TestThrottleDefaultSource(t *testing.T) {
	now := int64(0)
	b := throttled(t, &now)
	ratio := math.Float64frombits(b.scaled.Load())
	before, drops := b.Counts(), b.Snapshot().Drops
	const calls = 20000
	refused := 0
	for i := 0; i < calls; i++ {
		p, err := b.Allow()
		switch {
		case errors.Is(err, ErrUnavailable):
			refused++
		case err != nil:
			t.Fatal(err)
		default:
			p.Ignore() // a settle would refresh nothing (the clock is frozen) but move the counts
		}
	}
	after := b.Counts()
	if got := after.Refused - before.Refused; got != uint64(refused) {
		t.Fatalf("Counts.Refused moved by %d, want the %d refusals", got, refused)
	}
	if got := b.Snapshot().Drops - drops; got != int64(refused) {
		t.Fatalf("the window's Drops moved by %d, want the %d refusals", got, refused)
	}
	if got := after.Ignored - before.Ignored; got != uint64(calls-refused) || after.Admitted != after.Passed+after.Failed+after.Ignored {
		t.Fatalf("counts %+v after %d admitted calls ignored", after, calls-refused)
	}
	share, sd := float64(refused)/calls, math.Sqrt(ratio*(1-ratio)/calls)
	if math.Abs(share-ratio) > 10*sd {
		t.Fatalf("refused %v of the calls at ratio %v (sd %v)", share, ratio, sd)
	}
	if n := testing.AllocsPerRun(1000, func() {
		if p, err := b.Allow(); err == nil {
			p.Ignore()
		}
	}); n != 0 {
		t.Fatalf("a throttled call allocates %v", n)
	}
}

// TestThrottleOwnClock: on ward's own clock (read in the refusal's pin when the paced count asks
// for it), a throttled breaker's refusals are each counted once and written once as a Drop,
// whether the read found time standing still (the Drop in the same pin) or moved (decided again).
// The ratio is refreshed every nanosecond, so as soon as a millisecond has passed; the calls go on
// until 2000 refusals (at most ten million calls).
func TestThrottleOwnClock(t *testing.T) {
	b, err := New(WithPolicy(GoZeroPolicy()), WithRefresh(time.Nanosecond))
	if err != nil {
		t.Fatal(err)
	}
	refused := 0
	for i := 0; i < 10_000_000 && refused < 2000; i++ {
		p, err := b.Allow()
		if err != nil {
			refused++
			continue
		}
		if i%4 == 0 {
			p.Pass()
		} else {
			p.Fail()
		}
	}
	if refused == 0 {
		t.Fatal("nothing refused: the throttle was never reached")
	}
	if got := b.Counts().Refused; got != uint64(refused) {
		t.Fatalf("Counts.Refused = %d, want the %d refusals", got, refused)
	}
	if got := b.Snapshot().Drops; got != int64(refused) {
		t.Fatalf("the window holds %d Drops, want the %d refusals", got, refused)
	}
}

// recovering drives a new breaker on the default source into a ratio positive before the
// recovery scaling and 0 after it, or returns nil if a refresh skipped that state.
func recovering(t *testing.T) *Breaker {
	const ms = int64(time.Millisecond)
	now := int64(0)
	b, err := New(WithClock(func() int64 { return now }))
	if err != nil {
		t.Fatal(err)
	}
	// failing: 7 of every 10 admitted calls fail, every bucket with successes (no trip), until
	// the ratio is well up
	for i := 0; i < 20000 && math.Float64frombits(b.raw.Load()) < 0.3; i++ {
		now += ms
		if pr, err := b.Allow(); err == nil {
			if i%10 < 7 {
				pr.Fail()
			} else {
				pr.Pass()
			}
		}
	}
	// the next bucket: successes only, until a refresh scales the ratio to 0
	now = (now/(250*ms) + 1) * 250 * ms
	for i := 0; i < 2000 && math.Float64frombits(b.scaled.Load()) != 0; i++ {
		now += ms / 10
		if pr, err := b.Allow(); err == nil {
			pr.Pass()
		}
	}
	if raw, scaled := math.Float64frombits(b.raw.Load()), math.Float64frombits(b.scaled.Load()); !(raw > 0) || scaled != 0 {
		return nil
	}
	return b
}

// TestRecoveringDefaultSource: on the default source, a ratio positive before the recovery
// scaling and 0 after it (DefaultPolicy: old failures still in the window, a working bucket at
// its head) admits every call, through the short path's words as through the full path.
func TestRecoveringDefaultSource(t *testing.T) {
	// The default source's draws decide which calls the failing stretch admits, so a breaker may
	// go from a positive ratio straight to a healthy one at a refresh; a fresh breaker is tried
	// until one is caught in the recovering state (each try reaches it about two times in three).
	var b *Breaker
	for try := 0; b == nil; try++ {
		if try == 40 {
			t.Fatal("40 breakers never reached the recovering state (raw > 0, scaled 0)")
		}
		b = recovering(t)
	}
	for i := 0; i < 1000; i++ {
		pr, err := b.Allow()
		if err != nil {
			t.Fatalf("call %d refused at scaled ratio 0", i)
		}
		pr.Ignore()
	}
}

// TestSettleJumpsAcrossTheRange: a settle whose reading lies almost the whole int64 range before
// the latest (a clock that returned MaxInt64 − 10, then MinInt64 + 10) is a jump back, however
// small the distance reads when it wraps: the latest reading and the refresh due are pulled back.
func TestSettleJumpsAcrossTheRange(t *testing.T) {
	now := int64(math.MaxInt64 - 10)
	b, err := New(WithClock(func() int64 { return now }))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := b.Allow()
	p.Pass()
	now = math.MinInt64 + 10
	p, err = b.Allow()
	if err != nil {
		t.Fatal(err)
	}
	p.Pass()
	if b.seen.Load() != now || b.next.Load() > now+b.every {
		t.Fatalf("after the jump: seen %d, next %d, want both pulled back to %d", b.seen.Load(), b.next.Load(), now)
	}
}
