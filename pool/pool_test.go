package pool

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wardgo/ward"
)

// res is a test resource: its id, whether it is lent, and how many times it was closed.
type res struct {
	id     int
	lent   atomic.Int32
	closed atomic.Int32
}

// bench of opens and closes a test pool counts.
type counts struct {
	mu     sync.Mutex
	made   []*res
	live   atomic.Int64
	over   atomic.Bool // more than size live at once
	size   int64
	fail   func() bool // nil: never
	onOpen func(ctx context.Context)
}

func (c *counts) open(ctx context.Context) (*res, error) {
	if c.onOpen != nil {
		c.onOpen(ctx)
	}
	if c.fail != nil && c.fail() {
		return nil, errors.New("dial failed")
	}
	if c.live.Add(1) > c.size {
		c.over.Store(true)
	}
	c.mu.Lock()
	r := &res{id: len(c.made) + 1}
	c.made = append(c.made, r)
	c.mu.Unlock()
	return r, nil
}

func (c *counts) close(r *res) {
	r.closed.Add(1)
	c.live.Add(-1)
}

type fakeClock struct{ now atomic.Int64 }

func (f *fakeClock) Now() int64 { return f.now.Load() }

func newPool(t testing.TB, c *counts, l Limits, opts ...Option) *Pool[*res] {
	t.Helper()
	c.size = int64(l.Size)
	p, err := New(c.open, c.close, l, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestNewValidates(t *testing.T) {
	c := &counts{}
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"open", func() error { _, err := New(nil, c.close, DefaultLimits()); return err }()},
		{"close", func() error { _, err := New(c.open, nil, DefaultLimits()); return err }()},
		{"Limits.Size", func() error { _, err := New(c.open, c.close, Limits{}); return err }()},
		{"option 0", func() error { _, err := New(c.open, c.close, DefaultLimits(), nil); return err }()},
		{"WithClock", func() error { _, err := New(c.open, c.close, DefaultLimits(), WithClock(nil)); return err }()},
		{"WithRand", func() error { _, err := New(c.open, c.close, DefaultLimits(), WithRand(nil)); return err }()},
		{"WithEvictEvery", func() error { _, err := New(c.open, c.close, DefaultLimits(), WithEvictEvery(0)); return err }()},
		{"WithDialTimeout", func() error {
			_, err := New(c.open, c.close, DefaultLimits(), WithDialTimeout(-time.Second))
			return err
		}()},
	} {
		if !errors.Is(tc.err, ErrInvalid) || !errors.Is(tc.err, ward.ErrInvalid) || !contains(tc.err.Error(), tc.name) {
			t.Errorf("%s: err = %v, want an ErrInvalid naming it", tc.name, tc.err)
		}
	}
}

func contains(s, sub string) bool {
	return len(sub) == 0 || len(s) >= len(sub) && (s[:len(sub)] == sub || contains(s[1:], sub))
}

// Driven from one goroutine with an injected clock, a Pool answers as a Core does.
func TestPoolMatchesCore(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for round := range 200 {
		size := 1 + r.IntN(5)
		l := limits(size, r.IntN(size+1), time.Duration(r.IntN(3))*time.Second, time.Duration(r.IntN(5))*time.Second)
		failing := false
		c := &counts{fail: func() bool { return failing }}
		clk := &fakeClock{}
		w := Ward{Backoff: fakeBackoff{}}
		p := newPool(t, c, l, WithClock(clk.Now), WithRand(func() float64 { return 0.5 }), WithWard(w))
		core, _ := NewCore[int](l, w, 0)
		var lent []Loan[*res]
		nextID := 0
		for step := range 300 {
			now := clk.Now()
			where := fmt.Sprintf("round %d step %d (limits %+v)", round, step, l)
			switch op := r.IntN(10); {
			case op < 4: // acquire
				failing = r.IntN(4) == 0
				want, wantErr := "", error(nil)
			take:
				switch tk := core.Take(now, 0.5); tk.Kind {
				case Stale:
					goto take
				case Ready:
					want = fmt.Sprint(tk.Item)
				case Make:
					if failing {
						core.Unmade(now, 0.5)
						wantErr = errors.New("dial failed")
					} else {
						nextID++
						core.Made(nextID, now)
						want = fmt.Sprint(nextID)
					}
				case Later:
					wantErr = fmt.Errorf("%w (retry in %v)", ErrRefused, tk.Wait)
				case Wait:
					continue // the pool would block: covered by the concurrent tests
				default:
					t.Fatalf("%s: Core.Take = %v", where, tk.Kind)
				}
				got, err := p.Acquire(context.Background())
				if fmt.Sprint(err) != fmt.Sprint(wantErr) {
					t.Fatalf("%s: Acquire error %v, Core says %v", where, err, wantErr)
				}
				if err == nil {
					if fmt.Sprint(got.Value().id) != want {
						t.Fatalf("%s: Acquire = %d, Core says %s", where, got.Value().id, want)
					}
					lent = append(lent, got)
				}
			case op < 7 && len(lent) > 0: // release
				i := r.IntN(len(lent))
				core.Give(lent[i].Value().id, now)
				lent[i].Release()
				lent = append(lent[:i], lent[i+1:]...)
			case op < 8 && len(lent) > 0: // destroy
				i := r.IntN(len(lent))
				core.Drop(lent[i].Value().id, now)
				lent[i].Destroy()
				lent = append(lent[:i], lent[i+1:]...)
			case op < 9:
				if got, want := p.Evict(), len(core.Evict(now)); got != want {
					t.Fatalf("%s: Evict = %d, Core evicts %d", where, got, want)
				}
			default:
				clk.now.Add(int64(r.IntN(1500)) * int64(time.Millisecond))
			}
			st := p.Stats()
			if st.Live != core.Live() || st.Idle != core.Idle() || st.Lent != core.Busy() {
				t.Fatalf("%s: Stats %+v, Core live %d idle %d busy %d", where, st, core.Live(), core.Idle(), core.Busy())
			}
		}
		p.Close()
		for _, x := range lent {
			x.Release()
		}
		checkClosed(t, c)
	}
}

// checkClosed checks that every resource opened was closed exactly once and none is lent.
func checkClosed(t *testing.T, c *counts) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.made {
		if n := r.closed.Load(); n != 1 {
			t.Fatalf("resource %d closed %d times, want 1", r.id, n)
		}
	}
}

func TestPoolAcquireReleaseAllocs(t *testing.T) {
	c := &counts{}
	p := newPool(t, c, DefaultLimits())
	defer p.Close()
	ctx := context.Background()
	x, _ := p.Acquire(ctx)
	x.Release()
	if n := testing.AllocsPerRun(1000, func() {
		x, err := p.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		x.Release()
	}); n != 0 {
		t.Fatalf("Acquire+Release of an idle resource allocates %v times, want 0", n)
	}
}

// A caller that waits its turn and is handed a resource allocates nothing once the pool has had
// as many waiting at once, with a context that can end and with one that cannot, garbage
// collections between included.
func TestPoolWaitAllocs(t *testing.T) {
	c := &counts{}
	p := newPool(t, c, limits(1, 1, 0, 0))
	defer p.Close()
	cancelable, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, ctx := range []context.Context{context.Background(), cancelable} {
		kick, got := make(chan struct{}), make(chan Loan[*res])
		go func() { // the waiter: Acquires while the test holds the only resource
			for range kick {
				l, err := p.Acquire(ctx)
				if err != nil {
					panic(err)
				}
				got <- l
			}
		}()
		held, err := p.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		wait := func() {
			kick <- struct{}{}
			waitFor(t, "a caller waiting", func() bool { return p.Stats().Waiting == 1 })
			held.Release() // handed to the waiter
			held = <-got
		}
		wait() // the pool's first waiter is made here
		if n := testing.AllocsPerRun(1000, wait); n != 0 {
			t.Errorf("a wait served by a Release allocates %v times, want 0", n)
		}
		if n := testing.AllocsPerRun(3, func() {
			runtime.GC()
			runtime.GC() // what a cache cleared at collections (sync.Pool's victim too) would lose
			wait()
		}); n != 0 {
			t.Errorf("a wait after garbage collections allocates %v times, want 0", n)
		}
		close(kick)
		held.Release()
	}
}

// waitFor yields until cond holds (bounded: it fails rather than spin for ever).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; !cond(); i++ {
		if i > 10_000_000 {
			t.Fatalf("never: %s", what)
		}
		runtime.Gosched()
	}
}

// A waiter that gives up leaves the queue; one served as it gives up passes its resource on.
func TestPoolWaiterCancel(t *testing.T) {
	c := &counts{}
	p := newPool(t, c, limits(1, 1, 0, 0))
	a, _ := p.Acquire(context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { _, err := p.Acquire(ctx); done <- err }()
	waitFor(t, "waiter queued", func() bool { return p.Stats().Waiting == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire = %v, want context.Canceled", err)
	}
	if st := p.Stats(); st.Waiting != 0 {
		t.Fatalf("Stats = %+v, want no one waiting", st)
	}
	a.Release()
	if st := p.Stats(); st.Idle != 1 {
		t.Fatalf("Stats = %+v, want the resource idle", st)
	}
	p.Close()
	checkClosed(t, c)
}

// The ward's refusal matches ErrRefused and ward.ErrRefused, with Later's wait.
func TestPoolRefusal(t *testing.T) {
	clk := &fakeClock{}
	c := &counts{fail: func() bool { return true }}
	p := newPool(t, c, DefaultLimits(), WithClock(clk.Now), WithRand(func() float64 { return 0 }), WithWard(Ward{Backoff: fakeBackoff{}}))
	defer p.Close()
	if _, err := p.Acquire(context.Background()); err == nil || err.Error() != "dial failed" {
		t.Fatalf("Acquire = %v, want the open's error", err)
	}
	_, err := p.Acquire(context.Background())
	wait, ok := ward.RetryAfter(err)
	if !errors.Is(err, ErrRefused) || !errors.Is(err, ward.ErrRefused) || !ok || wait != 100*time.Millisecond {
		t.Fatalf("Acquire = %v (wait %v, %v), want a refusal with 100ms", err, wait, ok)
	}
	s := &fakeShedder{hot: true}
	q := newPool(t, &counts{}, DefaultLimits(), WithWard(Ward{Shedder: s}))
	defer q.Close()
	if _, err := q.Acquire(context.Background()); !errors.Is(err, ErrRefused) {
		t.Fatalf("Acquire with a hot shedder = %v, want ErrRefused", err)
	}
}

// Close refuses the waiters, closes the idle, and closes what is released after.
func TestPoolClose(t *testing.T) {
	c := &counts{}
	p := newPool(t, c, limits(2, 2, 0, 0))
	a, _ := p.Acquire(context.Background())
	b, _ := p.Acquire(context.Background())
	b.Release()
	b, _ = p.Acquire(context.Background())
	done := make(chan Loan[*res])
	go func() { l, _ := p.Acquire(context.Background()); done <- l }()
	waitFor(t, "waiter queued", func() bool { return p.Stats().Waiting == 1 })
	b.Release()
	b = <-done // served b
	p.Close()
	if _, err := p.Acquire(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Acquire after Close = %v, want ErrClosed", err)
	}
	a.Release()
	b.Release()
	p.Close()
	checkClosed(t, c)
}

// The evictor closes what sits past Keep and stops with Close.
func TestPoolEvictor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &counts{}
		p := newPool(t, c, limits(2, 2, time.Minute, 0), WithEvictEvery(10*time.Second))
		a, _ := p.Acquire(context.Background())
		a.Release()
		time.Sleep(time.Minute + 15*time.Second) // the bubble's clock: returns at once
		synctest.Wait()
		if st := p.Stats(); st.Closed != 1 || st.Live != 0 {
			t.Fatalf("Stats = %+v, want the idle resource evicted", st)
		}
		p.Close() // the evictor ends: synctest.Test fails on a goroutine left behind
	})
}

// A thousand goroutines acquire and release with random breakage and cancellations: never more
// than Size live, never one resource lent to two, every open matched by one close, no goroutine
// left after Close.
func TestPoolStress(t *testing.T) {
	before := runtime.NumGoroutine()
	const size, workers = 8, 1000
	rounds := 40
	if testing.Short() {
		rounds = 5
	}
	c := &counts{}
	p := newPool(t, c, limits(size, 4, 0, 0))
	var wg sync.WaitGroup
	start := make(chan struct{})
	var double atomic.Bool
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 5))
			<-start
			for range rounds {
				if err := borrowOnce(p, r, 8, true, &double); err != nil && !errors.Is(err, context.Canceled) {
					t.Error(err)
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	p.settled(t)
	p.Close()
	if c.over.Load() {
		t.Fatal("more than Size resources live at once")
	}
	if double.Load() {
		t.Fatal("a resource lent to two callers at once")
	}
	checkClosed(t, c)
	p.settled(t)
	if st := p.Stats(); st.Live != 0 || st.Waiting != 0 {
		t.Fatalf("Stats after Close = %+v", st)
	}
	waitFor(t, "goroutines gone", func() bool { return runtime.NumGoroutine() <= before })
}
