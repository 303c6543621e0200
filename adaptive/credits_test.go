package adaptive

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wardgo/ward/internal/procs"
)

// TestStressCrossP: 256 goroutines acquire and hand every lease to one of 16 others, which settle
// it, so credits are taken on one P and given back on another, while AIMD moves the limit and
// GOMAXPROCS moves under both. An independent counter of calls between acquire and settle never
// passes the rule's Max, the credits add up to the limit at the end, and a full drain admits
// exactly the final limit.
func TestStressCrossP(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	p := AIMD{Initial: 10, Min: 1, Max: 40, Backoff: 0.5, Timeout: time.Second}
	rule, _ := NewAIMD(p)
	var tick atomic.Int64
	l, _ := New(rule, WithClock(func() int64 { return tick.Add(int64(ms)) }), WithWindow(Window{Duration: ms, MinSamples: 1}), WithSampleEvery(2))
	stop := procs.Flip()
	goroutines, calls := 256, 300
	if testing.Short() {
		calls = 40
	}
	type held struct {
		lease Lease
		i     int
	}
	handoff := make(chan held, 64)
	var inside, peak atomic.Int64
	var acquirers, settlers sync.WaitGroup
	for s := 0; s < 16; s++ {
		settlers.Add(1)
		go func() {
			defer settlers.Done()
			for h := range handoff {
				inside.Add(-1)
				switch h.i % 10 {
				case 0:
					h.lease.Fail()
				case 1:
					h.lease.Ignore()
				default:
					h.lease.Pass()
				}
			}
		}()
	}
	var start sync.WaitGroup
	start.Add(1)
	for g := 0; g < goroutines; g++ {
		acquirers.Add(1)
		go func() {
			defer acquirers.Done()
			start.Wait()
			for i := 0; i < calls; i++ {
				lease, ok := l.Acquire()
				if !ok {
					runtime.Gosched()
					continue
				}
				n := inside.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				if n > int64(p.Max) {
					t.Errorf("%d inside, over the bound %d (limit now %d)", n, p.Max, l.Limit())
				}
				handoff <- held{lease, i}
			}
		}()
	}
	start.Done()
	acquirers.Wait()
	close(handoff)
	settlers.Wait()
	stop()
	if n := l.InFlight(); n != 0 {
		t.Fatalf("InFlight after every lease settled = %d, want 0", n)
	}
	limit := l.Limit()
	var leases []Lease
	for {
		lease, ok := l.Acquire()
		if !ok {
			break
		}
		leases = append(leases, lease)
	}
	if len(leases) != limit {
		t.Fatalf("a drain after the run admitted %d, want the limit %d", len(leases), limit)
	}
	for i := range leases {
		leases[i].Ignore()
	}
	t.Logf("peak inside %d, limit %d, windows %d, refused %d", peak.Load(), limit, l.Snapshot().Windows, l.Snapshot().Refused)
}

// TestCreditsReclaimExactly: credits parked on many Ps (calls acquired on some goroutines and
// settled on others) are reclaimed when the limit drops: while more calls are in flight than the
// new limit, every acquire is refused; each settle pays the debt first; then exactly the new limit
// is admitted. Raising the limit gives the difference back at once.
func TestCreditsReclaimExactly(t *testing.T) {
	l, _ := New(mustFixed(64))
	park := func(n int) { // acquire n on many goroutines, settle them on others: credits scatter over Ps
		var wg sync.WaitGroup
		ch := make(chan Lease, n)
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if lease, ok := l.Acquire(); ok {
					ch <- lease
				}
			}()
		}
		wg.Wait()
		close(ch)
		for lease := range ch {
			wg.Add(1)
			go func() { defer wg.Done(); lease.Pass() }()
		}
		wg.Wait()
	}
	park(64)
	held := acquireAll(l)
	if len(held) != 64 {
		t.Fatalf("drained %d of 64", len(held))
	}
	l.setLimit(10) // 64 in flight, limit 10: a debt of 54
	for i := 0; i < 54; i++ {
		held[i].Pass()
		if _, ok := l.Acquire(); ok {
			t.Fatalf("admitted with %d in flight over a limit of 10", 64-i-1)
		}
	}
	held = held[54:]
	if n := l.InFlight(); n != 10 {
		t.Fatalf("InFlight = %d, want 10", n)
	}
	for i := range held {
		held[i].Pass()
	}
	park(10)
	l.setLimit(7)
	if got := acquireAll(l); len(got) != 7 {
		t.Fatalf("after lowering to 7 with credits parked: drained %d", len(got))
	} else {
		l.setLimit(9)
		if more := acquireAll(l); len(more) != 2 {
			t.Fatalf("after raising 7 → 9: %d more, want 2", len(more))
		}
	}
}

// TestRefusalSeesParkedCredits: once a refusal has found every pool empty, it refuses on loads
// alone; a credit parked afterwards on any P (the caller's own or another's) clears that, so the
// next acquire finds it: one goroutine still gets exactly the credits there are.
func TestRefusalSeesParkedCredits(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	l, _ := New(mustFixed(8))
	var held []Lease
	for {
		lease, ok := l.Acquire()
		if !ok {
			break
		}
		held = append(held, lease)
	}
	if len(held) != 8 || l.dry.Load()&1 == 0 || !l.refusable() {
		t.Fatalf("drained %d of 8, dry %b: want 8 and the refusal's fast path armed", len(held), l.dry.Load())
	}
	for round := 0; round < 3; round++ {
		n := 0
		for row := range l.pools.All() { // settle one call onto every P's pool, as settles on other Ps do
			if n < len(held) {
				held[n].lim = nil
				l.park((*int64)(row), 1)
				n++
			}
		}
		if l.refusable() {
			t.Fatalf("round %d: credits parked on %d Ps, yet a refusal would not look", round, n)
		}
		for i := 0; i < n; i++ {
			lease, ok := l.Acquire()
			if !ok {
				t.Fatalf("round %d: refused with %d credits parked", round, n-i)
			}
			held[i] = lease
		}
		if _, ok := l.Acquire(); ok {
			t.Fatalf("round %d: admitted past the limit", round)
		}
	}
	for i := range held {
		held[i].Pass()
	}
	if got := l.InFlight(); got != 0 {
		t.Fatalf("InFlight = %d after settling all, want 0", got)
	}
}

// TestGate: a settle skips gave on one load while the gate is open; the gate closes while a
// lowered limit's debt is unpaid (so that every settle pays it) and while a Queue is attached
// (so that every settle wakes its waiters), opens again with the debt paid, and follows the
// batch as the limit moves.
func TestGate(t *testing.T) {
	l, _ := New(mustFixed(64))
	open := func() uint64 { return uint64(2*l.batch.Load() - 1) }
	gate := func() uint64 { return uint64(uint32(l.gate.Load())) }
	if gate() != open() || gate() == 0 {
		t.Fatalf("new limiter: gate %d, want %d", gate(), open())
	}
	held := acquireAll(l)
	l.setLimit(10) // 64 in flight: a debt of 54
	for i := 0; i < 54; i++ {
		if gate() != 0 {
			t.Fatalf("debt of %d: gate %d, want closed", 54-i, gate())
		}
		if l.gated(2) != true {
			t.Fatalf("debt of %d: a settle would not pay it", 54-i)
		}
		held[i].Pass()
	}
	if l.central.Load() < 0 || gate() != open() {
		t.Fatalf("debt paid (central %d): gate %d, want %d", l.central.Load(), gate(), open())
	}
	v := l.gate.Load() >> 32
	l.setLimit(1 << 20) // a raise: the batch grows, and the gate with it
	if gate() != open() || l.gate.Load()>>32 == v {
		t.Fatalf("raised: gate %d (version %d → %d), want %d and a new version", gate(), v, l.gate.Load()>>32, open())
	}
	if l.gated(2) || !l.gated(1) || !l.gated(int64(open())+2) {
		t.Fatal("open gate: a settle that neither filled nor overfilled its pool would call gave")
	}
	if _, err := NewQueue(l); err != nil {
		t.Fatal(err)
	}
	for i := 54; i < 64; i++ {
		held[i].Pass()
		if gate() != 0 {
			t.Fatalf("Queue attached: gate %d after a settle, want closed", gate())
		}
	}
	l.setLimit(1 << 21)
	if gate() != 0 {
		t.Fatalf("Queue attached, limit raised: gate %d, want closed", gate())
	}
}

// TestGateUnderMovingLimit: settles on several goroutines while the limit is lowered and raised
// over and over (so the gate closes and opens under them) strand no credit: once they stop, one
// goroutine is admitted exactly the last limit, with nothing in flight before.
func TestGateUnderMovingLimit(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	l, _ := New(mustFixed(64))
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var held []Lease
			for i := 0; ; i++ {
				select {
				case <-stop:
					for j := range held {
						held[j].Ignore() // no sample: no window closes, so setLimit has one caller
					}
					return
				default:
				}
				if lease, ok := l.Acquire(); ok {
					held = append(held, lease)
				}
				if len(held) > i%17 {
					held[0].Ignore()
					held = held[1:]
				}
			}
		}()
	}
	for i := 0; i < 300; i++ {
		l.setLimit(int64(1 + (i*37)%64))
		runtime.Gosched()
	}
	l.setLimit(64)
	for l.InFlight() < 40 { // most of the limit in flight, then lowered under it: a debt to pay
		runtime.Gosched()
	}
	l.setLimit(23)
	close(stop)
	wg.Wait()
	if n := l.InFlight(); n != 0 {
		t.Fatalf("InFlight = %d with every call settled, want 0", n)
	}
	n := 0
	for {
		if _, ok := l.Acquire(); !ok {
			break
		}
		n++
	}
	if n != 23 {
		t.Fatalf("admitted %d after the settles, want the limit 23 (central %d, gate %#x)", n, l.central.Load(), l.gate.Load())
	}
}

// TestGateStaleTune: a settle's tune that read the gate before a change of the state (a limit
// lowered again, a Queue attached) cannot write the gate it computed from the old state, even
// when the change leaves the gate closed as it was: the change raises the gate's version.
func TestGateStaleTune(t *testing.T) {
	l, _ := New(mustFixed(64))
	for {
		if _, ok := l.Acquire(); !ok {
			break
		}
	}
	l.setLimit(10) // a debt: closed
	open := (l.gate.Load()>>32+1)<<32 | 1
	for step, change := range []func(){
		func() { l.setLimit(5) },
		func() { _, _ = NewQueue(l) },
	} {
		g := l.gate.Load() // what a settle's tune read before the change
		if uint32(g) != 0 {
			t.Fatalf("step %d: gate %#x, want closed", step, g)
		}
		change()
		if uint32(l.gate.Load()) != 0 {
			t.Fatalf("step %d: gate %#x after the change, want closed", step, l.gate.Load())
		}
		if l.gate.CompareAndSwap(g, open) {
			t.Fatalf("step %d: a tune that read the gate before the change opened it", step)
		}
	}
}

// TestLoweredLimitAdmitsNoNewCall: the whole limit in flight, then lowered from 64 to 8; the 64
// calls settle on two goroutines while three others keep asking for new calls and hold every
// call they get. A credit given back while the debt is unpaid pays it, and none is taken by a
// new call first: once every old call has settled, no more new calls hold a slot than the new
// limit. (In the builds where a row is picked at random, taking pooled credits during the debt
// admitted most of the 56 the debt was owed.)
func TestLoweredLimitAdmitsNoNewCall(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	for round := 0; round < 8; round++ {
		l, _ := New(mustFixed(64), WithSampleEvery(1024)) // no call timed: no window closes
		old := acquireAll(l)
		l.setLimit(8)
		var stop atomic.Bool
		var admitted atomic.Int64
		var takers, settlers sync.WaitGroup
		for g := 0; g < 3; g++ {
			takers.Add(1)
			go func() {
				defer takers.Done()
				for !stop.Load() {
					if _, ok := l.Acquire(); ok { // held: never settled
						admitted.Add(1)
					}
				}
			}()
		}
		for g := 0; g < 2; g++ {
			settlers.Add(1)
			go func() {
				defer settlers.Done()
				for i := g; i < len(old); i += 2 {
					old[i].Ignore()
				}
			}()
		}
		settlers.Wait()
		stop.Store(true)
		takers.Wait()
		if n := admitted.Load(); n > 8 {
			t.Fatalf("round %d: %d new calls admitted after the limit was lowered to 8 (every old call settled)", round, n)
		}
		if n := l.InFlight(); n != int(admitted.Load()) {
			t.Fatalf("round %d: InFlight %d, want the %d new calls held", round, n, admitted.Load())
		}
	}
}

// acquireAll acquires from l until it refuses and returns the leases it got.
func acquireAll(l *Limiter) []Lease {
	var held []Lease
	for {
		lease, ok := l.Acquire()
		if !ok {
			return held
		}
		held = append(held, lease)
	}
}
