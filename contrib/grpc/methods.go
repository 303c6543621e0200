package wardgrpc

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"

	"github.com/wardgo/ward"
)

// ErrInvalid is matched, with errors.Is, by every configuration error of this package (and by
// ward.ErrInvalid); the message names the argument.
var ErrInvalid = ward.Invalid("wardgrpc: invalid configuration")

// Methods guards each method with its own guard: a map of full method names
// ("/package.Service/Method") to guards, and a fallback for the methods it does not list. Its
// interceptors are the package's, each call admitted through the guard its method picks; its
// [Methods.Tap] admits calls at the transport, before their request is read.
//
//	m, _ := wardgrpc.ByMethod(map[string]ward.Guard{"/shop.Orders/Export": exportLim}, apiLim)
//	srv := grpc.NewServer(
//		grpc.InTapHandle(m.Tap),
//		grpc.ChainUnaryInterceptor(m.UnaryServerInterceptor()),
//		grpc.ChainStreamInterceptor(m.StreamServerInterceptor()))
//
// # Refusing at the tap
//
// [Methods.Tap] is a tap.ServerInHandle (grpc.InTapHandle): gRPC calls it when a call's headers
// arrive, before its request is read or decoded and before a goroutine serves it, so a refusal
// there is the cheapest a server can make. It admits the call through its method's guard and
// puts the admission in the call's context; the server interceptors of the same Methods find it
// there and settle it when the handler returns, by the handler's error, exactly as they settle
// an admission of their own (they admit nothing again). A call the tap admitted that never
// reaches them (an unknown method, a deadline already past, a connection that closes, a server
// without these interceptors) settles when the call's context ends: neutral when it was
// canceled, a failure when its deadline passed. Nothing is left held.
//
// A tap refusal ends the call with the refusal's status (codes.Unavailable for an overload,
// codes.ResourceExhausted for a quota) and, unlike the interceptor's, without the pushback
// trailer: the transport sends only a status there. Admitting at the tap allocates the record
// that carries the admission to the interceptor (a few small allocations beside gRPC's own).
//
// The tap runs on the goroutine that reads the connection: every call on that connection waits
// while it decides. Every guard of ward decides without waiting except adaptive.Queue, whose
// Admit waits for a slot: do not give a Queue to a Methods whose Tap is installed; guard those
// methods with a Queue in an interceptor of its own.
//
// # Edge cases
//
//   - A method neither listed nor covered by a fallback (nil) is not guarded: its calls pass.
//   - The method names are checked when ByMethod builds: each must be "/service/method".
//   - A Methods is safe for concurrent use and never changes after ByMethod: build a new one
//     to guard other methods.
type Methods struct {
	guards   map[string]ward.Guard
	fallback ward.Guard
}

// ByMethod returns a [Methods] guarding each method in guards with its guard, and every other
// method with fallback (nil: not guarded). A nil guard in the map, a method name that is not
// "/service/method", or no guard at all is an error matching [ErrInvalid] that names it.
func ByMethod(guards map[string]ward.Guard, fallback ward.Guard) (*Methods, error) {
	if len(guards) == 0 && fallback == nil {
		return nil, fmt.Errorf("%w: guards = none and fallback = nil, want at least one guard", ErrInvalid)
	}
	names := make([]string, 0, len(guards))
	for name := range guards {
		names = append(names, name)
	}
	sort.Strings(names) // the first bad name reported is the same on every run
	m := &Methods{guards: make(map[string]ward.Guard, len(guards)), fallback: fallback}
	for _, name := range names {
		if g := guards[name]; g == nil {
			return nil, ward.Field(ErrInvalid, fmt.Sprintf("guards[%q]", name), "nil", "a ward.Guard")
		}
		if svc, meth, ok := strings.Cut(strings.TrimPrefix(name, "/"), "/"); !strings.HasPrefix(name, "/") || !ok || svc == "" || meth == "" || strings.Contains(meth, "/") {
			return nil, fmt.Errorf("%w: guards[%q]: want a full method name, \"/package.Service/Method\"", ErrInvalid, name)
		}
		m.guards[name] = guards[name]
	}
	return m, nil
}

// Guard returns the guard of a full method name: its own, or the fallback; nil when neither.
func (m *Methods) Guard(fullMethod string) ward.Guard {
	if g, ok := m.guards[fullMethod]; ok {
		return g
	}
	return m.fallback
}

// tapKey keys the admission a Methods' Tap put in a call's context; only the same Methods'
// interceptors take it.
type tapKey struct{ m *Methods }

// tapped is an admission made at the tap, settled once: by the interceptor when the handler
// returns, or when the call's context ends first.
type tapped struct{ held }

// fail settles the admission as a failure, once: a panicking handler.
func (t *tapped) fail(ctx context.Context) { t.end(ctx, context.DeadlineExceeded) }

// Tap admits a call through its method's guard before its request is read: install it with
// grpc.InTapHandle(m.Tap), beside m's server interceptors, which settle what it admits (see
// [Methods]). A refusal is a [*Refused]; a call whose context is already done ends with its
// status; a method without a guard passes untouched.
func (m *Methods) Tap(ctx context.Context, info *tap.Info) (context.Context, error) {
	g := m.Guard(info.FullMethodName)
	if g == nil {
		return ctx, nil
	}
	if err := ward.Dead(ctx); err != nil { // gRPC answers it anyway; ask no guard, hold nothing
		return ctx, status.FromContextError(err).Err()
	}
	a, err := g.Admit(ctx)
	if err != nil {
		return ctx, notAdmitted(err)
	}
	t := new(tapped)
	t.hold(ctx, a) // settled as ctx ends if the interceptor never settles it: the call never ran
	return context.WithValue(ctx, tapKey{m}, t), nil
}

// tappedIn returns the admission m's Tap put in ctx, or nil.
func (m *Methods) tappedIn(ctx context.Context) *tapped {
	t, _ := ctx.Value(tapKey{m}).(*tapped)
	return t
}

// UnaryServerInterceptor admits each unary call through its method's guard, as the package's
// UnaryServerInterceptor does, or settles the admission m's Tap made for it.
func (m *Methods) UnaryServerInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if t := m.tappedIn(ctx); t != nil {
			defer t.fail(ctx) // a no-op once settled: only a panicking handler gets here unsettled
			resp, err := handler(ctx, req)
			t.end(ctx, err)
			return resp, err
		}
		g := m.Guard(info.FullMethod)
		if g == nil {
			return handler(ctx, req)
		}
		return unaryServer(ctx, g, req, handler)
	}
}

// StreamServerInterceptor admits each stream through its method's guard, for the stream's whole
// life, as the package's StreamServerInterceptor does, or settles the admission m's Tap made
// for it.
func (m *Methods) StreamServerInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		ctx := ss.Context()
		if t := m.tappedIn(ctx); t != nil {
			defer t.fail(ctx) // a no-op once settled: only a panicking handler gets here unsettled
			err := handler(srv, ss)
			t.end(ctx, err)
			return err
		}
		g := m.Guard(info.FullMethod)
		if g == nil {
			return handler(srv, ss)
		}
		return streamServer(g, srv, ss, handler)
	}
}

// UnaryClientInterceptor admits each outgoing unary call through its method's guard, as the
// package's UnaryClientInterceptor does.
func (m *Methods) UnaryClientInterceptor() grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		g := m.Guard(method)
		if g == nil {
			return invoker(ctx, method, req, reply, cc, opts...)
		}
		return unaryClient(ctx, g, method, req, reply, cc, invoker, opts)
	}
}

// StreamClientInterceptor admits each outgoing stream through its method's guard and holds the
// admission for the stream's whole life, as the package's StreamClientInterceptor does.
func (m *Methods) StreamClientInterceptor() grpc.StreamClientInterceptor {
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		g := m.Guard(method)
		if g == nil {
			return streamer(ctx, desc, cc, method, opts...)
		}
		return streamClient(ctx, g, desc, cc, method, streamer, opts)
	}
}
