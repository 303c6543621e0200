package failurewindow

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/wardgo/ward/internal/contract"
)

var (
	errWrongPassword = errors.New("wrong password")
	errNoSuchUser    = errors.New("no such user")
	errLocked        = errors.New("account locked")
)

// TestDoClassifies: which of fn's outcomes Do counts as a failure of the key. Only a failure is
// recorded: a deadline, an error WithFailure accepts, any other error that is not the caller's
// own. A success, the caller's cancellation and the caller's own errors record nothing; fn's
// error comes back unchanged.
func TestDoClassifies(t *testing.T) {
	// the caller gives up while fn runs: fn cancels it (a context done before Do is refused)
	cancelled, cancel := context.WithCancel(context.Background())
	defer cancel()
	own := func(err error) bool { return errors.Is(err, errNoSuchUser) || errors.Is(err, errLocked) }
	fail := func(err error) bool { return errors.Is(err, errLocked) }
	for _, c := range []struct {
		name   string
		ctx    context.Context
		err    error
		record bool
	}{
		{"success", context.Background(), nil, false},
		{"other error", context.Background(), errWrongPassword, true},
		{"wrapped other error", context.Background(), fmt.Errorf("login: %w", errWrongPassword), true},
		{"deadline", context.Background(), context.DeadlineExceeded, true},
		{"own error", context.Background(), errNoSuchUser, false},
		{"own error WithFailure accepts", context.Background(), errLocked, true},
		{"caller cancelled", cancelled, context.Canceled, false},
		{"canceled while ctx is live", context.Background(), context.Canceled, true},
	} {
		w, err := New(1, time.Minute, WithClock(func() int64 { return 0 }), WithOwnError(own), WithFailure(fail))
		if err != nil {
			t.Fatal(err)
		}
		calls := 0
		got := w.Do(c.ctx, "k", func(ctx context.Context) error {
			if ctx != c.ctx {
				t.Errorf("%s: fn got another context", c.name)
			}
			calls++
			if ctx == cancelled {
				cancel()
			}
			return c.err
		})
		if got != c.err || calls != 1 {
			t.Errorf("%s: Do = %v after %d calls, want fn's error %v unchanged after 1", c.name, got, calls, c.err)
		}
		if recorded := w.Snapshot().Stored == 1; recorded != c.record {
			t.Errorf("%s: recorded %v, want %v", c.name, recorded, c.record)
		}
	}
}

// TestDoRefuses: a key at its limit is refused without calling fn, with ErrTooManyFailures
// carrying the wait; the wait runs out exactly when AdmitAt would pass.
func TestDoRefuses(t *testing.T) {
	now := int64(0)
	w, _ := New(2, 10*time.Second, WithClock(func() int64 { return now }))
	failing := func(context.Context) error { return errWrongPassword }
	for i := 0; i < 2; i++ {
		now = int64(i) * sec
		if err := w.Do(context.Background(), "k", failing); err != errWrongPassword {
			t.Fatalf("failure %d: Do = %v", i, err)
		}
	}
	now = 3 * sec
	err := w.Do(context.Background(), "k", func(context.Context) error { t.Fatal("fn called on a refusal"); return nil })
	if !errors.Is(err, ErrTooManyFailures) || !errors.Is(err, contract.ErrRefused) {
		t.Fatalf("refusal %v: want ErrTooManyFailures and ErrRefused", err)
	}
	if wait, ok := contract.RetryAfter(err); !ok || wait != 7*time.Second {
		t.Fatalf("refusal waits %v, %v; want 7s", wait, ok)
	}
	now = 10 * sec // the failure at 0 s is out: one remains
	if err := w.Do(context.Background(), "k", func(context.Context) error { return nil }); err != nil {
		t.Fatalf("after the wait: %v", err)
	}
	if s := w.Snapshot(); s.Stored != 2 {
		t.Fatalf("stored %d; a refusal and a success record nothing", s.Stored)
	}
}

// TestDoPanic: a panicking fn is recorded as a failure of the key, and the panic continues.
func TestDoPanic(t *testing.T) {
	w := newWindow(t, 1, time.Minute)
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Fatalf("recovered %v, want the panic to continue", r)
			}
		}()
		_ = w.Do(context.Background(), "k", func(context.Context) error { panic("boom") })
	}()
	if ok, _ := w.AdmitAt("k", 0); ok {
		t.Fatal("a panic was not recorded")
	}
}

// TestDoAllocs: Do admitting, with or without a failure to record, allocates nothing once the
// key's ring has its size; a refusal allocates its wait.
func TestDoAllocs(t *testing.T) {
	now := int64(0)
	w, _ := New(3, 2*time.Second, WithClock(func() int64 { return now }))
	ctx := context.Background()
	pass := func(context.Context) error { return nil }
	fail := func(context.Context) error { return errWrongPassword }
	w.Record("at limit")
	w.Record("at limit")
	w.Record("at limit")
	if a := testing.AllocsPerRun(1000, func() { _ = w.Do(ctx, "fresh", pass) }); a != 0 {
		t.Errorf("Do, a success: %v allocations", a)
	}
	if a := testing.AllocsPerRun(1000, func() { _ = w.Do(ctx, "at limit", pass) }); a != 1 {
		t.Errorf("Do, a refusal: %v allocations, want 1 (its wait)", a)
	}
	// a failure a second after the last, in a window of two: one stamp leaves as one comes
	if a := testing.AllocsPerRun(1000, func() { now += sec; _ = w.Do(ctx, "failing", fail) }); a != 0 {
		t.Errorf("Do, a failure recorded: %v allocations", a)
	}
}

// TestNow: Now is the Window's clock, the one Admit, Record and Do decide at.
func TestNow(t *testing.T) {
	now := int64(42)
	w, _ := New(1, time.Minute, WithClock(func() int64 { return now }))
	if w.Now() != 42 {
		t.Fatalf("Now = %d, want the injected clock's 42", w.Now())
	}
	w.Record("k")
	now = 42 + int64(time.Minute) - 1
	if ok, _ := w.AdmitAt("k", w.Now()); ok {
		t.Fatal("Record did not stamp at Now")
	}
	d, _ := New(1, time.Minute)
	if a, b := d.Now(), d.Now(); b < a {
		t.Fatalf("the default clock went backwards: %d then %d", a, b)
	}
}

// TestDoDoneContextSpendsNothing: Do with a context already done returns the context's error
// without calling fn and records no failure, although a deadline is a failure when fn returns it.
func TestDoDoneContextSpendsNothing(t *testing.T) {
	w, err := New(1, time.Minute, WithClock(func() int64 { return 0 }))
	if err != nil {
		t.Fatal(err)
	}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel2()
	for want, ctx := range map[error]context.Context{context.Canceled: canceled, context.DeadlineExceeded: expired} {
		called := false
		got := w.Do(ctx, "k", func(ctx context.Context) error { called = true; return ctx.Err() })
		if got != want || called {
			t.Fatalf("Do(done ctx) = %v, fn called %v; want %v without calling fn", got, called, want)
		}
	}
	if ok, _ := w.AdmitAt("k", 0); !ok || w.Snapshot().Stored != 0 {
		t.Fatalf("after Do with done contexts: admitted %v, %d stored; want the key clean", ok, w.Snapshot().Stored)
	}
}
