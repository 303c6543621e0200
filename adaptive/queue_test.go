package adaptive

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wardgo/ward/internal/contract"
)

var _ interface {
	Do(context.Context, func(context.Context) error) error
	Now() int64
} = (*Queue)(nil)

var _ interface {
	Pass()
	Fail()
	Ignore()
} = (*Slot)(nil)

func newQueue(t testing.TB, limit int, opts ...QueueOption) *Queue {
	t.Helper()
	l, err := New(mustFixed(limit))
	if err != nil {
		t.Fatal(err)
	}
	q, err := NewQueue(l, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// waitFor yields until cond holds (goroutines registering in the line); no sleeping.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; !cond(); i++ {
		if i > 10_000_000 {
			t.Fatalf("never: %s", what)
		}
		runtime.Gosched()
	}
}

// TestQueueOrder: with one slot held and three callers lined up, each freed slot goes to the
// oldest waiter (FIFO) or the newest (LIFO).
func TestQueueOrder(t *testing.T) {
	for _, c := range []struct {
		order Order
		want  [3]int
	}{{FIFO, [3]int{0, 1, 2}}, {LIFO, [3]int{2, 1, 0}}} {
		q := newQueue(t, 1, WithOrder(c.order), WithMaxWait(time.Hour))
		held, ok := q.TryAcquire()
		if !ok {
			t.Fatal("the first slot was refused")
		}
		served := make(chan int, 3)
		slots := make(chan Slot, 3)
		for i := 0; i < 3; i++ {
			go func() {
				s, err := q.Acquire(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				served <- i
				slots <- s
			}()
			waitFor(t, "waiter registers", func() bool { return q.Waiting() == i+1 })
		}
		for k := 0; k < 3; k++ {
			held.Pass()
			if got := <-served; got != c.want[k] {
				t.Fatalf("order %d: served %d-th: waiter %d, want %d", c.order, k, got, c.want[k])
			}
			held = <-slots
		}
		held.Ignore()
		if q.Waiting() != 0 || q.l.InFlight() != 0 {
			t.Fatalf("waiting %d, in flight %d after all settled", q.Waiting(), q.l.InFlight())
		}
	}
}

// TestQueueRefusals: a full line refuses with ErrQueueFull; a wait that runs out refuses with
// ErrLimitExceeded; a canceled caller gets its context's error; each leaves the line empty and
// matches ward's refusal sentinel where it is a refusal.
func TestQueueRefusals(t *testing.T) {
	q := newQueue(t, 1, WithQueueSize(1), WithMaxWait(time.Hour))
	held, _ := q.TryAcquire()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error)
	go func() { _, err := q.Acquire(ctx); errc <- err }()
	waitFor(t, "waiter registers", func() bool { return q.Waiting() == 1 })
	if _, err := q.Acquire(context.Background()); !errors.Is(err, ErrQueueFull) || !errors.Is(err, contract.ErrRefused) {
		t.Fatalf("Acquire on a full line = %v, want ErrQueueFull matching ErrRefused", err)
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled waiter got %v, want context.Canceled", err)
	}
	if _, err := q.Acquire(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire with a done ctx = %v, want context.Canceled", err)
	}
	short := newQueue(t, 1, WithMaxWait(time.Nanosecond))
	h2, _ := short.TryAcquire()
	if _, err := short.Acquire(context.Background()); !errors.Is(err, ErrLimitExceeded) || !errors.Is(err, contract.ErrRefused) {
		t.Fatalf("Acquire past MaxWait = %v, want ErrLimitExceeded", err)
	}
	if err := short.Do(context.Background(), func(context.Context) error { return nil }); !errors.Is(err, ErrLimitExceeded) {
		t.Fatalf("Do past MaxWait = %v, want ErrLimitExceeded", err)
	}
	h2.Pass()
	held.Pass()
	if q.Waiting() != 0 || short.Waiting() != 0 || q.l.InFlight() != 0 {
		t.Fatal("a refused waiter stayed in line")
	}
}

// TestQueueConfig: every option is validated and names itself.
func TestQueueConfig(t *testing.T) {
	l, _ := New(mustFixed(1))
	for _, c := range []struct {
		field string
		opt   QueueOption
	}{{"WithQueueSize", WithQueueSize(0)}, {"WithMaxWait", WithMaxWait(0)}, {"WithOrder", WithOrder(7)}, {"option 0", nil}} {
		if _, err := NewQueue(l, c.opt); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.field) {
			t.Errorf("NewQueue with a bad %s = %v", c.field, err)
		}
	}
	if _, err := NewQueue(nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("NewQueue(nil) = %v", err)
	}
}

// TestQueueTimesFromAdmission: a call that waited a second in line and then ran 10 ms is a
// 10 ms sample: waiting never reaches the rule.
func TestQueueTimesFromAdmission(t *testing.T) {
	clk := &manual{}
	rule := &recorder{limit: 1}
	l, err := New(rule, WithClock(clk.read), WithSampleEvery(1), WithWindow(Window{Duration: 1, MinSamples: 1}))
	if err != nil {
		t.Fatal(err)
	}
	q, _ := NewQueue(l, WithMaxWait(time.Hour))
	held, _ := q.TryAcquire()
	got := make(chan Slot)
	go func() { s, _ := q.Acquire(context.Background()); got <- s }()
	waitFor(t, "waiter registers", func() bool { return q.Waiting() == 1 })
	clk.advance(5 * ms)
	held.Pass() // 5 ms; the waiter is handed its slot now
	s := <-got
	clk.advance(10 * ms)
	s.Pass()
	if len(rule.got) != 2 || rule.got[0].RTT != 5*ms || rule.got[1].RTT != 10*ms {
		t.Fatalf("samples %+v, want RTTs 5ms then 10ms (the 5 ms in line not counted)", rule.got)
	}
}

// TestQueueStress: 1,000 goroutines through a line of 256 in front of a limit of 8, a third of
// them canceled at random moments: in flight never exceeds the limit, every caller is admitted or
// told why (canceled, line full, wait run out), and the line, the limiter and the goroutines all
// return to rest.
func TestQueueStress(t *testing.T) {
	const limit, callers = 8, 1000
	before := runtime.NumGoroutine()
	q := newQueue(t, limit, WithQueueSize(256), WithMaxWait(20*time.Millisecond), WithOrder(LIFO))
	var flying, peak atomic.Int64
	var admitted, full, waited, canceled, other atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < callers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(i), 5))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if r.IntN(3) == 0 {
				spins := r.IntN(50) // drawn here: r belongs to this goroutine
				go func() {
					for k := spins; k > 0; k-- {
						runtime.Gosched()
					}
					cancel()
				}()
			}
			<-start
			err := q.Do(ctx, func(context.Context) error {
				n := flying.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				for k := r.IntN(20); k > 0; k-- {
					runtime.Gosched()
				}
				flying.Add(-1)
				return nil
			})
			switch {
			case err == nil:
				admitted.Add(1)
			case errors.Is(err, ErrQueueFull):
				full.Add(1)
			case errors.Is(err, ErrLimitExceeded):
				waited.Add(1)
			case errors.Is(err, context.Canceled):
				canceled.Add(1)
			default:
				other.Add(1)
			}
		}()
	}
	close(start)
	wg.Wait()
	t.Logf("admitted %d, line full %d, wait ran out %d, canceled %d; peak in flight %d", admitted.Load(), full.Load(), waited.Load(), canceled.Load(), peak.Load())
	if sum := admitted.Load() + full.Load() + waited.Load() + canceled.Load(); sum != callers || other.Load() != 0 {
		t.Fatalf("%d callers accounted for (%d with another error), want %d", sum, other.Load(), callers)
	}
	if peak.Load() > limit {
		t.Fatalf("peak in flight %d over the limit %d", peak.Load(), limit)
	}
	if q.Waiting() != 0 || q.l.InFlight() != 0 {
		t.Fatalf("at rest: waiting %d, in flight %d", q.Waiting(), q.l.InFlight())
	}
	waitFor(t, "goroutines end", func() bool { return runtime.NumGoroutine() <= before })
}

// TestQueueAllocs: the path that does not wait allocates nothing.
func TestQueueAllocs(t *testing.T) {
	q := newQueue(t, 4)
	if n := testing.AllocsPerRun(1000, func() {
		s, _ := q.TryAcquire()
		s.Pass()
		s, _ = q.Acquire(context.Background())
		s.Pass()
	}); n != 0 {
		t.Fatalf("TryAcquire/Acquire+Pass with a free slot: %v allocations, want 0", n)
	}
}

// BenchmarkQueueAcquire: the non-blocking path through a Queue beside the Limiter's own, in one
// run (a free slot each time).
func BenchmarkQueueAcquire(b *testing.B) {
	l, _ := New(mustFixed(1 << 20))
	q, _ := NewQueue(l)
	b.Run("impl=limiter", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				ls, _ := l.Acquire()
				ls.Pass()
			}
		})
	})
	b.Run("impl=queue", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				s, _ := q.TryAcquire()
				s.Pass()
			}
		})
	})
}

// TestQueueWokenByAnyRelease: a waiter with a max wait of an hour is handed the slot within the
// release itself, whoever releases it: a Lease taken from the Limiter directly (Pass, Fail,
// Ignore), a Partition's call, a PermitAdapter's Release; a window that raises the limit serves
// as many waiters as it frees slots; a Queue made before another on the same Limiter is served
// too.
func TestQueueWokenByAnyRelease(t *testing.T) {
	wait := func(q *Queue, n int) chan Slot {
		got := make(chan Slot, n)
		for i := 0; i < n; i++ {
			go func() {
				s, err := q.Acquire(context.Background())
				if err != nil {
					t.Error(err)
				}
				got <- s
			}()
			waitFor(t, "waiter registers", func() bool { return q.Waiting() == i+1 })
		}
		return got
	}
	for _, c := range []struct {
		name    string
		release func(l *Limiter) (hold func())
	}{
		{"Lease.Pass", func(l *Limiter) func() { ls, _ := l.Acquire(); return ls.Pass }},
		{"Lease.Fail", func(l *Limiter) func() { ls, _ := l.Acquire(); return ls.Fail }},
		{"Lease.Ignore", func(l *Limiter) func() { ls, _ := l.Acquire(); return ls.Ignore }},
		{"PartitionLease.Pass", func(l *Limiter) func() {
			ps, err := NewPartitions(l, Share{"live", 0.5}, Share{"batch", 0.5})
			if err != nil {
				t.Fatal(err)
			}
			pl, _ := ps.Partition("batch").Acquire()
			return pl.Pass
		}},
		{"PermitAdapter.Release", func(l *Limiter) func() {
			p := l.AsPermit()
			p.Acquire(0)
			return func() { p.Release(0) }
		}},
	} {
		for _, older := range []bool{false, true} {
			l, _ := New(mustFixed(1))
			q, _ := NewQueue(l, WithMaxWait(time.Hour))
			if older {
				NewQueue(l) // a second Queue, attached after q, with nobody waiting
			}
			release := c.release(l)
			if l.InFlight() != 1 {
				t.Fatalf("%s: in flight %d before the release, want 1", c.name, l.InFlight())
			}
			got := wait(q, 1)
			release()
			if q.Waiting() != 0 {
				t.Fatalf("%s (another Queue attached after: %v): the waiter still waits after the release", c.name, older)
			}
			s := <-got
			if l.InFlight() != 1 {
				t.Fatalf("%s: in flight %d with the waiter admitted, want 1", c.name, l.InFlight())
			}
			s.Pass()
		}
	}

	// A window that raises the limit from 1 to 3: the settle that closes it frees one slot and the
	// raise two more, so all three waiters are served by that one settle.
	clk := &manual{}
	rule := &recorder{limit: 1}
	l, _ := New(rule, WithClock(clk.read), WithSampleEvery(1), WithWindow(Window{Duration: 1, MinSamples: 1}))
	q, _ := NewQueue(l, WithMaxWait(time.Hour))
	held, _ := l.Acquire()
	got := wait(q, 3)
	rule.limit = 3
	clk.advance(ms)
	held.Pass()
	if q.Waiting() != 0 || l.Limit() != 3 {
		t.Fatalf("after a window raising the limit to %d: %d still wait, want 0", l.Limit(), q.Waiting())
	}
	for i := 0; i < 3; i++ {
		s := <-got
		s.Ignore()
	}
	if l.InFlight() != 0 {
		t.Fatalf("in flight %d at rest", l.InFlight())
	}
}

// cycling is a rule whose limit runs 2, 3, …, 8, 2, … one window after another.
type cycling struct{ n int }

func (r *cycling) Limit() int    { return 2 + r.n%7 }
func (r *cycling) Sample(Sample) { r.n++ }

// TestQueueStressMixed: 50 goroutines share one Limiter, whose limit moves between 2 and 8 every
// few calls. 20 make 3 calls each on the Limiter directly and 20 through two Partitions, trying
// again at once when refused and holding each slot until a caller waits or 50 yields have
// passed; 10 make calls through a Queue, waiting up to an hour, until all the others are done.
// The slots the others free must reach the waiters: every waiter is admitted (a lost wake-up
// leaves one waiting with nothing in flight), never more than 8 calls are in flight, and
// everything returns to rest.
func TestQueueStressMixed(t *testing.T) {
	const direct, waiters, rounds, most = 40, 10, 3, 8
	goroutines := runtime.NumGoroutine()
	var tick atomic.Int64
	l, err := New(&cycling{}, WithClock(func() int64 { return tick.Add(1) }), WithSampleEvery(1),
		WithWindow(Window{Duration: 50, MinSamples: 3}))
	if err != nil {
		t.Fatal(err)
	}
	q, _ := NewQueue(l, WithQueueSize(waiters), WithMaxWait(time.Hour))
	ps, _ := NewPartitions(l, Share{"live", 0.7}, Share{"batch", 0.3})
	parts := [2]*Partition{ps.Partition("live"), ps.Partition("batch")}
	var flying, peak, others, queued, othersDone, done atomic.Int64
	var mixed atomic.Int64 // direct or partitioned settles that found callers waiting
	work := func(r *rand.Rand) {
		n := flying.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		for k := r.IntN(20); k > 0; k-- {
			runtime.Gosched()
		}
		flying.Add(-1)
	}
	start := make(chan struct{})
	for i := 0; i < waiters; i++ {
		go func() {
			defer done.Add(1)
			r := rand.New(rand.NewPCG(uint64(i), 18))
			<-start
			for othersDone.Load() < direct {
				if err := q.Do(context.Background(), func(context.Context) error { work(r); return nil }); err != nil {
					t.Errorf("a waiter got %v", err)
					return
				}
				queued.Add(1)
				runtime.Gosched()
			}
		}()
	}
	for i := 0; i < direct; i++ {
		go func() {
			defer done.Add(1)
			defer othersDone.Add(1)
			r := rand.New(rand.NewPCG(uint64(i), 19))
			<-start
			for got := 0; got < rounds; runtime.Gosched() {
				var settle [3]func()
				ok := false
				if i%2 == 0 {
					var ls Lease
					ls, ok = l.Acquire()
					settle = [3]func(){ls.Pass, ls.Fail, ls.Ignore}
				} else {
					var pl PartitionLease
					pl, ok = parts[r.IntN(2)].Acquire()
					settle = [3]func(){pl.Pass, pl.Fail, pl.Ignore}
				}
				if !ok {
					continue
				}
				work(r)
				for k := 0; k < 50 && q.Waiting() == 0; k++ {
					runtime.Gosched() // hold the slot a while for a waiter to line up behind it
				}
				if q.Waiting() > 0 {
					mixed.Add(1)
				}
				settle[r.IntN(3)]()
				others.Add(1)
				got++
			}
		}()
	}
	close(start)
	for i := 0; done.Load() != direct+waiters; i++ {
		if i > 50_000_000 {
			t.Fatalf("%d of %d callers done: %d wait with %d in flight (limit %d): a lost wake-up",
				done.Load(), direct+waiters, q.Waiting(), l.InFlight(), l.Limit())
		}
		runtime.Gosched()
	}
	t.Logf("%d direct or partitioned calls (%d settled with callers waiting), %d queued; %d windows; peak in flight %d",
		others.Load(), mixed.Load(), queued.Load(), l.Snapshot().Windows, peak.Load())
	if others.Load() != rounds*direct || queued.Load() < waiters {
		t.Fatalf("%d direct or partitioned calls, want %d; %d queued", others.Load(), rounds*direct, queued.Load())
	}
	if mixed.Load() == 0 {
		t.Fatal("no direct or partitioned call settled while callers waited: nothing was mixed")
	}
	if peak.Load() > most {
		t.Fatalf("peak in flight %d over the highest limit %d", peak.Load(), most)
	}
	if q.Waiting() != 0 || l.InFlight() != 0 || parts[0].InFlight() != 0 || parts[1].InFlight() != 0 {
		t.Fatalf("at rest: waiting %d, in flight %d", q.Waiting(), l.InFlight())
	}
	waitFor(t, "goroutines end", func() bool { return runtime.NumGoroutine() <= goroutines })
}
