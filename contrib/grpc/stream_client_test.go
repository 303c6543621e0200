package wardgrpc

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/wardgo/ward"
)

// eventually waits, yielding, until cond holds: a settle from a context's end runs on the
// goroutine context.AfterFunc starts. The bound only turns a hang into a failure.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); runtime.Gosched() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
	}
}

// TestClientStreamHeld: a client stream counts against an adaptive limit of 1 for its whole
// life: a second stream is refused, without being opened, until the first ends.
func TestClientStreamHeld(t *testing.T) {
	lim := fixed(t, 1)
	var do behaviour
	c := serveDial(t, &do, []grpc.DialOption{grpc.WithChainStreamInterceptor(StreamClientInterceptor(lim))})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := watching(t, c, ctx)
	if n := lim.InFlight(); n != 1 {
		t.Fatalf("in flight %d with a stream open, want 1", n)
	}
	_, err := c.Watch(context.Background(), &healthpb.HealthCheckRequest{})
	if status.Code(err) != codes.Unavailable || !errors.Is(err, ward.ErrRefused) {
		t.Fatalf("second stream while the first is open: %v, want a refusal, Unavailable", err)
	}
	cancel() // the first ends
	if _, err := w.Recv(); status.Code(err) != codes.Canceled {
		t.Fatalf("first stream after cancel: %v, want Canceled", err)
	}
	eventually(t, "the ended stream frees its slot", func() bool { return lim.InFlight() == 0 })
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	w2, err := c.Watch(ctx2, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatalf("a stream after the first ended: %v", err)
	}
	if _, err := w2.Recv(); err != nil {
		t.Fatalf("a stream after the first ended: %v", err)
	}
}

// recorder is a guard of the test's own (a ward.Guard written outside ward) whose admissions
// record how they settle; it admits everything.
type recorder struct {
	mu       sync.Mutex
	outcomes []string
	held     int
	settled  map[int64]bool
}

func (r *recorder) Do(ctx context.Context, fn func(context.Context) error) error { return fn(ctx) }
func (r *recorder) Now() int64                                                   { return 0 }
func (r *recorder) Admit(context.Context) (ward.Admission, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.held++
	return ward.Admitted(r, int64(r.held), 0), nil
}

// Settle records o for admission id.
func (r *recorder) Settle(id, _ int64, o ward.Outcome) {
	r.mu.Lock()
	defer r.mu.Unlock()
	name := [...]string{ward.Pass: "Pass", ward.Fail: "Fail", ward.Ignore: "Ignore"}[o]
	if r.settled[id] {
		name = "twice: " + name
	}
	if r.settled == nil {
		r.settled = map[int64]bool{}
	}
	r.settled[id] = true
	r.outcomes = append(r.outcomes, name)
}

// End classifies err as ward's contract does, any other error a failure.
func (r *recorder) End(ctx context.Context, id, b int64, err error) {
	r.Settle(id, b, ward.Classify(ctx, err, ward.Fail))
}

func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.outcomes...)
}

// TestClientStreamSettles: a held stream settles once, when it ends, by its final status: the
// server's overload error Fail, the caller's error codes and a clean end Pass, the client's
// cancellation Ignore, a deadline Fail.
func TestClientStreamSettles(t *testing.T) {
	block := func(ctx context.Context) error { <-ctx.Done(); return status.FromContextError(ctx.Err()).Err() }
	for _, c := range []struct {
		name   string
		server behaviour
		end    func(cancel context.CancelFunc) // how the client ends it (nil: it reads to the end)
		dead   bool                            // a deadline already near
		want   string
	}{
		{"server Unavailable", func(context.Context) error { return status.Error(codes.Unavailable, "x") }, nil, false, "Fail"},
		{"server Internal", func(context.Context) error { return status.Error(codes.Internal, "x") }, nil, false, "Fail"},
		{"server NotFound", func(context.Context) error { return status.Error(codes.NotFound, "x") }, nil, false, "Pass"},
		{"server ends cleanly", func(context.Context) error { return nil }, nil, false, "Pass"},
		{"client cancels", block, func(cancel context.CancelFunc) { cancel() }, false, "Ignore"},
		{"deadline", block, nil, true, "Fail"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := &recorder{}
			do := c.server
			cl := serveDial(t, &do, []grpc.DialOption{grpc.WithChainStreamInterceptor(StreamClientInterceptor(rec))})
			ctx, cancel := context.WithCancel(context.Background())
			if c.dead {
				ctx, cancel = context.WithTimeout(context.Background(), time.Millisecond)
			}
			defer cancel()
			w, err := cl.Watch(ctx, &healthpb.HealthCheckRequest{})
			switch {
			case err != nil && c.dead && status.Code(err) == codes.DeadlineExceeded:
				// The deadline passed while the stream was being opened (a loaded machine):
				// the opening failed by its deadline, which settles as the stream's end would.
			case err != nil:
				t.Fatal(err)
			default:
				if got := rec.got(); len(got) != 0 {
					t.Fatalf("settled %v while open", got)
				}
				if c.end != nil {
					c.end(cancel)
				}
				for err == nil {
					_, err = w.Recv()
				}
			}
			eventually(t, "the stream settles", func() bool { return len(rec.got()) > 0 })
			if w != nil {
				_, _ = w.Recv() // reading again settles nothing more
			}
			cancel() // nor does the context ending after
			if got := rec.got(); len(got) != 1 || got[0] != c.want || rec.held != 1 {
				t.Fatalf("ended with %v: settled %v (held %d), want [%s] once", err, got, rec.held, c.want)
			}
		})
	}
}

// watching opens a Watch stream and reads its first message, SERVING.
func watching(t *testing.T, c healthpb.HealthClient, ctx context.Context) healthpb.Health_WatchClient {
	t.Helper()
	w, err := c.Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := w.Recv(); err != nil || r.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("first message: %v %v", r, err)
	}
	return w
}
