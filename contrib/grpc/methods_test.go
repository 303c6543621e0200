package wardgrpc

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"
	"google.golang.org/grpc/test/bufconn"

	"github.com/wardgo/ward"
	"github.com/wardgo/ward/rate"
)

const (
	checkMethod = "/grpc.health.v1.Health/Check"
	listMethod  = "/grpc.health.v1.Health/List"
)

func TestByMethodInvalid(t *testing.T) {
	lim := fixed(t, 1)
	for _, c := range []struct {
		guards   map[string]ward.Guard
		fallback ward.Guard
		names    string
	}{
		{nil, nil, "fallback"},
		{map[string]ward.Guard{}, nil, "fallback"},
		{map[string]ward.Guard{checkMethod: nil}, lim, checkMethod},
		{map[string]ward.Guard{"grpc.health.v1.Health/Check": lim}, nil, "grpc.health.v1.Health/Check"},
		{map[string]ward.Guard{"/grpc.health.v1.Health": lim}, nil, "/grpc.health.v1.Health"},
		{map[string]ward.Guard{"/a/b/c": lim}, nil, "/a/b/c"},
		{map[string]ward.Guard{"//Check": lim}, nil, "//Check"},
		{map[string]ward.Guard{"/svc/": lim}, nil, "/svc/"},
	} {
		m, err := ByMethod(c.guards, c.fallback)
		if m != nil || !errors.Is(err, ErrInvalid) || !errors.Is(err, ward.ErrInvalid) || !strings.Contains(err.Error(), c.names) {
			t.Errorf("ByMethod(%v, %v) = %v, %v; want ErrInvalid naming %q", c.guards, c.fallback, m, err, c.names)
		}
	}
	m, err := ByMethod(map[string]ward.Guard{checkMethod: lim}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.Guard(checkMethod) != lim || m.Guard(listMethod) != nil {
		t.Fatal("Guard: want the listed method's guard, and nil for another without a fallback")
	}
}

// tapServer starts a bufconn server with the health service and opts, whose handlers first run
// *do (when set) and count in reached; it returns the client connection.
func tapServer(t *testing.T, do *behaviour, reached *atomic.Int64, opts ...grpc.ServerOption) *grpc.ClientConn {
	t.Helper()
	count := func(ctx context.Context) error {
		reached.Add(1)
		if *do != nil {
			return (*do)(ctx)
		}
		return nil
	}
	lis := bufconn.Listen(1 << 16)
	opts = append(opts,
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if err := count(ctx); err != nil {
				return nil, err
			}
			return h(ctx, req)
		}))
	srv := grpc.NewServer(opts...)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go func() { _ = srv.Serve(lis) }()
	cc, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close(); srv.Stop() })
	ready(t, cc)
	return cc
}

// TestByMethodServer: one interceptor, a guard per method and a fallback for the rest.
func TestByMethodServer(t *testing.T) {
	checkLim := fixed(t, 1)
	rec := &recorder{}
	m, err := ByMethod(map[string]ward.Guard{checkMethod: checkLim}, rec)
	if err != nil {
		t.Fatal(err)
	}
	var do behaviour
	var reached atomic.Int64
	c := healthpb.NewHealthClient(tapServer(t, &do, &reached, grpc.ChainUnaryInterceptor(m.UnaryServerInterceptor())))
	ctx := context.Background()

	lease, _ := checkLim.Acquire() // Check's only slot is taken
	if _, err := c.Check(ctx, &healthpb.HealthCheckRequest{}); status.Code(err) != codes.Unavailable {
		t.Fatalf("Check with its slot taken: %v, want Unavailable", err)
	}
	if _, err := c.List(ctx, &healthpb.HealthListRequest{}); err != nil {
		t.Fatalf("List, on the fallback: %v", err)
	}
	if got := rec.got(); !slices.Equal(got, []string{"Pass"}) {
		t.Fatalf("the fallback settled %v, want [Pass] (List only)", got)
	}
	lease.Pass()
	if _, err := c.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatalf("Check with its slot free: %v", err)
	}
	if n := reached.Load(); n != 2 {
		t.Fatalf("handlers reached %d times, want 2 (List, the second Check)", n)
	}

	// Without a fallback an unlisted method is not guarded.
	m2, _ := ByMethod(map[string]ward.Guard{checkMethod: checkLim}, nil)
	c2 := healthpb.NewHealthClient(tapServer(t, &do, &reached, grpc.ChainUnaryInterceptor(m2.UnaryServerInterceptor())))
	lease, _ = checkLim.Acquire()
	defer lease.Pass()
	if _, err := c2.List(ctx, &healthpb.HealthListRequest{}); err != nil {
		t.Fatalf("List, unguarded: %v", err)
	}
}

// TestTap: the tap admits before the request is read, the interceptor settles that admission
// (admitting nothing again), a refusal at the tap never reaches the handler.
func TestTap(t *testing.T) {
	rec := &recorder{}
	m, err := ByMethod(nil, rec)
	if err != nil {
		t.Fatal(err)
	}
	var do behaviour
	var reached atomic.Int64
	cc := tapServer(t, &do, &reached, grpc.InTapHandle(m.Tap),
		grpc.ChainUnaryInterceptor(m.UnaryServerInterceptor()), grpc.ChainStreamInterceptor(m.StreamServerInterceptor()))
	c := healthpb.NewHealthClient(cc)
	ctx := context.Background()
	if _, err := c.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	do = func(context.Context) error { return status.Error(codes.Unavailable, "backend down") }
	if _, err := c.Check(ctx, &healthpb.HealthCheckRequest{}); status.Code(err) != codes.Unavailable {
		t.Fatalf("failing handler: %v", err)
	}
	do = func(context.Context) error { return status.Error(codes.NotFound, "no such service") }
	c.Check(ctx, &healthpb.HealthCheckRequest{})
	do = nil
	rec.mu.Lock()
	admitted := rec.held
	rec.mu.Unlock()
	if got := rec.got(); admitted != 3 || !slices.Equal(got, []string{"Pass", "Fail", "Pass"}) {
		t.Fatalf("three calls: admitted %d times, settled %v; want 3 and [Pass Fail Pass]", admitted, got)
	}

	// A refusal at the tap: the handler is never reached, the status is the refusal's.
	for _, c := range []struct {
		name  string
		guard func() ward.Guard
		code  codes.Code
	}{
		{"overload", func() ward.Guard { l := fixed(t, 1); l.Acquire(); return l }, codes.Unavailable},
		{"quota", func() ward.Guard {
			now := int64(0)
			b, _ := rate.NewBucketLimiter(1, 1, rate.WithClock(func() int64 { return now }))
			b.Allow()
			return b
		}, codes.ResourceExhausted},
	} {
		m, _ := ByMethod(map[string]ward.Guard{checkMethod: c.guard()}, nil)
		var reached atomic.Int64
		cl := healthpb.NewHealthClient(tapServer(t, &do, &reached, grpc.InTapHandle(m.Tap), grpc.ChainUnaryInterceptor(m.UnaryServerInterceptor())))
		var trailer metadata.MD
		_, err := cl.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Trailer(&trailer))
		if status.Code(err) != c.code || reached.Load() != 0 {
			t.Fatalf("%s at the tap: %v, handler reached %d times; want %v and 0", c.name, err, reached.Load(), c.code)
		}
		if _, err := cl.List(ctx, &healthpb.HealthListRequest{}); err != nil || reached.Load() != 1 {
			t.Fatalf("%s: an unguarded method: %v, reached %d; want it served", c.name, err, reached.Load())
		}
	}
}

// TestTapNeverRuns: an admission made at the tap for a call that never reaches the interceptor
// (an unknown method; a server without the interceptors) settles when the call's context ends,
// neutrally: nothing stays held.
func TestTapNeverRuns(t *testing.T) {
	ctx := context.Background()
	for _, withInterceptors := range []bool{true, false} {
		rec := &recorder{}
		m, _ := ByMethod(nil, rec)
		opts := []grpc.ServerOption{grpc.InTapHandle(m.Tap)}
		if withInterceptors {
			opts = append(opts, grpc.ChainUnaryInterceptor(m.UnaryServerInterceptor()))
		}
		var do behaviour
		var reached atomic.Int64
		cc := tapServer(t, &do, &reached, opts...)
		if withInterceptors {
			err := cc.Invoke(ctx, "/grpc.health.v1.Health/Nope", &healthpb.HealthCheckRequest{}, &healthpb.HealthCheckResponse{})
			if status.Code(err) != codes.Unimplemented {
				t.Fatalf("unknown method: %v, want Unimplemented", err)
			}
		} else if _, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
			t.Fatalf("Check on a server with the tap only: %v", err)
		}
		eventually(t, "the tapped admission settles when its call ends", func() bool { return len(rec.got()) == 1 })
		if got := rec.got(); got[0] != "Ignore" {
			t.Fatalf("interceptors %v: settled %v, want [Ignore]", withInterceptors, got)
		}
	}
}

// TestTapSettlesOnce drives the tap and the interceptor directly: a call's context ending
// before the interceptor runs settles the admission by how it ended (canceled: neutral; its
// deadline: a failure); a panicking handler settles it as a failure, and the context's end
// later settles nothing more.
func TestTapSettlesOnce(t *testing.T) {
	info := &tap.Info{FullMethodName: checkMethod}
	tapped := func(ctx context.Context) (*recorder, *Methods, context.Context) {
		t.Helper()
		rec := &recorder{}
		m, _ := ByMethod(nil, rec)
		tctx, err := m.Tap(ctx, info)
		if err != nil {
			t.Fatal(err)
		}
		return rec, m, tctx
	}

	// Canceled before the interceptor runs: neutral.
	ctx, cancel := context.WithCancel(context.Background())
	rec, _, _ := tapped(ctx)
	cancel()
	eventually(t, "a canceled call settles", func() bool { return len(rec.got()) == 1 })
	if got := rec.got(); got[0] != "Ignore" {
		t.Fatalf("canceled before the handler: %v, want [Ignore]", got)
	}

	// Its deadline passes before the interceptor runs: a failure.
	ctx, cancel = context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	rec, _, _ = tapped(ctx)
	eventually(t, "a call past its deadline settles", func() bool { return len(rec.got()) == 1 })
	if got := rec.got(); got[0] != "Fail" {
		t.Fatalf("deadline before the handler: %v, want [Fail]", got)
	}

	// A context already done: the tap admits nothing and answers with its status.
	rec = &recorder{}
	m, _ := ByMethod(nil, rec)
	done, doneCancel := context.WithCancel(context.Background())
	doneCancel()
	if _, err := m.Tap(done, info); status.Code(err) != codes.Canceled || rec.held != 0 {
		t.Fatalf("Tap on a done context: %v (admitted %d), want Canceled, nothing admitted", err, rec.held)
	}

	// A panicking handler: a failure, once, even after the context ends.
	ctx, cancel = context.WithCancel(context.Background())
	rec, m, tctx := tapped(ctx)
	func() {
		defer func() {
			if p := recover(); p != "boom" {
				t.Fatalf("recovered %v, want the handler's panic to continue", p)
			}
		}()
		m.UnaryServerInterceptor()(tctx, nil, &grpc.UnaryServerInfo{FullMethod: checkMethod}, func(context.Context, any) (any, error) { panic("boom") })
	}()
	cancel()
	if got := rec.got(); !slices.Equal(got, []string{"Fail"}) {
		t.Fatalf("panicking handler: settled %v, want [Fail] once", got)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.held != 1 {
		t.Errorf("admitted %d times, want once (the tap; the interceptor admits nothing again)", rec.held)
	}
}

// TestByMethodClient: a client's guard per method; a refused call is not sent.
func TestByMethodClient(t *testing.T) {
	checkLim := fixed(t, 1)
	m, _ := ByMethod(map[string]ward.Guard{checkMethod: checkLim}, nil)
	var do behaviour
	reached := 0
	do = func(context.Context) error { reached++; return nil }
	c := serveDial(t, &do, []grpc.DialOption{grpc.WithChainUnaryInterceptor(m.UnaryClientInterceptor()),
		grpc.WithChainStreamInterceptor(m.StreamClientInterceptor())})
	ctx := context.Background()
	lease, _ := checkLim.Acquire()
	_, err := c.Check(ctx, &healthpb.HealthCheckRequest{})
	var ref *Refused
	if !errors.As(err, &ref) || !errors.Is(err, ward.ErrRefused) || status.Code(err) != codes.Unavailable || reached != 0 {
		t.Fatalf("Check refused on the client: %v (reached %d), want a *Refused, Unavailable, not sent", err, reached)
	}
	if _, err := c.List(ctx, &healthpb.HealthListRequest{}); err != nil || reached != 1 {
		t.Fatalf("List, unguarded: %v (reached %d)", err, reached)
	}
	lease.Pass()
	if _, err := c.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil || checkLim.InFlight() != 0 {
		t.Fatalf("Check with its slot free: %v, in flight %d", err, checkLim.InFlight())
	}
}
