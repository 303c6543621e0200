package ward_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wardgo/ward"
	"github.com/wardgo/ward/adaptive"
	"github.com/wardgo/ward/atomicwindow"
	"github.com/wardgo/ward/breaker"
	"github.com/wardgo/ward/failurewindow"
	"github.com/wardgo/ward/pool"
	"github.com/wardgo/ward/rate"
	"github.com/wardgo/ward/retry"
	"github.com/wardgo/ward/shed"
	"github.com/wardgo/ward/wardhttp"
)

// The contract table, at compile time: every guard has Do and Now, every handle Pass, Fail and
// Ignore.
var (
	_ ward.Guard = (*adaptive.Limiter)(nil)
	_ ward.Guard = (*breaker.Breaker)(nil)
	_ ward.Guard = (*shed.Shedder)(nil)
	_ ward.Guard = (*rate.BucketLimiter)(nil)
	_ ward.Guard = (*rate.SlidingLimiter)(nil)
	_ ward.Guard = (*rate.PeriodLimiter)(nil)

	_ ward.Handle = (*adaptive.Lease)(nil)
	_ ward.Handle = (*breaker.Promise)(nil)
	_ ward.Handle = (*shed.Promise)(nil)
)

// row is one line of the root doc's table, built on a clock the test moves.
type row struct {
	name     string
	sentinel error // the package's own refusal
	wait     bool  // whether a refusal carries its wait
	// build returns the guard on the clock, and a function that drives it until Do refuses
	build func(now *int64) (g ward.Guard, saturate func())
}

// must is for constructors the test knows to be valid.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

var errBackend = errors.New("backend failed")

var rows = []row{
	{"adaptive.Limiter", adaptive.ErrLimitExceeded, false, func(now *int64) (ward.Guard, func()) {
		clock := func() int64 { return *now }
		l := must(adaptive.New(must(adaptive.NewFixed(1)), adaptive.WithClock(clock)))
		return l, func() { l.Acquire() } // holds the only slot
	}},
	{"adaptive.Queue", adaptive.ErrLimitExceeded, false, func(now *int64) (ward.Guard, func()) {
		clock := func() int64 { return *now }
		l := must(adaptive.New(must(adaptive.NewFixed(1)), adaptive.WithClock(clock)))
		q := must(adaptive.NewQueue(l, adaptive.WithMaxWait(time.Nanosecond)))
		return q, func() { l.Acquire() } // holds the only slot: a waiter's nanosecond runs out
	}},
	{"adaptive.Partition", adaptive.ErrLimitExceeded, false, func(now *int64) (ward.Guard, func()) {
		clock := func() int64 { return *now }
		l := must(adaptive.New(must(adaptive.NewFixed(2)), adaptive.WithClock(clock)))
		ps := must(adaptive.NewPartitions(l, adaptive.Share{Name: "live", Fraction: 0.5}, adaptive.Share{Name: "batch", Fraction: 0.5}))
		return ps.Partition("live"), func() { ps.Partition("batch").Acquire(); ps.Partition("batch").Acquire() }
	}},
	{"breaker.Breaker", breaker.ErrUnavailable, false, func(now *int64) (ward.Guard, func()) {
		clock := func() int64 { return *now }
		b := must(breaker.New(breaker.WithClock(clock), breaker.WithRand(func() float64 { return 0 }), breaker.WithRefresh(0)))
		return b, func() {
			for i := 0; i < 100; i++ {
				_ = b.Do(context.Background(), func(context.Context) error { return errBackend })
			}
		}
	}},
	{"shed.Shedder", shed.ErrOverloaded, false, func(now *int64) (ward.Guard, func()) {
		clock := func() int64 { return *now }
		cpu := 0
		s := must(shed.New(shed.WithClock(clock), shed.WithCPU(func() int { return cpu }), shed.WithRefresh(0), shed.WithSampleEvery(1)))
		return s, func() {
			var ps []shed.Promise
			for i := 0; i < 100; i++ { // a bucket of 100 calls of 50 ms: a capacity of 50 in flight
				p, _ := s.Allow()
				ps = append(ps, p)
			}
			*now += int64(50 * time.Millisecond)
			for i := range ps {
				ps[i].Pass()
			}
			*now += int64(50 * time.Millisecond)
			ps = ps[:0]
			for i := 0; i < 200; i++ { // then 200 in flight, held there
				p, _ := s.Allow()
				ps = append(ps, p)
			}
			for i := 0; i < 20; i++ { // 20 of them fail, which moves the average of those in flight
				ps[i].Fail()
			}
			*now += int64(50 * time.Millisecond)
			cpu = 950 // and hot
		}
	}},
	{"rate.BucketLimiter", rate.ErrLimited, true, func(now *int64) (ward.Guard, func()) {
		clock := func() int64 { return *now }
		l := must(rate.NewBucketLimiter(1, 3, rate.WithClock(clock)))
		return l, func() { l.Allow(); l.Allow(); l.Allow() }
	}},
	{"rate.SlidingLimiter", rate.ErrLimited, true, func(now *int64) (ward.Guard, func()) {
		clock := func() int64 { return *now }
		l := must(rate.NewSlidingLimiter(3, time.Second, rate.WithClock(clock)))
		return l, func() { l.Allow(); l.Allow(); l.Allow() }
	}},
	{"rate.PeriodLimiter", rate.ErrLimited, true, func(now *int64) (ward.Guard, func()) {
		clock := func() int64 { return *now }
		l := must(rate.NewPeriodLimiter(3, time.Second, false, rate.WithClock(clock)))
		return l, func() { l.Allow(); l.Allow(); l.Allow() }
	}},
}

// guarded is the one piece of glue a server writes: the same code for every guard, no type
// switch. It runs fn under g and says whether g refused, and for how long if it knows.
func guarded(ctx context.Context, g ward.Guard, fn func(context.Context) error) (refused bool, wait time.Duration, err error) {
	err = g.Do(ctx, fn)
	if errors.Is(err, ward.ErrRefused) {
		wait, _ = ward.RetryAfter(err)
		return true, wait, err
	}
	return false, 0, err
}

// TestContractTable walks the table: Now is the clock the type was given; Do runs fn and returns
// its error unchanged; a panic continues; a refusal matches ward.ErrRefused and the package's own
// sentinel, does not call fn, and carries a wait exactly when the table says so.
func TestContractTable(t *testing.T) {
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			now := int64(5 * time.Second)
			g, saturate := r.build(&now)
			if got := g.Now(); got != now {
				t.Fatalf("Now() = %d, want the injected clock's %d", got, now)
			}
			ctx := context.Background()
			called := 0
			if refused, _, err := guarded(ctx, g, func(context.Context) error { called++; return nil }); err != nil || refused || called != 1 {
				t.Fatalf("Do(nil fn): err %v refused %v, fn called %d times", err, refused, called)
			}
			own := errors.New("not found")
			if refused, _, err := guarded(ctx, g, func(context.Context) error { return own }); err != own || refused {
				t.Fatalf("Do returned %v (refused %v), want fn's error unchanged", err, refused)
			}
			func() {
				defer func() {
					if p := recover(); p != "boom" {
						t.Fatalf("Do swallowed or changed a panic: %v", p)
					}
				}()
				_ = g.Do(ctx, func(context.Context) error { panic("boom") })
			}()
			saturate()
			called = 0
			refused, wait, err := guarded(ctx, g, func(context.Context) error { called++; return nil })
			if !refused || called != 0 {
				t.Fatalf("saturated: Do returned %v, fn called %d times; want a refusal", err, called)
			}
			if !errors.Is(err, r.sentinel) {
				t.Fatalf("refusal %v does not match %v", err, r.sentinel)
			}
			if (wait > 0) != r.wait {
				t.Fatalf("refusal %v carries wait %v; the table says a wait: %v", err, wait, r.wait)
			}
		})
	}
}

// TestHandlesSettleOnce: settling a handle twice through the same variable is a no-op, for every
// verb pair and every handle type: the slot is freed once.
func TestHandlesSettleOnce(t *testing.T) {
	verbs := []func(ward.Handle){ward.Handle.Pass, ward.Handle.Fail, ward.Handle.Ignore}
	for _, first := range verbs {
		for _, second := range verbs {
			l := must(adaptive.New(must(adaptive.NewFixed(2))))
			other, _ := l.Acquire()
			lease, _ := l.Acquire()
			first(&lease)
			second(&lease)
			if n := l.InFlight(); n != 1 {
				t.Fatalf("adaptive: %d in flight after settling one of two leases twice, want 1", n)
			}
			other.Ignore()

			s := must(shed.New(shed.WithCPU(func() int { return 0 })))
			sp, _ := s.Allow()
			keep, _ := s.Allow()
			first(&sp)
			second(&sp)
			if n := s.Snapshot().InFlight; n != 1 {
				t.Fatalf("shed: %d in flight after settling one of two promises twice, want 1", n)
			}
			keep.Ignore()

			q := must(adaptive.NewQueue(l))
			slot, _ := q.TryAcquire()
			first(&slot)
			second(&slot)
			if n := l.InFlight(); n != 0 {
				t.Fatalf("adaptive.Slot: %d in flight after settling the only slot twice, want 0", n)
			}
			ps := must(adaptive.NewPartitions(l, adaptive.Share{Name: "all", Fraction: 1}))
			keepPL, _ := ps.Partition("all").Acquire()
			pl, _ := ps.Partition("all").Acquire()
			first(&pl)
			second(&pl)
			if n, pn := l.InFlight(), ps.Partition("all").InFlight(); n != 1 || pn != 1 {
				t.Fatalf("adaptive.PartitionLease: %d in flight (%d in the partition) after settling one of two twice, want 1", n, pn)
			}
			keepPL.Ignore()
			keepA, _ := l.Admit(context.Background())
			adm, _ := l.Admit(context.Background())
			first(&adm)
			second(&adm)
			if n := l.InFlight(); n != 1 {
				t.Fatalf("ward.Admission: %d in flight after settling one of two twice, want 1", n)
			}
			keepA.Ignore()

			b := must(breaker.New())
			bp, _ := b.Allow()
			first(&bp)
			second(&bp)
			if s := b.Snapshot(); s.Successes+s.Failures > 1 {
				t.Fatalf("breaker: a promise settled twice recorded %d outcomes", s.Successes+s.Failures)
			}
		}
	}
}

// TestPerKeyRow: the per-key guard keeps the same contract with a key: Do(ctx, key, fn), Now, a
// refusal matching ward.ErrRefused and carrying its wait.
func TestPerKeyRow(t *testing.T) {
	now := int64(time.Hour)
	w := must(failurewindow.New(1, time.Minute, failurewindow.WithClock(func() int64 { return now })))
	if w.Now() != now {
		t.Fatalf("Now() = %d, want %d", w.Now(), now)
	}
	ctx := context.Background()
	if err := w.Do(ctx, "10.0.0.1", func(context.Context) error { return errBackend }); err != errBackend {
		t.Fatalf("Do returned %v, want fn's error", err)
	}
	err := w.Do(ctx, "10.0.0.1", func(context.Context) error { t.Fatal("fn called for a key at its limit"); return nil })
	if !errors.Is(err, ward.ErrRefused) || !errors.Is(err, failurewindow.ErrTooManyFailures) {
		t.Fatalf("refusal %v does not match ward.ErrRefused and ErrTooManyFailures", err)
	}
	if wait, ok := ward.RetryAfter(err); !ok || wait != time.Minute {
		t.Fatalf("RetryAfter = %v %v, want 1m", wait, ok)
	}
}

// TestInvalidMatches: every package's configuration errors match ward.ErrInvalid and the
// package's own ErrInvalid, and name the field.
func TestInvalidMatches(t *testing.T) {
	var nilClock func() int64
	fixed := must(adaptive.New(must(adaptive.NewFixed(1))))
	badBreaker := breaker.DefaultPolicy()
	badBreaker.K = -1
	badShed := shed.DefaultPolicy()
	badShed.Window = -1
	for _, c := range []struct {
		name  string
		err   error
		pkg   error
		field string
	}{
		{"adaptive.NewFixed", second(adaptive.NewFixed(0)), adaptive.ErrInvalid, "Fixed.n"},
		{"adaptive.New", second(adaptive.New(nil)), adaptive.ErrInvalid, "rule"},
		{"adaptive.NewQueue", second(adaptive.NewQueue(fixed, adaptive.WithMaxWait(-1))), adaptive.ErrInvalid, "WithMaxWait"},
		{"adaptive.NewPartitions", second(adaptive.NewPartitions(fixed, adaptive.Share{Name: "a", Fraction: 2})), adaptive.ErrInvalid, "shares[0].Fraction"},
		{"breaker.New", second(breaker.New(breaker.WithPolicy(badBreaker))), breaker.ErrInvalid, "Policy.K"},
		{"breaker.WithClock", second(breaker.New(breaker.WithClock(nilClock))), breaker.ErrInvalid, "WithClock"},
		{"breaker.NewCore", second(breaker.NewCore(badBreaker, 0)), breaker.ErrInvalid, "Policy.K"},
		{"shed.New", second(shed.New(shed.WithPolicy(badShed))), shed.ErrInvalid, "Policy.Window"},
		{"shed.WithClock", second(shed.New(shed.WithClock(nilClock))), shed.ErrInvalid, "WithClock"},
		{"rate.NewBucketLimiter", second(rate.NewBucketLimiter(1, 0)), rate.ErrInvalid, "burst"},
		{"rate.NewSlidingLimiter", second(rate.NewSlidingLimiter(0, time.Second)), rate.ErrInvalid, "quota"},
		{"failurewindow.New", second(failurewindow.New(0, time.Minute)), failurewindow.ErrInvalid, "limit"},
		{"retry.Backoff", retry.Backoff{Base: -1}.Validate(), retry.ErrInvalid, "Backoff.Base"},
		{"atomicwindow.NewWindow", second(atomicwindow.NewWindow[int](0, time.Second, 0)), atomicwindow.ErrInvalid, "size"},
		{"atomicwindow.NewBatch", second(atomicwindow.NewBatch(99)), atomicwindow.ErrInvalid, "kinds[0]"},
		{"pool.Limits", pool.Limits{Size: -1}.Validate(), pool.ErrInvalid, "Limits.Size"},
		{"wardhttp.Guard", second(wardhttp.Guard(nil)), wardhttp.ErrInvalid, "Guard"},
		{"wardhttp.NewTransport", second(wardhttp.NewTransport(nil, wardhttp.WithBreaker(breaker.WithPolicy(badBreaker)))), breaker.ErrInvalid, "Policy.K"},
		{"ward.With", second(ward.With()), ward.ErrInvalid, "guards"},
	} {
		if !errors.Is(c.err, ward.ErrInvalid) || !errors.Is(c.err, c.pkg) {
			t.Errorf("%s: %v does not match ward.ErrInvalid and %v", c.name, c.err, c.pkg)
		} else if !strings.Contains(c.err.Error(), c.field+" = ") {
			t.Errorf("%s: %q does not name the field %s", c.name, c.err, c.field)
		}
	}
}

func second[T any](_ T, err error) error { return err }

// TestDoAllocates0: a call through Do that is admitted allocates nothing, for every guard with a
// handle and the ways of reaching one (a Queue, a Partition): the settle's method values stay on
// the stack.
func TestDoAllocates0(t *testing.T) {
	l := must(adaptive.New(must(adaptive.NewFixed(10))))
	q := must(adaptive.NewQueue(l))
	part := must(adaptive.NewPartitions(l, adaptive.Share{Name: "all", Fraction: 1})).Partition("all")
	b := must(breaker.New())
	s := must(shed.New(shed.WithCPU(func() int { return 0 })))
	ctx := context.Background()
	fn := func(context.Context) error { return nil }
	for name, g := range map[string]ward.Guard{"adaptive": l, "queue": q, "partition": part, "breaker": b, "shed": s} {
		if a := testing.AllocsPerRun(200, func() { _ = g.Do(ctx, fn) }); a != 0 {
			t.Errorf("%s: Do allocates %v per admitted call", name, a)
		}
	}
}

// TestPoolRow: the pool keeps the contract as the table's last row says: Now is its clock; a
// refusal of its ward matches ward.ErrRefused and pool.ErrRefused and carries its wait; a Loan
// settles once (a second Release is a no-op); a context already done spends nothing; its counts
// add up.
func TestPoolRow(t *testing.T) {
	now := int64(time.Hour)
	clock := func() int64 { return now }
	bucket := must(rate.NewBucket(1, 1, now)) // one make at once, the next a second later
	part := must(pool.FromBucket(bucket))
	opened := 0
	p := must(pool.New(func(context.Context) (*int, error) { opened++; return new(int), nil }, func(*int) {},
		pool.Limits{Size: 2, Idle: 2}, pool.WithClock(clock), pool.WithWard(pool.Ward{Bucket: part})))
	defer p.Close()
	if p.Now() != now {
		t.Fatalf("Now() = %d, want %d", p.Now(), now)
	}
	ctx := context.Background()
	dead, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := p.Acquire(dead); !errors.Is(err, context.Canceled) || opened != 0 || p.Counts() != (ward.Counts{}) {
		t.Fatalf("done ctx: Acquire = %v, %d opened, counts %+v; want its error and nothing spent", err, opened, p.Counts())
	}
	first, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Acquire(ctx) // a second make, but the bucket's token is spent
	if !errors.Is(err, ward.ErrRefused) || !errors.Is(err, pool.ErrRefused) {
		t.Fatalf("refusal %v does not match ward.ErrRefused and pool.ErrRefused", err)
	}
	if wait, ok := ward.RetryAfter(err); !ok || wait <= 0 {
		t.Fatalf("the ward's Later carries no wait: %v %v", wait, ok)
	}
	first.Release()
	first.Release() // settled already: nothing
	if s := p.Stats(); s.Idle != 1 {
		t.Fatalf("after a double Release: %+v, want one idle", s)
	}
	if c := p.Counts(); c.Admitted != 1 || c.Passed != 1 || c.Refused != 1 {
		t.Fatalf("counts %+v, want one loan passed and one refusal", c)
	}
}
