package wardgrpc

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/wardgo/ward"
	"github.com/wardgo/ward/adaptive"
	"github.com/wardgo/ward/breaker"
	"github.com/wardgo/ward/rate"
)

// behaviour is what the test handler does instead of the health service, set per test.
type behaviour func(ctx context.Context) error

// serve starts a bufconn server with the interceptors given (and, inside them, one that runs
// *do before the health service's handler) and returns a client; everything stops at cleanup.
func serve(t *testing.T, do *behaviour, opts ...grpc.ServerOption) healthpb.HealthClient {
	t.Helper()
	return serveDial(t, do, nil, opts...)
}

// serveDial is serve with the client's dial options too (its interceptors).
func serveDial(t *testing.T, do *behaviour, dial []grpc.DialOption, opts ...grpc.ServerOption) healthpb.HealthClient {
	t.Helper()
	lis := bufconn.Listen(1 << 16)
	opts = append(opts,
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if *do != nil {
				if err := (*do)(ctx); err != nil {
					return nil, err
				}
			}
			return h(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			if *do != nil {
				return (*do)(ss.Context())
			}
			return h(srv, ss)
		}))
	srv := grpc.NewServer(opts...)
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	go func() { _ = srv.Serve(lis) }()
	cc, err := grpc.NewClient("passthrough:///bufnet", append(dial,
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close(); srv.Stop() })
	ready(t, cc)
	return healthpb.NewHealthClient(cc)
}

// ready connects cc and waits until it is Ready, so that a test's own deadline measures the call
// under test and never the connection's setup (which a loaded machine can stretch past it).
func ready(t *testing.T, cc *grpc.ClientConn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cc.Connect()
	for s := cc.GetState(); s != connectivity.Ready; s = cc.GetState() {
		if !cc.WaitForStateChange(ctx, s) {
			t.Fatalf("the client never connected: %v", s)
		}
	}
}

func fixed(t *testing.T, n int) *adaptive.Limiter {
	t.Helper()
	r, err := adaptive.NewFixed(n)
	if err != nil {
		t.Fatal(err)
	}
	l, err := adaptive.New(r)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestUnaryServerPassAndRefusal(t *testing.T) {
	lim := fixed(t, 1)
	var do behaviour
	c := serve(t, &do, grpc.ChainUnaryInterceptor(UnaryServerInterceptor(lim)))
	ctx := context.Background()
	if _, err := c.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatalf("pass: %v", err)
	}
	// Hold the only slot with one call, then a second is refused with Unavailable and no pushback
	// (an adaptive limit knows no wait).
	held, release := make(chan struct{}), make(chan struct{})
	do = func(context.Context) error { close(held); <-release; return nil }
	done := make(chan error)
	go func() { _, err := c.Check(ctx, &healthpb.HealthCheckRequest{}); done <- err }()
	<-held
	do = nil
	var trailer metadata.MD
	_, err := c.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Trailer(&trailer))
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("refusal: %v, want Unavailable", err)
	}
	if v := trailer.Get(PushbackKey); len(v) != 0 {
		t.Fatalf("pushback %v on a refusal without a wait", v)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("held call: %v", err)
	}
	if lim.InFlight() != 0 {
		t.Fatalf("in flight %d after all settled", lim.InFlight())
	}
}

// TestPushback: a rate limit's refusal is a quota: ResourceExhausted, with its wait in the
// grpc-retry-pushback-ms trailer, rounded up to whole milliseconds.
func TestPushback(t *testing.T) {
	now := int64(0)
	lim, err := rate.NewBucketLimiter(1, 1, rate.WithClock(func() int64 { return now })) // one a second
	if err != nil {
		t.Fatal(err)
	}
	var do behaviour
	c := serve(t, &do, grpc.ChainUnaryInterceptor(UnaryServerInterceptor(lim)))
	ctx := context.Background()
	if _, err := c.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatalf("first: %v", err)
	}
	now += int64(250*time.Millisecond) + 1
	var trailer metadata.MD
	_, err = c.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Trailer(&trailer))
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("refusal: %v, want ResourceExhausted", err)
	}
	if v := trailer.Get(PushbackKey); len(v) != 1 || v[0] != "750" {
		t.Fatalf("pushback %v, want [750]", v)
	}
}

// TestOutcomes: the handler's codes settle a breaker as the package doc says: overload codes
// fail, the caller's codes pass.
func TestOutcomes(t *testing.T) {
	for _, c := range []struct {
		code codes.Code
		fail bool
	}{
		{codes.Unavailable, true}, {codes.Internal, true}, {codes.DeadlineExceeded, true}, {codes.ResourceExhausted, true},
		{codes.NotFound, false}, {codes.InvalidArgument, false}, {codes.OK, false},
	} {
		b, _ := breaker.New(breaker.WithRefresh(0))
		var do behaviour = func(context.Context) error { return status.Error(c.code, "x") }
		if c.code == codes.OK {
			do = nil
		}
		cl := serve(t, &do, grpc.ChainUnaryInterceptor(UnaryServerInterceptor(b)))
		_, err := cl.Check(context.Background(), &healthpb.HealthCheckRequest{})
		if status.Code(err) != c.code {
			t.Fatalf("%v: the handler's error came back as %v", c.code, err)
		}
		s := b.Snapshot()
		if got := s.Failures == 1; got != c.fail || s.Successes+s.Failures != 1 {
			t.Errorf("%v: %+v, want failure %v", c.code, s, c.fail)
		}
	}
}

// TestPanic: a panicking handler settles as a failure and the panic continues.
func TestPanic(t *testing.T) {
	b, _ := breaker.New(breaker.WithRefresh(0))
	ic := UnaryServerInterceptor(b)
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the panic did not continue")
			}
		}()
		_, _ = ic(context.Background(), nil, &grpc.UnaryServerInfo{}, func(context.Context, any) (any, error) { panic("boom") })
	}()
	if s := b.Snapshot(); s.Failures != 1 {
		t.Fatalf("%+v, want one failure", s)
	}
	lim := fixed(t, 1)
	sc := StreamServerInterceptor(lim)
	func() {
		defer func() { _ = recover() }()
		_ = sc(nil, fakeStream{ctx: context.Background()}, &grpc.StreamServerInfo{}, func(any, grpc.ServerStream) error { panic("boom") })
	}()
	if lim.InFlight() != 0 {
		t.Fatal("a panicking stream left its slot taken")
	}
}

type fakeStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (f fakeStream) Context() context.Context { return f.ctx }

// TestStream: a server stream holds its admission for its whole life; a second is refused while
// it runs, with Unavailable.
func TestStream(t *testing.T) {
	lim := fixed(t, 1)
	var do behaviour
	ended := make(chan struct{}, 2)
	outer := func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		defer func() { ended <- struct{}{} }()
		return StreamServerInterceptor(lim)(srv, ss, info, h)
	}
	c := serve(t, &do, grpc.ChainStreamInterceptor(outer))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	watching(t, c, ctx)
	w2, err := c.Watch(context.Background(), &healthpb.HealthCheckRequest{})
	if err == nil {
		_, err = w2.Recv()
	}
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("second stream: %v, want Unavailable", err)
	}
	<-ended  // the refused one
	cancel() // the client goes away: the first stream ends, its slot freed
	<-ended
	if lim.InFlight() != 0 {
		t.Fatalf("in flight %d after the stream ended", lim.InFlight())
	}
}

// TestClientCancel: a client that cancels its call settles it as neutral: a breaker records
// nothing.
func TestClientCancel(t *testing.T) {
	b, _ := breaker.New(breaker.WithRefresh(0))
	var do behaviour
	ended := make(chan struct{}, 1)
	outer := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		defer func() { ended <- struct{}{} }()
		return UnaryServerInterceptor(b)(ctx, req, info, h)
	}
	c := serve(t, &do, grpc.ChainUnaryInterceptor(outer))
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	do = func(ctx context.Context) error {
		close(started)
		<-ctx.Done()
		return status.FromContextError(ctx.Err()).Err()
	}
	errc := make(chan error)
	go func() {
		_, err := c.Check(ctx, &healthpb.HealthCheckRequest{})
		errc <- err
	}()
	<-started
	cancel()
	if err := <-errc; status.Code(err) != codes.Canceled {
		t.Fatalf("client: %v, want Canceled", err)
	}
	<-ended
	if s := b.Snapshot(); s.Successes+s.Failures != 0 {
		t.Fatalf("server: %+v: a call the client cancelled was recorded", s)
	}
	// The client side: a breaker in front of a call its caller cancelled.
	ic := UnaryClientInterceptor(b)
	ctx2, cancel2 := context.WithCancel(context.Background())
	cancel2()
	err := ic(ctx2, "/m", nil, nil, nil, func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error {
		return status.Error(codes.Canceled, "context canceled")
	})
	if status.Code(err) != codes.Canceled {
		t.Fatalf("%v, want Canceled", err)
	}
	if s := b.Snapshot(); s.Successes+s.Failures != 0 {
		t.Fatalf("client: %+v: a cancelled call was recorded", s)
	}
}

// TestClientRefusal: a client breaker that refuses does not send the call, and the error is
// both a gRPC Unavailable and ward.ErrRefused.
func TestClientRefusal(t *testing.T) {
	b, _ := breaker.New(breaker.WithRefresh(0), breaker.WithRand(func() float64 { return 0 }))
	sent := 0
	inv := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error {
		sent++
		return status.Error(codes.Unavailable, "down")
	}
	ic := UnaryClientInterceptor(b)
	var err error
	for i := 0; i < 50; i++ {
		err = ic(context.Background(), "/m", nil, nil, nil, inv)
	}
	if !errors.Is(err, ward.ErrRefused) || !errors.Is(err, breaker.ErrUnavailable) || status.Code(err) != codes.Unavailable {
		t.Fatalf("%v: want a refusal that is Unavailable and ward.ErrRefused", err)
	}
	if sent >= 50 {
		t.Fatal("every call was sent")
	}
	sc := StreamClientInterceptor(b)
	if _, err := sc(context.Background(), &grpc.StreamDesc{}, nil, "/m", func(context.Context, *grpc.StreamDesc, *grpc.ClientConn, string, ...grpc.CallOption) (grpc.ClientStream, error) {
		t.Fatal("a refused stream opened")
		return nil, nil
	}); status.Code(err) != codes.Unavailable {
		t.Fatalf("stream: %v, want Unavailable", err)
	}
}
