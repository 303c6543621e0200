package ward_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/wardgo/ward"
	"github.com/wardgo/ward/adaptive"
	"github.com/wardgo/ward/breaker"
	"github.com/wardgo/ward/internal/stripe"
	"github.com/wardgo/ward/rate"
	"github.com/wardgo/ward/retry"
	"github.com/wardgo/ward/shed"
	"github.com/wardgo/ward/wardhttp"
)

// The admission shape at compile time: every guard of ward's, the queue and a partition included,
// has Admit, Do and Now; an Admission is a Handle.
var (
	_ ward.Guard  = (*adaptive.Queue)(nil)
	_ ward.Guard  = (*adaptive.Partition)(nil)
	_ ward.Guard  = (*ward.Chain)(nil)
	_ ward.Handle = (*ward.Admission)(nil)
)

// TestAdmitTable walks the table through Admit: a fresh guard admits, the admission settles by
// End, a saturated guard refuses with its package's sentinel (and its wait, where the table says
// so), and a context already done is answered with its own error and spends nothing: after a
// hundred of them the guard still admits as many calls as before.
func TestAdmitTable(t *testing.T) {
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			now := int64(5 * time.Second)
			g, saturate := r.build(&now)
			ctx := context.Background()
			a, err := g.Admit(ctx)
			if err != nil {
				t.Fatalf("fresh: Admit = %v", err)
			}
			a.End(ctx, nil)
			if !a.Settled() {
				t.Fatal("End left the admission unsettled")
			}

			dead, cancel := context.WithCancel(ctx)
			cancel()
			for i := 0; i < 100; i++ {
				if _, err := g.Admit(dead); !errors.Is(err, context.Canceled) || errors.Is(err, ward.ErrRefused) {
					t.Fatalf("done ctx: Admit = %v, want context.Canceled and no refusal", err)
				}
			}
			if a, err := g.Admit(ctx); err != nil {
				t.Fatalf("after done contexts: Admit = %v: they spent something", err)
			} else {
				a.Ignore()
			}

			saturate()
			_, err = g.Admit(ctx)
			if !errors.Is(err, r.sentinel) || !errors.Is(err, ward.ErrRefused) {
				t.Fatalf("saturated: Admit = %v, want %v", err, r.sentinel)
			}
			if _, ok := ward.RetryAfter(err); ok != r.wait {
				t.Fatalf("refusal %v: wait known %v, the table says %v", err, ok, r.wait)
			}
			if quota := errors.Is(err, ward.ErrQuota); quota != r.wait {
				t.Fatalf("refusal %v matches ErrQuota: %v; only the quotas (rate) should", err, quota)
			}
		})
	}
}

// own is a guard written outside ward: a quota of n calls that also records how its admissions
// settle. It implements ward.Guard and ward.Settler and nothing else of ward's.
type own struct {
	mu       sync.Mutex
	left     int
	outcomes []ward.Outcome
}

var errOwnQuota = quotaErr{}

// quotaErr is the guard's refusal: a quota, so it matches ward.ErrQuota (and ErrRefused).
type quotaErr struct{}

func (quotaErr) Error() string        { return "own: over quota" }
func (quotaErr) Is(target error) bool { return target == ward.ErrQuota || target == ward.ErrRefused }
func (g *own) Now() int64             { return 0 }
func (g *own) Settle(_, _ int64, o ward.Outcome) {
	g.mu.Lock()
	g.outcomes = append(g.outcomes, o)
	g.mu.Unlock()
}
func (g *own) End(ctx context.Context, a, b int64, err error) {
	g.Settle(a, b, ward.Classify(ctx, err, ward.Fail))
}

func (g *own) Admit(ctx context.Context) (ward.Admission, error) {
	if err := ward.Dead(ctx); err != nil {
		return ward.Admission{}, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.left == 0 {
		return ward.Admission{}, errOwnQuota
	}
	g.left--
	return ward.Admitted(g, 0, 0), nil
}

func (g *own) Do(ctx context.Context, fn func(context.Context) error) error {
	a, err := g.Admit(ctx)
	if err != nil {
		return err
	}
	defer a.Fail()
	err = fn(ctx)
	a.End(ctx, err)
	return err
}

func (g *own) got() []ward.Outcome {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]ward.Outcome(nil), g.outcomes...)
}

// TestOwnGuardEverywhere: a guard of the caller's own goes through the HTTP middleware, a Chain
// and Get with no change to ward: its admissions settle by the response, its quota refusal is a
// 429.
func TestOwnGuardEverywhere(t *testing.T) {
	g := &own{left: 2}
	mw := must(wardhttp.Guard(g))
	status := http.StatusOK
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(status) }))
	serve := func() int {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		return rec.Code
	}
	if c := serve(); c != http.StatusOK {
		t.Fatalf("first request: %d", c)
	}
	status = http.StatusBadGateway
	if c := serve(); c != http.StatusBadGateway {
		t.Fatalf("second request: %d", c)
	}
	if c := serve(); c != http.StatusTooManyRequests {
		t.Fatalf("over the quota: %d, want 429 (the refusal matches ward.ErrQuota)", c)
	}
	if got := g.got(); len(got) != 2 || got[0] != ward.Pass || got[1] != ward.Fail {
		t.Fatalf("settled %v, want [Pass Fail]", got)
	}

	g = &own{left: 1}
	lim := must(adaptive.New(must(adaptive.NewFixed(1))))
	c := must(ward.With(g, lim))
	v, err := ward.Get(context.Background(), c, func(context.Context) (int, error) { return 42, nil })
	if v != 42 || err != nil {
		t.Fatalf("Get = %d, %v", v, err)
	}
	v, err = ward.Get(context.Background(), c, func(context.Context) (int, error) { return 7, nil })
	if v != 0 || !errors.Is(err, errOwnQuota) {
		t.Fatalf("Get over the quota = %d, %v; want 0 and the guard's refusal", v, err)
	}
	if got := g.got(); len(got) != 1 || got[0] != ward.Pass {
		t.Fatalf("settled %v, want [Pass]", got)
	}
	if n := lim.InFlight(); n != 0 {
		t.Fatalf("the limiter holds %d after the chain's calls ended", n)
	}
}

// trippedBreaker returns a breaker that refuses every call (its clock and draw fixed).
func trippedBreaker(t *testing.T) *breaker.Breaker {
	t.Helper()
	now := int64(time.Hour)
	b := must(breaker.New(breaker.WithClock(func() int64 { return now }), breaker.WithRand(func() float64 { return 0.999 }), breaker.WithRefresh(0)))
	for i := 0; i < 200; i++ {
		_ = b.Do(context.Background(), func(context.Context) error { return errors.New("down") })
	}
	if _, err := b.Admit(context.Background()); err == nil {
		t.Fatal("the breaker does not refuse after 200 failures")
	}
	return b
}

// TestChain: guards are asked in order; a refusal undoes the admissions already made (the slot
// comes back) and leaves the later guards untouched; End settles each admission as its own guard
// classifies the error; a panic settles every admission as a Fail and continues.
func TestChain(t *testing.T) {
	ctx := context.Background()
	lim := must(adaptive.New(must(adaptive.NewFixed(4))))
	bucket := must(rate.NewBucketLimiter(1, 1, rate.WithClock(func() int64 { return 0 })))

	// A refusal first spends nothing of the guards after it.
	c := must(ward.With(bucket, lim))
	a, err := c.Admit(ctx)
	if err != nil || lim.InFlight() != 1 {
		t.Fatalf("Admit = %v with %d in flight; want admitted, 1", err, lim.InFlight())
	}
	if _, err := c.Admit(ctx); !errors.Is(err, rate.ErrLimited) || lim.InFlight() != 1 {
		t.Fatalf("second Admit = %v with %d in flight; want the bucket's refusal, the limiter untouched", err, lim.InFlight())
	}
	stale := a
	a.Pass()
	if lim.InFlight() != 0 {
		t.Fatalf("%d in flight after the chain's admission passed", lim.InFlight())
	}

	// A refusal later undoes the earlier admissions.
	b := trippedBreaker(t)
	c = must(ward.With(lim, b))
	if _, err := c.Admit(ctx); !errors.Is(err, breaker.ErrUnavailable) || lim.InFlight() != 0 {
		t.Fatalf("Admit = %v with %d in flight; want the breaker's refusal and the slot back", err, lim.InFlight())
	}
	if err := c.Do(ctx, func(context.Context) error { t.Fatal("fn ran"); return nil }); !errors.Is(err, breaker.ErrUnavailable) || lim.InFlight() != 0 {
		t.Fatalf("Do = %v with %d in flight", err, lim.InFlight())
	}

	// A stale copy of a settled chain admission settles nothing, even once its record is reused.
	c = must(ward.With(lim))
	live, _ := c.Admit(ctx)
	stale.Pass()
	if lim.InFlight() != 1 {
		t.Fatalf("a stale copy settled a live admission: %d in flight, want 1", lim.InFlight())
	}
	live.Ignore()

	// End: each guard classifies the error its own way. An error of no known kind fails the
	// breaker and only frees the limiter's slot.
	nb := must(breaker.New())
	c = must(ward.With(lim, nb))
	a, _ = c.Admit(ctx)
	a.End(ctx, errors.New("teapot"))
	if s := nb.Snapshot(); s.Failures != 1 || lim.InFlight() != 0 {
		t.Fatalf("End(other error): breaker failures %d, limiter in flight %d; want 1, 0", s.Failures, lim.InFlight())
	}

	// A panic fails every admission and continues.
	func() {
		defer func() {
			if p := recover(); p != "boom" {
				t.Fatalf("recovered %v", p)
			}
		}()
		_ = c.Do(ctx, func(context.Context) error { panic("boom") })
	}()
	if s := nb.Snapshot(); s.Failures != 2 || lim.InFlight() != 0 {
		t.Fatalf("after a panic: breaker failures %d, limiter in flight %d; want 2, 0", s.Failures, lim.InFlight())
	}

	// More guards than Do keeps on its stack.
	many := make([]ward.Guard, 10)
	for i := range many {
		many[i] = must(adaptive.New(must(adaptive.NewFixed(1))))
	}
	c = must(ward.With(many...))
	if err := c.Do(ctx, func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	for i, g := range many {
		if n := g.(*adaptive.Limiter).InFlight(); n != 0 {
			t.Fatalf("guard %d holds %d after Do", i, n)
		}
	}
}

// TestWithInvalid: a chain of nothing, or with a nil guard, is a configuration error.
func TestWithInvalid(t *testing.T) {
	lim := must(adaptive.New(must(adaptive.NewFixed(1))))
	for _, gs := range [][]ward.Guard{nil, {nil}, {lim, nil}} {
		if _, err := ward.With(gs...); !errors.Is(err, ward.ErrInvalid) {
			t.Fatalf("With(%v) = %v, want ErrInvalid", gs, err)
		}
	}
}

// TestAdmitAllocates0: admitting and settling allocate nothing, for every guard that learns from
// outcomes, a chain's Do, and a refusal without a wait.
func TestAdmitAllocates0(t *testing.T) {
	ctx := context.Background()
	lim := must(adaptive.New(must(adaptive.NewFixed(1 << 20))))
	parts := must(adaptive.NewPartitions(lim, adaptive.Share{Name: "a", Fraction: 1}))
	q := must(adaptive.NewQueue(lim))
	s := must(shed.New(shed.WithCPU(func() int { return 0 })))
	b := must(breaker.New())
	bucket := must(rate.NewBucketLimiter(1e9, 1<<20))
	full := must(adaptive.New(must(adaptive.NewFixed(1))))
	held, _ := full.Acquire()
	defer held.Ignore()
	chain := must(ward.With(s, bucket, lim, b))
	for name, g := range map[string]ward.Guard{"limiter": lim, "partition": parts.Partition("a"), "queue": q, "shedder": s, "breaker": b, "bucket": bucket, "refused": full} {
		if n := testing.AllocsPerRun(200, func() {
			a, _ := g.Admit(ctx)
			a.End(ctx, nil)
		}); n != 0 {
			t.Errorf("%s: Admit+End allocates %v", name, n)
		}
	}
	if n := testing.AllocsPerRun(200, func() { _ = chain.Do(ctx, func(context.Context) error { return nil }) }); n != 0 {
		t.Errorf("Chain.Do allocates %v", n)
	}
	if !stripe.Race { // the race detector drops pooled values at random
		if n := testing.AllocsPerRun(200, func() {
			a, _ := chain.Admit(ctx)
			a.Pass()
		}); n != 0 {
			t.Errorf("Chain.Admit+Pass allocates %v", n)
		}
	}
}

// pushback is an error of the caller's own that carries a wait, as a server's pushback does.
type pushback struct{ wait time.Duration }

func (p pushback) Error() string             { return "pushback" }
func (p pushback) RetryAfter() time.Duration { return p.wait }
func (p pushback) Is(target error) bool      { return target == ward.ErrRefused }
func wrapped(err error) error                { return fmt.Errorf("call: %w", err) }

// TestOneWait: every wait is read through one method, RetryAfter() time.Duration: ward.RetryAfter
// reads a ward refusal's wait and an error of the caller's own alike, anywhere in the chain, and
// retry.Do honours both the same way.
func TestOneWait(t *testing.T) {
	now := int64(0)
	bucket := must(rate.NewBucketLimiter(1, 1, rate.WithClock(func() int64 { return now })))
	bucket.Allow()
	_, refusal := bucket.Admit(context.Background())
	for _, c := range []struct {
		err  error
		wait time.Duration
	}{{refusal, time.Second}, {wrapped(refusal), time.Second}, {pushback{3 * time.Second}, 3 * time.Second}, {wrapped(pushback{2 * time.Millisecond}), 2 * time.Millisecond}} {
		if w, ok := ward.RetryAfter(c.err); !ok || w != c.wait {
			t.Errorf("ward.RetryAfter(%v) = %v %v, want %v", c.err, w, ok, c.wait)
		}
		var slept []time.Duration
		tries := 0
		err := retry.Do(context.Background(), retry.Backoff{Base: time.Millisecond, Factor: 2, Cap: time.Second, Attempts: 2, Jitter: retry.Full},
			func(context.Context) error { tries++; return c.err },
			retry.WithSleep(func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil }))
		if err == nil || tries != 2 || len(slept) != 1 || slept[0] != c.wait {
			t.Errorf("retry.Do on %v: %d tries, slept %v; want 2 tries and one wait of %v", c.err, tries, slept, c.wait)
		}
	}
	if _, ok := ward.RetryAfter(errors.New("plain")); ok {
		t.Error("a plain error carries a wait")
	}
}

// TestOwnSentinels: the sentinels a guard or integration of the caller's own builds match what
// ward's own do, and a wait attached to a refusal is read back.
func TestOwnSentinels(t *testing.T) {
	over := ward.Refusal("mine: over")
	quota := ward.QuotaRefusal("mine: quota")
	bad := ward.Invalid("mine: invalid configuration")
	field := ward.Field(bad, "Size", -1, ">= 1")
	switch {
	case !errors.Is(over, ward.ErrRefused) || errors.Is(over, ward.ErrQuota) || over.Error() != "mine: over":
		t.Errorf("Refusal: %v", over)
	case !errors.Is(quota, ward.ErrRefused) || !errors.Is(quota, ward.ErrQuota):
		t.Errorf("QuotaRefusal: %v", quota)
	case !errors.Is(field, bad) || !errors.Is(field, ward.ErrInvalid) || field.Error() != "mine: invalid configuration: Size = -1, want >= 1":
		t.Errorf("Field: %v", field)
	}
	if w, ok := ward.RetryAfter(ward.WithWait(quota, time.Second)); !ok || w != time.Second {
		t.Errorf("WithWait: RetryAfter = %v %v", w, ok)
	}
	if err := ward.WithWait(quota, 0); err != quota {
		t.Errorf("WithWait(err, 0) = %v, want err itself", err)
	}
	if n := testing.AllocsPerRun(100, func() { _ = errors.Is(over, ward.ErrRefused) }); n != 0 {
		t.Errorf("matching a refusal allocates %v", n)
	}
}
