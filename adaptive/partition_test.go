package adaptive

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/wardgo/ward/internal/stripe"
)

var _ interface {
	Pass()
	Fail()
	Ignore()
} = (*PartitionLease)(nil)

func newParts(t testing.TB, limit int, shares ...Share) *Partitions {
	t.Helper()
	l, err := New(mustFixed(limit))
	if err != nil {
		t.Fatal(err)
	}
	ps, err := NewPartitions(l, shares...)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// TestPartitionsTrace: live 70% and batch 30% of 10: batch borrows what live leaves idle; a live
// call refused within its guarantee makes live hungry, and the slots borrowers free go to live
// until it reaches its guarantee.
func TestPartitionsTrace(t *testing.T) {
	ps := newParts(t, 10, Share{"live", 0.7}, Share{"batch", 0.3})
	live, batch := ps.Partition("live"), ps.Partition("batch")
	if live.Guarantee() != 7 || batch.Guarantee() != 3 || ps.Partition("none") != nil {
		t.Fatalf("guarantees %d, %d", live.Guarantee(), batch.Guarantee())
	}
	var held []PartitionLease
	take := func(p *Partition, n int, want bool) {
		t.Helper()
		for i := 0; i < n; i++ {
			pl, ok := p.Acquire()
			if ok != want {
				t.Fatalf("%s Acquire #%d (in flight %d, live %d, batch %d) = %v, want %v", p.Name(), i, ps.l.InFlight(), live.InFlight(), batch.InFlight(), ok, want)
			}
			if ok {
				held = append(held, pl)
			}
		}
	}
	take(batch, 8, true)  // 3 of its own, 5 borrowed from idle live
	take(live, 2, true)   // the limit is reached
	take(live, 1, false)  // within its guarantee: live turns hungry
	held[0].Pass()        // a batch call settles
	take(batch, 1, false) // batch, beyond its guarantee, may not borrow while live is hungry
	take(live, 1, true)   // the slot goes to live (3 of 7: still hungry)
	for i := 1; i < 5; i++ {
		held[i].Pass()
		take(batch, 1, false)
		take(live, 1, true)
	}
	if live.InFlight() != 7 || batch.InFlight() != 3 {
		t.Fatalf("live %d, batch %d; want 7, 3", live.InFlight(), batch.InFlight())
	}
	held[5].Pass()
	take(batch, 1, true) // live reached its guarantee: no longer hungry
	for i := range held {
		held[i].Ignore()
	}
	if ps.l.InFlight() != 0 || live.InFlight() != 0 || batch.InFlight() != 0 {
		t.Fatalf("at rest: %d in flight", ps.l.InFlight())
	}
}

func TestPartitionsConfig(t *testing.T) {
	l, _ := New(mustFixed(10))
	for _, c := range []struct {
		field  string
		shares []Share
	}{
		{"shares", nil},
		{"shares[1].Name", []Share{{"a", 0.5}, {"a", 0.1}}},
		{"shares[0].Name", []Share{{"", 0.5}}},
		{"shares[0].Fraction", []Share{{"a", 0}}},
		{"shares[0].Fraction", []Share{{"a", 1.5}}},
		{"shares", []Share{{"a", 0.7}, {"b", 0.4}}},
	} {
		if _, err := NewPartitions(l, c.shares...); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.field) {
			t.Errorf("NewPartitions(%v) = %v, want an error naming %s", c.shares, err, c.field)
		}
	}
	if _, err := NewPartitions(nil, Share{"a", 1}); !errors.Is(err, ErrInvalid) {
		t.Errorf("NewPartitions(nil) = %v", err)
	}
}

// TestPartitionsStress: 256 goroutines over three partitions of a limit of 32: the calls in
// flight of all partitions never exceed the limit, every count returns to zero, and a partition
// running fewer goroutines than its guarantee keeps getting its calls through while borrowers
// hammer the rest.
func TestPartitionsStress(t *testing.T) {
	const limit = 32
	ps := newParts(t, limit, Share{"live", 0.5}, Share{"batch", 0.3}, Share{"bulk", 0.2})
	live := ps.Partition("live") // guaranteed 16, run by 8 goroutines: never refused
	var flying, peak, liveRefused, done atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	rounds := 2000
	if testing.Short() {
		rounds = 200
	}
	for g := 0; g < 256; g++ {
		p := ps.parts[1+g%2]
		if g < 8 {
			p = live
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := 0; i < rounds; i++ {
				err := p.Do(context.Background(), func(context.Context) error {
					n := flying.Add(1)
					for q := peak.Load(); n > q && !peak.CompareAndSwap(q, n); q = peak.Load() {
					}
					runtime.Gosched()
					flying.Add(-1)
					return nil
				})
				if err == nil {
					done.Add(1)
					continue
				}
				if p == live {
					liveRefused.Add(1)
				}
				// A refused caller backs off. One that retries without yielding can run all its
				// rounds while the calls holding every slot wait in the global run queue (where
				// runtime.Gosched put them, and which a P polls only every 61st schedule while its
				// own queue has work): with 2 Ps, live was then refused 16000 times with every
				// credit in flight and no call settling, a schedule, not a lost slot.
				runtime.Gosched()
			}
		}()
	}
	close(start)
	wg.Wait()
	t.Logf("peak in flight %d of %d; %d calls ran", peak.Load(), limit, done.Load())
	if peak.Load() > limit {
		t.Fatalf("peak in flight %d over the limit %d", peak.Load(), limit)
	}
	t.Logf("live refused %d of %d", liveRefused.Load(), 8*rounds)
	if liveRefused.Load() >= int64(8*rounds) {
		t.Fatalf("live, within its guarantee, never got a call through")
	}
	for _, p := range ps.parts {
		if p.InFlight() != 0 {
			t.Fatalf("%s: %d in flight at rest", p.Name(), p.InFlight())
		}
	}
	if ps.l.InFlight() != 0 {
		t.Fatalf("limiter: %d in flight at rest", ps.l.InFlight())
	}
	// InFlight clamps at 0; at rest every credit is in the central pool or a P's, exactly.
	if c, p := ps.l.central.Load(), ps.l.sumOf(wPool); c+p != limit {
		t.Fatalf("at rest: central %d + pools %d = %d credits, want %d", c, p, c+p, limit)
	}
}

func TestPartitionsAllocsAndLayout(t *testing.T) {
	ps := newParts(t, 4, Share{"a", 0.5}, Share{"b", 0.5})
	a := ps.Partition("a")
	if n := testing.AllocsPerRun(1000, func() { pl, _ := a.Acquire(); pl.Pass() }); n != 0 {
		t.Fatalf("Acquire+Pass: %v allocations, want 0", n)
	}
	if off := unsafe.Offsetof(Partition{}.hungry); off != stripe.CacheLine {
		t.Fatalf("Partition.hungry at %d, want %d (a line of its own)", off, stripe.CacheLine)
	}
	if off, end := unsafe.Offsetof(Partitions{}.hungry), unsafe.Offsetof(Partitions{}.l); off != stripe.CacheLine || end != 2*stripe.CacheLine {
		t.Fatalf("Partitions.hungry at %d, next field at %d; want %d and %d (a line of its own)", off, end, stripe.CacheLine, 2*stripe.CacheLine)
	}
}

// BenchmarkPartitionAcquire: a call through a Partition beside the Limiter's own, in one run:
// admitted and settled with Pass (a free slot each time), and refused (the limit full). Both
// sides make the call through a func value, which costs them alike.
func BenchmarkPartitionAcquire(b *testing.B) {
	for _, op := range []string{"acquire", "refuse"} {
		limit := 1 << 20
		if op == "refuse" {
			limit = 1
		}
		l, _ := New(mustFixed(limit))
		ps, _ := NewPartitions(l, Share{"live", 0.7}, Share{"batch", 0.3})
		live := ps.Partition("live")
		var hold Lease
		if op == "refuse" {
			hold, _ = l.Acquire()
		}
		for _, impl := range []struct {
			name string
			call func()
		}{
			{"limiter", func() {
				if ls, ok := l.Acquire(); ok {
					ls.Pass()
				}
			}},
			{"partition", func() {
				if pl, ok := live.Acquire(); ok {
					pl.Pass()
				}
			}},
		} {
			b.Run("op="+op+"/impl="+impl.name, func(b *testing.B) {
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						impl.call()
					}
				})
			})
		}
		hold.Pass()
	}
}

// TestHungerEndsWhenIdle: a partition refused within its guarantee is hungry; once its calls in
// flight fall to zero (here an untimed settle: with WithSampleEvery(1024) no call of this test is
// timed) its hunger ends, and another partition may borrow again.
func TestHungerEndsWhenIdle(t *testing.T) {
	l, err := New(mustFixed(10), WithSampleEvery(1024))
	if err != nil {
		t.Fatal(err)
	}
	ps, err := NewPartitions(l, Share{"live", 0.7}, Share{"batch", 0.3})
	if err != nil {
		t.Fatal(err)
	}
	live, batch := ps.Partition("live"), ps.Partition("batch")
	var held []PartitionLease
	for i := 0; i < 10; i++ { // 3 of its own, 7 borrowed from idle live
		pl, ok := batch.Acquire()
		if !ok {
			t.Fatalf("batch Acquire #%d refused under the limit", i)
		}
		held = append(held, pl)
	}
	if _, ok := live.Acquire(); ok {
		t.Fatal("live admitted over the limit")
	}
	held[0].Ignore()
	if _, ok := batch.Acquire(); ok {
		t.Fatal("batch borrowed while live is hungry")
	}
	pl, ok := live.Acquire()
	if !ok {
		t.Fatal("live refused the slot a borrower freed")
	}
	pl.Ignore() // live's calls in flight fall to zero: its hunger ends
	if ps.hungry.Load() != 0 {
		t.Fatal("live still hungry with none of its calls in flight")
	}
	pb, ok := batch.Acquire()
	if !ok {
		t.Fatal("batch may not borrow the idle slot after live's hunger ended")
	}
	pb.Ignore()
	for i := range held {
		held[i].Ignore()
	}
	if l.InFlight() != 0 {
		t.Fatalf("at rest: %d in flight", l.InFlight())
	}
}
