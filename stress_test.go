package ward_test

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wardgo/ward/adaptive"
	"github.com/wardgo/ward/atomicwindow"
	"github.com/wardgo/ward/breaker"
	"github.com/wardgo/ward/failurewindow"
	"github.com/wardgo/ward/internal/procs"
	"github.com/wardgo/ward/pool"
	"github.com/wardgo/ward/rate"
	"github.com/wardgo/ward/shed"
)

// TestGOMAXPROCSChanges drives every concurrent type from many goroutines while another goroutine
// changes GOMAXPROCS between 1 and 32 over and over. Nothing may panic, and every exact count must
// come back exactly: in flight returns to 0, refusals and striped sums equal what the callers saw
// and wrote. Run it in every build: -race, -tags ward_nolinkname, and on 32-bit targets.
func TestGOMAXPROCSChanges(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // built at 1: every later P is past the rows made
	fixed, err := adaptive.NewFixed(4)
	check(t, err)
	limiter, err := adaptive.New(fixed)
	check(t, err)
	brk, err := breaker.New(breaker.WithRand(func() float64 { return 0.5 }))
	check(t, err)
	shd, err := shed.New(shed.WithCPU(func() int { return 990 })) // always hot
	check(t, err)
	bucket, err := rate.NewBucketLimiter(1e6, 100)
	check(t, err)
	period, err := rate.NewPeriodLimiter(1000, time.Millisecond, false)
	check(t, err)
	sliding, err := rate.NewSlidingLimiter(1000, time.Millisecond)
	check(t, err)
	fails, err := failurewindow.New(5, time.Minute)
	check(t, err)
	striped, err := atomicwindow.NewStriped(8, time.Hour, 2, 0)
	check(t, err)
	batch, err := atomicwindow.NewBatch(atomicwindow.Sum, atomicwindow.Max)
	check(t, err)

	var opened, closed atomic.Int64
	conns, err := pool.New(func(context.Context) (*int, error) { opened.Add(1); return new(int), nil },
		func(*int) { closed.Add(1) }, pool.Limits{Size: 8, Idle: 8})
	check(t, err)
	var lent sync.Map // a resource lent to two callers at once is a bug

	var limiterRefused, shedRefused, brkRefused atomic.Int64
	keys := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	work := func(g, i int) {
		if lease, ok := limiter.Acquire(); ok {
			if i%3 == 0 {
				runtime.Gosched() // settle on another P, sometimes
			}
			switch i % 3 {
			case 0:
				lease.Pass()
			case 1:
				lease.Fail()
			default:
				lease.Ignore()
			}
		} else {
			limiterRefused.Add(1)
		}
		if p, err := shd.Allow(); err == nil {
			if i%2 == 0 {
				runtime.Gosched()
				p.Pass()
			} else {
				p.Fail()
			}
		} else {
			shedRefused.Add(1)
		}
		if p, err := brk.Allow(); err == nil {
			if i%4 == 0 {
				p.Fail()
			} else {
				p.Pass()
			}
		} else {
			brkRefused.Add(1)
		}
		bucket.Allow()
		period.Allow()
		sliding.Allow()
		k := keys[(g+i)%len(keys)]
		if ok, _ := fails.Admit(k); ok && i%5 == 0 {
			fails.Record(k)
		}
		striped.AddAll(1, atomicwindow.Bucket{1, 2})
		if c, err := conns.Acquire(context.Background()); err == nil {
			if _, twice := lent.LoadOrStore(c.Value(), true); twice {
				t.Error("pool: one resource lent to two callers")
			}
			runtime.Gosched()
			lent.Delete(c.Value())
			if i%16 == 0 {
				c.Destroy()
			} else {
				c.Release()
			}
		}
		batch.Add(atomicwindow.Bucket{1, int64(i)})
	}

	const workers, each = 32, 1500
	stop := procs.Flip()
	var wg sync.WaitGroup
	for g := 0; g < workers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				work(g, i)
			}
		}()
	}
	wg.Wait()
	stop()

	if st := conns.Stats(); st.Lent != 0 || st.Live > 8 || st.Idle+st.Lent+st.Making != st.Live {
		t.Errorf("pool: stats %+v with nothing running", st)
	}
	conns.Close()
	if o, c := opened.Load(), closed.Load(); o != c {
		t.Errorf("pool: %d opened, %d closed after Close", o, c)
	}
	if n := limiter.InFlight(); n != 0 {
		t.Errorf("adaptive: InFlight = %d with nothing running", n)
	}
	if got, want := limiter.Snapshot().Refused, limiterRefused.Load(); got != want {
		t.Errorf("adaptive: Refused = %d, callers saw %d", got, want)
	}
	if n := shd.Snapshot().InFlight; n != 0 {
		t.Errorf("shed: InFlight = %d with nothing running", n)
	}
	if got, want := shd.Snapshot().Refused, shedRefused.Load(); got != want {
		t.Errorf("shed: Refused = %d, callers saw %d", got, want)
	}
	if got, want := brk.Snapshot().Refused, brkRefused.Load(); got != want {
		t.Errorf("breaker: Refused = %d, callers saw %d", got, want)
	}
	if got, want := striped.Sum(1, true), (atomicwindow.Bucket{workers * each, 2 * workers * each}); got != want {
		t.Errorf("atomicwindow: Striped sum %v, want %v", got, want)
	}
	if got, want := batch.Fold(), (atomicwindow.Bucket{workers * each, each - 1}); got != want {
		t.Errorf("atomicwindow: Batch fold %v, want %v", got, want)
	}
}

func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
