// Package wardgrpc puts ward's admission types in front of gRPC servers and clients: unary and
// stream interceptors over any [ward.Guard] (an adaptive limit, a shedder, a breaker, a rate
// limiter, a [ward.Chain] of them, or a guard of your own), written once on the admission every
// guard has (Admit, which returns a [ward.Admission] to settle when the call ends).
//
//	lim, _ := adaptive.New(rule)
//	srv := grpc.NewServer(
//		grpc.ChainUnaryInterceptor(wardgrpc.UnaryServerInterceptor(lim)),
//		grpc.ChainStreamInterceptor(wardgrpc.StreamServerInterceptor(lim)))
//
// # Per method, and at the tap
//
// [ByMethod] builds a [Methods]: a guard per full method name and a fallback for the rest, in
// one interceptor of each kind. Its [Methods.Tap], installed with grpc.InTapHandle, admits a
// call before its request is read (the cheapest refusal a server can make) and leaves the
// admission in the call's context for the same Methods' interceptors to settle when the handler
// returns; a call the tap admitted that never reaches them settles when its context ends, so
// nothing stays held. [Methods] says what a tap refusal carries and which guard must not be used
// there.
//
//	m, _ := wardgrpc.ByMethod(map[string]ward.Guard{"/shop.Orders/Export": exportLim}, apiLim)
//	srv := grpc.NewServer(grpc.InTapHandle(m.Tap),
//		grpc.ChainUnaryInterceptor(m.UnaryServerInterceptor()),
//		grpc.ChainStreamInterceptor(m.StreamServerInterceptor()))
//
// # Refusals
//
// A refused call never reaches the handler (or, on a client, the network). It ends with
// codes.ResourceExhausted when the refusal is a quota (it matches ward.ErrQuota: package rate's
// ErrLimited, package failurewindow's ErrTooManyFailures) and codes.Unavailable when it is an
// overload (an adaptive limit, a shedder, a breaker). When the refusal carries its wait ([ward.RetryAfter]), a server
// sends it in the grpc-retry-pushback-ms trailer, which gRPC clients with a retry policy honour
// (gRPC proposal A6); without one it sends no pushback. The error is a [*Refused]: it carries the
// gRPC status (status.FromError and status.Code read it) and matches ward.ErrRefused and the
// type's own sentinel with errors.Is, so a client can tell its own ward's refusal from the server's.
//
// # Outcomes
//
// The handler's (or, on a client, the call's) error settles the admission (Admission.End), after
// this mapping of gRPC codes, which the guard then classifies as its Do would:
//
//   - nil, and the codes that say the caller erred while the server worked (InvalidArgument,
//     NotFound, AlreadyExists, PermissionDenied, Unauthenticated, FailedPrecondition, OutOfRange,
//     Unimplemented, Aborted): a success;
//   - Canceled: the caller's own cancellation, neutral while the call's context is done;
//   - DeadlineExceeded, Unavailable, ResourceExhausted, Internal, Unknown, DataLoss: an overload
//     or failure (given to the guard as context.DeadlineExceeded, which every guard counts so);
//   - a handler that panics: a failure, and the panic continues (gRPC servers do not recover
//     panics; install a recovery interceptor outside this one if you want one).
//
// A stream is one admission for its whole life. On a server it settles when the handler
// returns. On a client it settles when the stream ends (read to io.EOF or an error, or its
// context ended): [StreamClientInterceptor] holds the admission, without a goroutine, for the
// stream's whole life (a rate limit's admission settles nothing: its token was spent at the
// opening).
package wardgrpc

import (
	"context"
	"errors"
	"io"
	"strconv"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/wardgo/ward"
)

// PushbackKey is the trailer a server sends a refusal's wait in, in whole milliseconds (gRPC A6).
const PushbackKey = "grpc-retry-pushback-ms"

// Refused is the error a refused call ends with: the ward refusal and the gRPC status it maps to.
type Refused struct {
	Err  error      // the ward type's refusal (matches ward.ErrRefused)
	Code codes.Code // codes.ResourceExhausted for a quota, codes.Unavailable for an overload
}

func (r *Refused) Error() string { return r.Err.Error() }

// Unwrap returns the ward refusal.
func (r *Refused) Unwrap() error { return r.Err }

// GRPCStatus is the status gRPC sends for the refusal.
func (r *Refused) GRPCStatus() *status.Status { return status.New(r.Code, r.Err.Error()) }

// Code returns the gRPC code of a ward refusal: codes.ResourceExhausted for a quota (a refusal
// matching ward.ErrQuota), codes.Unavailable for any other (an overload).
func Code(err error) codes.Code {
	if errors.Is(err, ward.ErrQuota) {
		return codes.ResourceExhausted
	}
	return codes.Unavailable
}

// outcome is the error the guard classifies for a call that ended with err (see the package doc).
func outcome(err error) error {
	if err == nil {
		return nil
	}
	switch status.Code(err) {
	case codes.Canceled:
		return context.Canceled
	case codes.DeadlineExceeded, codes.Unavailable, codes.ResourceExhausted, codes.Internal, codes.Unknown, codes.DataLoss:
		return context.DeadlineExceeded
	}
	return nil
}

// notAdmitted is the error a call Admit did not admit ends with: the guard's refusal as a
// [*Refused], or the status of ctx's end.
func notAdmitted(err error) error {
	if errors.Is(err, ward.ErrRefused) {
		return &Refused{Err: err, Code: Code(err)}
	}
	return status.FromContextError(err).Err()
}

// pushback is the trailer carrying a refusal's wait, rounded up to whole milliseconds; false when
// the refusal carries none.
func pushback(err error) (metadata.MD, bool) {
	wait, ok := ward.RetryAfter(err)
	if !ok {
		return nil, false
	}
	ms := (wait + time.Millisecond - 1) / time.Millisecond
	return metadata.Pairs(PushbackKey, strconv.FormatInt(int64(ms), 10)), true
}

// UnaryServerInterceptor admits each unary call through g (see the package doc).
func UnaryServerInterceptor(g ward.Guard) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		return unaryServer(ctx, g, req, handler)
	}
}

func unaryServer(ctx context.Context, g ward.Guard, req any, handler grpc.UnaryHandler) (any, error) {
	a, err := g.Admit(ctx)
	if err != nil {
		if md, ok := pushback(err); ok {
			_ = grpc.SetTrailer(ctx, md)
		}
		return nil, notAdmitted(err)
	}
	defer a.Fail() // a no-op once settled: only a panicking handler gets here unsettled
	resp, herr := handler(ctx, req)
	a.End(ctx, outcome(herr))
	return resp, herr
}

// StreamServerInterceptor admits each stream through g, for the stream's whole life.
func StreamServerInterceptor(g ward.Guard) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		return streamServer(g, srv, ss, handler)
	}
}

func streamServer(g ward.Guard, srv any, ss grpc.ServerStream, handler grpc.StreamHandler) error {
	ctx := ss.Context()
	a, err := g.Admit(ctx)
	if err != nil {
		if md, ok := pushback(err); ok {
			ss.SetTrailer(md)
		}
		return notAdmitted(err)
	}
	defer a.Fail() // a no-op once settled: only a panicking handler gets here unsettled
	herr := handler(srv, ss)
	a.End(ctx, outcome(herr))
	return herr
}

// UnaryClientInterceptor admits each outgoing unary call through g (a breaker, an adaptive client
// limit, a rate limit); a refused call is not sent and ends with a [*Refused].
func UnaryClientInterceptor(g ward.Guard) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		return unaryClient(ctx, g, method, req, reply, cc, invoker, opts)
	}
}

func unaryClient(ctx context.Context, g ward.Guard, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts []grpc.CallOption) error {
	a, err := g.Admit(ctx)
	if err != nil {
		return notAdmitted(err)
	}
	defer a.Fail() // a no-op once settled: only a panicking invoker gets here unsettled
	ierr := invoker(ctx, method, req, reply, cc, opts...)
	a.End(ctx, outcome(ierr))
	return ierr
}

// StreamClientInterceptor admits each outgoing stream through g and holds the admission for the
// stream's whole life: the stream counts against g until it ends and then settles once, by its
// final status, as a unary call does (see the package doc). A refused stream is not opened and
// ends with a [*Refused]; a stream that fails to open settles at once.
//
// A held stream ends at the first of: RecvMsg returning io.EOF (a success) or an error (that
// error's status), RecvMsg returning the one response of a stream without server streaming (a
// success), SendMsg returning an error other than io.EOF (that error), or the stream's context
// ending (canceled: neutral; its deadline: a failure). As with any gRPC stream, the caller must
// read it to the end or cancel its context: a stream left open holds its admission.
//
// # Edge cases
//
//   - A stream held by an adaptive limit is timed from its opening to its end: its lifetime is a
//     response-time sample. Guard long-lived streams (watches, subscriptions) with a limiter of
//     their own, with a fixed limit (adaptive.NewFixed), not the one unary calls teach.
//   - An adaptive.Queue waits for a slot in the stream's context; the context ending while it
//     waits ends the call with codes.Canceled or codes.DeadlineExceeded, nothing opened.
func StreamClientInterceptor(g ward.Guard) grpc.StreamClientInterceptor {
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		return streamClient(ctx, g, desc, cc, method, streamer, opts)
	}
}

func streamClient(ctx context.Context, g ward.Guard, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts []grpc.CallOption) (grpc.ClientStream, error) {
	a, err := g.Admit(ctx)
	if err != nil {
		return nil, notAdmitted(err)
	}
	cs, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil {
		a.End(ctx, outcome(err))
		return nil, err
	}
	s := &heldStream{ClientStream: cs, serverStreams: desc.ServerStreams, ctx: ctx}
	s.hold(ctx, a)
	return s, nil
}

// held is an admission settled once: by whoever calls end first, or, when nobody has, as ctx
// ends (canceled: neutral; past its deadline: a failure).
type held struct {
	a    ward.Admission
	done atomic.Bool
	stop func() bool // stops the context watch
}

// hold takes a and starts watching ctx.
func (h *held) hold(ctx context.Context, a ward.Admission) {
	h.a = a
	h.stop = context.AfterFunc(ctx, func() {
		if !h.done.Swap(true) {
			h.a.End(ctx, outcome(status.FromContextError(ctx.Err()).Err()))
		}
	})
}

// end settles the admission by a call's error err (see outcome), once.
func (h *held) end(ctx context.Context, err error) {
	if h.done.Swap(true) {
		return
	}
	h.stop()
	h.a.End(ctx, outcome(err))
}

// heldStream is a client stream holding its admission until it ends.
type heldStream struct {
	grpc.ClientStream
	held
	serverStreams bool
	ctx           context.Context
}

// finish ends the stream with err (nil: a success), once.
func (s *heldStream) finish(err error) { s.end(s.ctx, err) }

// RecvMsg receives a message and ends the stream on io.EOF, an error, or the one response of a
// stream without server streaming.
func (s *heldStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	switch {
	case errors.Is(err, io.EOF):
		s.finish(nil)
	case err != nil:
		s.finish(err)
	case !s.serverStreams:
		s.finish(nil)
	}
	return err
}

// SendMsg sends a message; an error other than io.EOF ends the stream (io.EOF says the status
// is for RecvMsg to read).
func (s *heldStream) SendMsg(m any) error {
	err := s.ClientStream.SendMsg(m)
	if err != nil && !errors.Is(err, io.EOF) {
		s.finish(err)
	}
	return err
}
