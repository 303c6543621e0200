package contract

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestSentinels(t *testing.T) {
	r := Refusal("x: refused")
	if !errors.Is(r, ErrRefused) || errors.Is(r, ErrInvalid) || r.Error() != "x: refused" {
		t.Fatalf("Refusal: %v", r)
	}
	w := Wait(r, time.Second)
	if !errors.Is(w, r) || !errors.Is(w, ErrRefused) {
		t.Fatalf("Wait(%v) does not match its sentinel", w)
	}
	if d, ok := RetryAfter(w); !ok || d != time.Second {
		t.Fatalf("RetryAfter = %v %v", d, ok)
	}
	if Wait(r, 0) != r {
		t.Fatal("a zero wait is not attached")
	}
	if _, ok := RetryAfter(r); ok {
		t.Fatal("a bare sentinel has no wait")
	}
	if a := testing.AllocsPerRun(100, func() { _ = Wait(r, 0) }); a != 0 {
		t.Fatalf("a bare refusal allocates %v", a)
	}
	inv := Invalid("x: invalid")
	f := Field(inv, "Policy.K", -1, "> 0")
	if !errors.Is(f, inv) || !errors.Is(f, ErrInvalid) || !strings.Contains(f.Error(), "Policy.K = -1, want > 0") {
		t.Fatalf("Field: %v", f)
	}
}

type cfg struct{ n int }

func TestApply(t *testing.T) {
	inv := Invalid("x: invalid")
	var c cfg
	set := func(n int) func(*cfg) error { return func(c *cfg) error { c.n = n; return nil } }
	if err := Apply(inv, &c, []func(*cfg) error{set(1), set(2)}); err != nil || c.n != 2 {
		t.Fatalf("Apply: %v %d", err, c.n)
	}
	if err := Apply(inv, &c, []func(*cfg) error{set(1), nil}); !errors.Is(err, inv) || !strings.Contains(err.Error(), "option 1") {
		t.Fatalf("nil option: %v", err)
	}
}

func TestClassify(t *testing.T) {
	live := context.Background()
	done, cancel := context.WithCancel(context.Background())
	cancel()
	notFound := errors.New("not found")
	overload := errors.New("overloaded")
	own := func(err error) bool { return err == notFound }
	fail := func(err error) bool { return err == overload }
	for _, c := range []struct {
		ctx  context.Context
		err  error
		want Outcome
	}{
		{live, nil, Pass},
		{done, context.Canceled, Ignore},
		{live, context.Canceled, Fail}, // not the caller's: the callee gave up
		{live, context.DeadlineExceeded, Fail},
		{done, context.DeadlineExceeded, Fail},
		{live, overload, Fail},
		{live, notFound, Pass},
		{live, errors.New("other"), Fail},
	} {
		if got := Classify(c.ctx, c.err, own, fail, Pass, Fail); got != c.want {
			t.Errorf("Classify(ctx done %v, %v) = %v, want %v", c.ctx.Err() != nil, c.err, got, c.want)
		}
	}
	if got := Classify(live, errors.New("other"), nil, nil, Pass, Ignore); got != Ignore {
		t.Errorf("other error with otherAs Ignore: %v", got)
	}
}

func TestSet(t *testing.T) {
	inv := Invalid("x: invalid")
	var clock func() int64
	if err := Set(inv, "WithClock", &clock, func() int64 { return 7 }); err != nil || clock() != 7 {
		t.Fatalf("Set: %v", err)
	}
	if err := Set(inv, "WithClock", &clock, nil); !errors.Is(err, inv) || !strings.Contains(err.Error(), "WithClock = nil") || clock() != 7 {
		t.Fatalf("Set(nil): %v, and the clock must be left as it was", err)
	}
}

func TestHook(t *testing.T) {
	inv := Invalid("x: invalid")
	var got int
	var hook func(int)
	if err := Hook(inv, "WithEvents", &hook, func(n int) { got = n }); err != nil {
		t.Fatal(err)
	}
	hook(3)
	if err := Hook(inv, "WithEvents", &hook, nil); got != 3 || !errors.Is(err, inv) {
		t.Fatalf("Hook(nil): %v, got %d", err, got)
	}
}

func TestDead(t *testing.T) {
	if err := Dead(context.Background()); err != nil {
		t.Fatalf("Dead(Background) = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := Dead(ctx); err != nil {
		t.Fatalf("Dead(live) = %v", err)
	}
	cancel()
	if err := Dead(ctx); err != context.Canceled {
		t.Fatalf("Dead(canceled) = %v, want context.Canceled", err)
	}
	dl, cancel2 := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel2()
	if err := Dead(dl); err != context.DeadlineExceeded {
		t.Fatalf("Dead(expired) = %v, want context.DeadlineExceeded", err)
	}
	if a := testing.AllocsPerRun(100, func() { _ = Dead(context.Background()) }); a != 0 {
		t.Fatalf("Dead allocates %v", a)
	}
}
