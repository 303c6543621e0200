package shed

import (
	"context"
	"testing"
	"time"
)

// TestDoDoneContextSpendsNothing: Do with a context already done returns the context's error,
// never calls fn, never enters flight and records no response time.
func TestDoDoneContextSpendsNothing(t *testing.T) {
	now := int64(0)
	s, err := New(WithClock(func() int64 { return now }), WithCPU(func() int { return 0 }), WithRefresh(0), WithSampleEvery(1))
	if err != nil {
		t.Fatal(err)
	}
	before := s.Snapshot()
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel2()
	for want, ctx := range map[error]context.Context{context.Canceled: canceled, context.DeadlineExceeded: expired} {
		called := false
		got := s.Do(ctx, func(context.Context) error { called = true; now += int64(time.Second); return nil })
		if got != want || called {
			t.Fatalf("Do(done ctx) = %v, fn called %v; want %v without calling fn", got, called, want)
		}
	}
	if after := s.Snapshot(); after != before {
		t.Fatalf("after Do with done contexts: %+v, want %+v", after, before)
	}
	if err := s.Do(context.Background(), func(context.Context) error { return nil }); err != nil {
		t.Fatalf("a live Do after them: %v", err)
	}
}
