package adaptive

import (
	"context"
	"testing"
	"time"
)

// deadContexts are a context already canceled and one already past its deadline, by the error
// each returns.
func deadContexts(t *testing.T) map[error]context.Context {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Unix(0, 0))
	t.Cleanup(cancel2)
	return map[error]context.Context{context.Canceled: canceled, context.DeadlineExceeded: expired}
}

// TestDoDoneContextSpendsNothing: Limiter.Do, Partition.Do, Queue.Do and Queue.Acquire with a
// context already done return the context's error without calling fn, taking a slot or
// recording a sample, although a slot is free.
func TestDoDoneContextSpendsNothing(t *testing.T) {
	now := int64(0)
	rule := &recorder{limit: 1}
	l, err := New(rule, WithClock(func() int64 { return now }), WithSampleEvery(1))
	if err != nil {
		t.Fatal(err)
	}
	q, err := NewQueue(l)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := NewPartitions(l, Share{Name: "a", Fraction: 1})
	if err != nil {
		t.Fatal(err)
	}
	before := l.Snapshot()
	dos := map[string]func(context.Context, func(context.Context) error) error{
		"Limiter.Do": l.Do, "Queue.Do": q.Do, "Partition.Do": ps.Partition("a").Do,
		"Queue.Acquire": func(ctx context.Context, fn func(context.Context) error) error {
			s, err := q.Acquire(ctx)
			if err == nil {
				s.Pass()
				return fn(ctx)
			}
			return err
		},
	}
	for name, do := range dos {
		for want, ctx := range deadContexts(t) {
			called := false
			got := do(ctx, func(context.Context) error { called = true; now += int64(time.Second); return nil })
			if got != want || called {
				t.Fatalf("%s(done ctx) = %v, fn called %v; want %v without calling fn", name, got, called, want)
			}
		}
	}
	if after := l.Snapshot(); after != before || len(rule.got) != 0 {
		t.Fatalf("after Do with done contexts: %+v and %d samples, want %+v and none", after, len(rule.got), before)
	}
	if err := l.Do(context.Background(), func(context.Context) error { return nil }); err != nil {
		t.Fatalf("a live Do after them: %v", err)
	}
}
