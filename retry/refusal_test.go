package retry

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wardgo/ward/failurewindow"
	"github.com/wardgo/ward/internal/contract"
)

var errBusy = contract.Refusal("test: busy")

// TestDoRefusals: a ward refusal is not retried unless it carries a wait; that wait is slept
// exactly, as a server's pushback is, and resets the backoff. WithRetryIf narrows this and never
// widens it.
func TestDoRefusals(t *testing.T) {
	rigid := DefaultBackoff()
	rigid.Jitter, rigid.Attempts = Rigid, 6
	down := errors.New("down")
	always := WithRetryIf(func(error) bool { return true })
	never := WithRetryIf(func(err error) bool { return !errors.Is(err, contract.ErrRefused) })
	for _, c := range []struct {
		name  string
		errs  []error // what each call returns; past the end, success
		opts  []Option
		calls int
		slept string
		err   bool
	}{
		{"refusal without a wait: returned at once", []error{errBusy}, nil, 1, "[]", true},
		{"wrapped", []error{fmt.Errorf("call: %w", errBusy)}, nil, 1, "[]", true},
		{"after the backoff", []error{down, errBusy}, nil, 2, "[100ms]", true},
		{"WithRetryIf does not widen", []error{errBusy}, []Option{always}, 1, "[]", true},
		{"refusal with a wait: slept exactly, then the backoff starts over",
			[]error{down, down, contract.Wait(errBusy, 3*time.Second), down, down}, nil,
			6, "[100ms 200ms 3s 100ms 200ms]", false},
		{"wrapped with a wait", []error{fmt.Errorf("call: %w", contract.Wait(errBusy, 1500*ms))}, nil, 2, "[1.5s]", false},
		{"WithRetryIf narrows", []error{contract.Wait(errBusy, time.Second)}, []Option{never}, 1, "[]", true},
		{"a Hinted error is read first", []error{fmt.Errorf("%w %w", hinted{2 * time.Second}, errBusy)}, nil, 2, "[2s]", false},
	} {
		var slept []time.Duration
		sleep := func(ctx context.Context, d time.Duration) error { slept = append(slept, d); return ctx.Err() }
		calls := 0
		err := Do(context.Background(), rigid, func(context.Context) error {
			calls++
			if calls <= len(c.errs) {
				return c.errs[calls-1]
			}
			return nil
		}, append([]Option{WithSleep(sleep)}, c.opts...)...)
		if calls != c.calls || fmt.Sprint(slept) != c.slept || (err != nil) != c.err {
			t.Errorf("%s: %d calls, slept %v, err %v; want %d calls, slept %s, error %v", c.name, calls, slept, err, c.calls, c.slept, c.err)
		}
		if c.err && err != c.errs[len(c.errs)-1] {
			t.Errorf("%s: returned %v, want fn's last error unchanged", c.name, err)
		}
	}
}

// TestDoFailureWindow: retrying a call guarded by a failure window, whose refusals carry the wait
// until the key passes: Do sleeps that wait and the next try is admitted.
func TestDoFailureWindow(t *testing.T) {
	now := int64(0)
	w, err := failurewindow.New(1, time.Minute, failurewindow.WithClock(func() int64 { return now }))
	if err != nil {
		t.Fatal(err)
	}
	w.Record("backend")
	now = int64(20 * time.Second)
	var slept []time.Duration
	sleep := func(_ context.Context, d time.Duration) error { slept = append(slept, d); now += int64(d); return nil }
	calls := 0
	err = Do(context.Background(), DefaultBackoff(), func(ctx context.Context) error {
		return w.Do(ctx, "backend", func(context.Context) error { calls++; return nil })
	}, WithSleep(sleep))
	if err != nil || calls != 1 || fmt.Sprint(slept) != "[40s]" {
		t.Fatalf("err %v, %d calls, slept %v; want one call after sleeping the refusal's 40s", err, calls, slept)
	}
}

// TestDoOptionErrors: a nil option or a nil function given to an option is a configuration error
// naming it, and fn is not called.
func TestDoOptionErrors(t *testing.T) {
	for name, o := range map[string]Option{
		"option 0":    nil,
		"WithSleep":   WithSleep(nil),
		"WithRand":    WithRand(nil),
		"WithRetryIf": WithRetryIf(nil),
	} {
		err := Do(context.Background(), DefaultBackoff(), func(context.Context) error { t.Fatal("fn called"); return nil }, o)
		if !errors.Is(err, ErrInvalid) || !errors.Is(err, contract.ErrInvalid) || !strings.Contains(err.Error(), name+" = nil") {
			t.Errorf("%s: %v, want ErrInvalid naming it", name, err)
		}
	}
}

// TestRetryIfNarrowsTogether: a second WithRetryIf narrows what the first allows instead of
// replacing it; the first replaces the default (so it may retry a deadline).
func TestRetryIfNarrowsTogether(t *testing.T) {
	errA, errB := errors.New("a"), errors.New("b")
	notA := WithRetryIf(func(err error) bool { return !errors.Is(err, errA) })
	notB := WithRetryIf(func(err error) bool { return !errors.Is(err, errB) })
	all := WithRetryIf(func(error) bool { return true })
	sleep := WithSleep(func(context.Context, time.Duration) error { return nil })
	b := DefaultBackoff()
	for _, c := range []struct {
		name  string
		err   error
		opts  []Option
		calls int
	}{
		{"first allows, second refuses", errB, []Option{notA, notB}, 1},
		{"first refuses, second allows", errA, []Option{notA, notB}, 1},
		{"both allow", errors.New("c"), []Option{notA, notB}, 3},
		{"one replaces the default", context.DeadlineExceeded, []Option{all}, 3},
		{"the default", context.DeadlineExceeded, nil, 1},
	} {
		calls := 0
		_ = Do(context.Background(), b, func(context.Context) error { calls++; return c.err }, append(c.opts, sleep)...)
		if calls != c.calls {
			t.Errorf("%s: %d calls, want %d", c.name, calls, c.calls)
		}
	}
}
