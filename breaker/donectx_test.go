package breaker

import (
	"context"
	"errors"
	"testing"
	"time"
)

// deadContexts are a context already canceled and one already past its deadline.
func deadContexts(t *testing.T) map[error]context.Context {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Unix(0, 0))
	t.Cleanup(cancel2)
	return map[error]context.Context{context.Canceled: canceled, context.DeadlineExceeded: expired}
}

// TestDoDoneContextSpendsNothing: Do with a context already done returns the context's error,
// never calls fn and records nothing: no success, no failure, no drop, no refusal.
func TestDoDoneContextSpendsNothing(t *testing.T) {
	now := int64(0)
	b, err := New(WithClock(func() int64 { return now }), WithRand(func() float64 { return 0 }), WithRefresh(0))
	if err != nil {
		t.Fatal(err)
	}
	for want, ctx := range deadContexts(t) {
		called := false
		got := b.Do(ctx, func(context.Context) error { called = true; return errors.New("backend down") })
		if got != want || called {
			t.Fatalf("Do(done ctx) = %v, fn called %v; want %v without calling fn", got, called, want)
		}
	}
	if s := b.Snapshot(); s != (Snapshot{}) {
		t.Fatalf("after Do with done contexts: %+v, want nothing recorded", s)
	}
	if err := b.Do(context.Background(), func(context.Context) error { return nil }); err != nil {
		t.Fatalf("a live Do after them: %v", err)
	}
	if s := b.Snapshot(); s.Successes != 1 {
		t.Fatalf("a live Do recorded %+v, want one success", s)
	}
}
