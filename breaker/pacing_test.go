package breaker

import (
	"math"
	"runtime"
	"testing"
	"time"
)

// trippedOnShortPath returns a breaker on the default source, tripped by failures 1 ms apart, with
// Allow's tripped short path set (until), and the clock it reads.
func trippedOnShortPath(t *testing.T) (*Breaker, *int64) {
	t.Helper()
	now := new(int64)
	b, err := New(WithClock(func() int64 { return *now }))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10000 && !(b.seen.Load() < b.until.Load()); i++ {
		*now += int64(time.Millisecond)
		if p, err := b.Allow(); err == nil {
			p.Fail()
		}
	}
	if math.Float64frombits(b.scaled.Load()) < 1 || !(b.seen.Load() < b.until.Load()) {
		t.Fatal("setup: the breaker did not trip onto its short path")
	}
	return b, now
}

// TestTrippedProbeAtLowTraffic: calls 100 ms apart to a tripped breaker whose probes fail. Each
// refusal finds the latest reading moved (the previous one's clock read moved it), so each reads
// the clock, and the probe passes on the first call more than ProbeAfter after the last call let
// through: no call but the few right after the trip is refused past that instant.
func TestTrippedProbeAtLowTraffic(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // one P: the clock reads are paced per P
	b, now := trippedOnShortPath(t)
	late, probes := 0, 0
	for i := 0; i < 200; i++ {
		*now += int64(100 * time.Millisecond)
		due := uint64(*now-b.lastPass.Load()) > b.probeAfter
		p, err := b.Allow()
		if err == nil {
			probes++
			p.Fail()
		} else if due {
			late++
		}
	}
	if probes < 30 || late > 7 {
		t.Fatalf("200 calls 100 ms apart, probe every %v: %d probes passed, %d calls refused when a probe was due (want at most 7, those right after the trip)", DefaultPolicy().ProbeAfter, probes, late)
	}
}

// TestTrippedBurstThenPause: after a flood of refusals at one reading, the clock moves past the
// probe instant and stays there; at most 7 more refusals on the P decide on the instant the flood
// ended with, so the probe passes within 8 calls.
func TestTrippedBurstThenPause(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // one P: the clock reads are paced per P
	for _, burst := range []int{1, 7, 8, 9, 1000, 1001} {
		b, now := trippedOnShortPath(t)
		for i := 0; i < burst; i++ {
			if _, err := b.Allow(); err == nil {
				t.Fatalf("burst %d: call %d at a reading that does not move was let through", burst, i)
			}
		}
		*now += int64(DefaultPolicy().ProbeAfter) + int64(time.Millisecond)
		passed := -1
		for i := 0; i < 8 && passed < 0; i++ {
			if p, err := b.Allow(); err == nil {
				passed = i
				p.Fail()
			}
		}
		if passed < 0 {
			t.Fatalf("burst %d: no probe in the 8 calls after the clock moved past the probe instant", burst)
		}
	}
}
