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
	"time"
)

// randomShedder refuses one lend in six. The pool calls it under its lock.
type randomShedder struct {
	r   *rand.Rand
	out int
}

func (s *randomShedder) Lend(now int64) (int, bool) {
	if s.r.IntN(6) == 0 {
		return 0, false
	}
	s.out++
	return s.out, true
}
func (s *randomShedder) Return(loan int, now int64, ok bool) { s.out-- }

// randomBucket says Later to one make in five. The pool calls it under its lock.
type randomBucket struct{ r *rand.Rand }

func (b *randomBucket) Wait(now int64) time.Duration {
	if b.r.IntN(5) == 0 {
		return time.Millisecond
	}
	return 0
}
func (b *randomBucket) Take(now int64) {}

// borrowOnce makes one Acquire, with a context another goroutine cancels one time in cancelIn,
// and uses what it lends as a caller does: it marks it lent (a resource lent to two at once sets
// double), yields, and destroys it one time in ten, else releases it; with stale, it releases it
// again one time in four (a loan that has ended: ignored, whoever holds the resource now). It
// returns Acquire's error.
func borrowOnce(p *Pool[*res], r *rand.Rand, cancelIn int, stale bool, double *atomic.Bool) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if r.IntN(cancelIn) == 0 {
		go cancel()
	}
	x, err := p.Acquire(ctx)
	if err != nil {
		return err
	}
	if x.Value().lent.Add(1) != 1 {
		double.Store(true)
	}
	runtime.Gosched()
	x.Value().lent.Add(-1)
	if r.IntN(10) == 0 {
		x.Destroy()
	} else {
		x.Release()
	}
	if stale && r.IntN(4) == 0 {
		x.Release()
	}
	return nil
}

// Many goroutines acquire, release and destroy, some giving up while they wait, under every
// shape of waiting: a pool of one and pools larger than hand's buffer, resources aging past Keep
// and Life as the calls go on, a ward that sheds lends or says Later to makes, and Close
// while callers wait. Every Acquire returns, no resource is lent to two at once, every one opened
// is closed once, every grant sent is received, and the counts add up.
func TestPoolStressWaiters(t *testing.T) {
	type shape struct {
		size, idle   int
		aged         bool
		shed, bucket bool
		closeEarly   bool
	}
	var shapes []shape
	for _, sz := range [][2]int{{1, 1}, {3, 2}, {maxBuffered + 6, maxBuffered + 6}, {2*maxBuffered + 2, maxBuffered + 26}} {
		for _, aged := range []bool{false, true} {
			for ward := range 3 {
				for _, early := range []bool{false, true} {
					shapes = append(shapes, shape{sz[0], sz[1], aged, ward == 1, ward == 2, early})
				}
			}
		}
	}
	workers, rounds := 100, 16
	if testing.Short() {
		workers, rounds = 40, 6
	}
	for _, sh := range shapes {
		t.Run(fmt.Sprintf("%+v", sh), func(t *testing.T) {
			before := runtime.NumGoroutine()
			clk := &fakeClock{}
			c := &counts{}
			l := limits(sh.size, sh.idle, 0, 0)
			if sh.aged {
				l.Keep, l.Life = 3*time.Millisecond, 5*time.Millisecond
			}
			opts := []Option{WithClock(clk.Now)}
			r := rand.New(rand.NewPCG(1, 2))
			switch {
			case sh.shed:
				opts = append(opts, WithWard(Ward{Shedder: &randomShedder{r: r}}))
			case sh.bucket:
				opts = append(opts, WithWard(Ward{Bucket: &randomBucket{r: r}}))
			}
			p := newPool(t, c, l, opts...)
			var wg sync.WaitGroup
			var double atomic.Bool
			var calls atomic.Int64
			start := make(chan struct{})
			for g := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := rand.New(rand.NewPCG(uint64(g), 9))
					<-start
					for range rounds {
						err := borrowOnce(p, r, 6, false, &double)
						calls.Add(1)
						clk.now.Add(int64(50 * time.Microsecond)) // resources age past Keep and Life
						if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, ErrRefused) && err != ErrClosed {
							t.Error(err)
						}
					}
				}()
			}
			close(start)
			if sh.closeEarly {
				waitFor(t, "calls made", func() bool { return calls.Load() >= int64(workers) })
				p.Close()
			}
			wg.Wait()
			// An open its caller gave up on may still be settling, and closing what it made.
			waitFor(t, "opens settled", func() bool { st := p.Stats(); return st.Making == 0 && st.Live == st.Idle })
			p.settled(t)
			if st := p.Stats(); st.Lent != 0 || st.Waiting != 0 {
				t.Fatalf("Stats %+v: want every resource idle or closed", st)
			}
			p.Close()
			p.settled(t)
			if double.Load() {
				t.Fatal("a resource lent to two callers at once")
			}
			if c.over.Load() {
				t.Fatal("more than Size resources live at once")
			}
			checkClosed(t, c)
			if st := p.Stats(); st.Live != 0 {
				t.Fatalf("Stats after Close = %+v", st)
			}
			if cn := p.Counts(); cn.Passed+cn.Failed != cn.Admitted || cn.Admitted+cn.Refused+cn.Abandoned > uint64(calls.Load()) {
				t.Fatalf("Counts %+v after %d calls", cn, calls.Load())
			}
			waitFor(t, "goroutines gone", func() bool { return runtime.NumGoroutine() <= before })
		})
	}
}
