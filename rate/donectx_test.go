package rate

import (
	"context"
	"testing"
	"time"
)

// TestDoDoneContextSpendsNothing: every limiter's Do with a context already done returns the
// context's error without calling fn and without spending: the allowance is whole afterwards.
func TestDoDoneContextSpendsNothing(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel2()
	now := int64(1e9)
	for name, l := range limiters(t, func() int64 { return now }) {
		for want, ctx := range map[error]context.Context{context.Canceled: canceled, context.DeadlineExceeded: expired} {
			called := false
			got := l.Do(ctx, func(context.Context) error { called = true; return nil })
			if got != want || called {
				t.Fatalf("%s: Do(done ctx) = %v, fn called %v; want %v without calling fn", name, got, called, want)
			}
		}
		if left := l.Left(now); left != 2 {
			t.Fatalf("%s: %d left after Do with done contexts, want the whole allowance of 2", name, left)
		}
	}
}
