package breaker

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/wardgo/ward/internal/procs"
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

// TestRefusalCountExactAcrossGOMAXPROCS: every refusal is counted once, while GOMAXPROCS moves.
func TestRefusalCountExactAcrossGOMAXPROCS(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	b, err := New(WithRand(func() float64 { return 0 }))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ { // fail it until it refuses every call (the draw is always 0)
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
	if got := b.Snapshot().Refused - base; got != refused {
		t.Fatalf("Refused counted %d, callers saw %d refusals", got, refused)
	}
}
