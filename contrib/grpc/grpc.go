// Package wardgrpc puts ward's admission types in front of gRPC servers and clients: unary and
// stream interceptors over any [ward.Guard] (an adaptive limit, a shedder, a breaker, a rate
// limiter, a failure window), built on the one Do contract every ward type keeps.
//
//	lim, _ := adaptive.New(rule)
//	srv := grpc.NewServer(
//		grpc.ChainUnaryInterceptor(wardgrpc.UnaryServerInterceptor(lim)),
//		grpc.ChainStreamInterceptor(wardgrpc.StreamServerInterceptor(lim)))
//
// # Refusals
//
// A refused call never reaches the handler (or, on a client, the network). It ends with
// codes.ResourceExhausted when the refusal is a quota (package rate's ErrLimited, package
// failurewindow's ErrTooManyFailures) and codes.Unavailable when it is an overload (an adaptive
// limit, a shedder, a breaker). When the refusal carries its wait ([ward.RetryAfter]), a server
// sends it in the grpc-retry-pushback-ms trailer, which gRPC clients with a retry policy honour
// (gRPC proposal A6); without one it sends no pushback. The error is a [*Refused]: it carries the
// gRPC status (status.FromError and status.Code read it) and matches ward.ErrRefused and the
// type's own sentinel with errors.Is, so a client can tell its own ward's refusal from the server's.
//
// # Outcomes
//
// The handler's (or, on a client, the call's) error settles the admission through the type's Do,
// after this mapping of gRPC codes, which the type's Do then classifies as ward's one contract
// says:
//
//   - nil, and the codes that say the caller erred while the server worked (InvalidArgument,
//     NotFound, AlreadyExists, PermissionDenied, Unauthenticated, FailedPrecondition, OutOfRange,
//     Unimplemented, Aborted): a success;
//   - Canceled: the caller's own cancellation, neutral while the call's context is done;
//   - DeadlineExceeded, Unavailable, ResourceExhausted, Internal, Unknown, DataLoss: an overload
//     or failure (given to Do as context.DeadlineExceeded, which every ward type counts so);
//   - a handler that panics: a failure, and the panic continues (gRPC servers do not recover
//     panics; install a recovery interceptor outside this one if you want one).
//
// A stream is one admission for its whole life. On a server it settles when the handler
// returns. On a client it settles when the stream ends (read to io.EOF or an error, or its
// context ended): [StreamClientInterceptor] holds the admission's handle, without a goroutine,
// for the types whose admission is one (an adaptive limit, a breaker, a shedder, a [Holder]); a
// rate limit, which settles nothing, and any other guard admit the opening through Do.
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
	"github.com/wardgo/ward/adaptive"
	"github.com/wardgo/ward/breaker"
	"github.com/wardgo/ward/failurewindow"
	"github.com/wardgo/ward/internal/contract"
	"github.com/wardgo/ward/rate"
	"github.com/wardgo/ward/shed"
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

// Code returns the gRPC code of a ward refusal: codes.ResourceExhausted for a quota (rate,
// failurewindow), codes.Unavailable for any other (an overload).
func Code(err error) codes.Code {
	if errors.Is(err, rate.ErrLimited) || errors.Is(err, failurewindow.ErrTooManyFailures) {
		return codes.ResourceExhausted
	}
	return codes.Unavailable
}

// outcome is the error Do classifies for a call that ended with err (see the package doc).
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

// refused reports whether err, from Do, is the guard's own refusal (fn never ran), and if so
// returns it as a [*Refused].
func refused(ran bool, err error) (*Refused, bool) {
	if ran || !errors.Is(err, ward.ErrRefused) {
		return nil, false
	}
	return &Refused{Err: err, Code: Code(err)}, true
}

// pushback sends a refusal's wait, rounded up to whole milliseconds, in the trailer.
func pushback(ctx context.Context, err error) {
	if wait, ok := ward.RetryAfter(err); ok {
		ms := (wait + time.Millisecond - 1) / time.Millisecond
		_ = grpc.SetTrailer(ctx, metadata.Pairs(PushbackKey, strconv.FormatInt(int64(ms), 10)))
	}
}

// UnaryServerInterceptor admits each unary call through g (see the package doc).
func UnaryServerInterceptor(g ward.Guard) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		var resp any
		var herr error
		ran := false
		err := g.Do(ctx, func(ctx context.Context) error {
			ran = true
			resp, herr = handler(ctx, req)
			return outcome(herr)
		})
		if r, ok := refused(ran, err); ok {
			pushback(ctx, err)
			return nil, r
		}
		return resp, herr
	}
}

// StreamServerInterceptor admits each stream through g, for the stream's whole life.
func StreamServerInterceptor(g ward.Guard) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		var herr error
		ran := false
		err := g.Do(ss.Context(), func(context.Context) error {
			ran = true
			herr = handler(srv, ss)
			return outcome(herr)
		})
		if r, ok := refused(ran, err); ok {
			if wait, ok := ward.RetryAfter(err); ok {
				ms := (wait + time.Millisecond - 1) / time.Millisecond
				ss.SetTrailer(metadata.Pairs(PushbackKey, strconv.FormatInt(int64(ms), 10)))
			}
			return r
		}
		return herr
	}
}

// UnaryClientInterceptor admits each outgoing unary call through g (a breaker, an adaptive client
// limit, a rate limit); a refused call is not sent and ends with a [*Refused].
func UnaryClientInterceptor(g ward.Guard) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		var ierr error
		ran := false
		err := g.Do(ctx, func(ctx context.Context) error {
			ran = true
			ierr = invoker(ctx, method, req, reply, cc, opts...)
			return outcome(ierr)
		})
		if r, ok := refused(ran, err); ok {
			return r
		}
		return ierr
	}
}

// StreamClientInterceptor admits each outgoing stream through g and, when g is a type whose
// admission is a handle (adaptive.Limiter, adaptive.Partition, adaptive.Queue, breaker.Breaker,
// shed.Shedder, a [Holder]), holds it for the stream's whole life: the stream counts against g until it ends
// and then settles once, by its final status, as a unary call does (see the package doc). A
// refused stream is not opened and ends with a [*Refused]; a stream that fails to open settles
// at once. Any other guard (a rate limiter, a guard of your own) admits the opening through its
// Do: a rate limit spends its allowance when it admits and settles nothing; implement [Holder]
// to have a guard of your own held.
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
	admit := holder(g)
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		if admit == nil {
			return openThroughDo(ctx, g, desc, cc, method, streamer, opts)
		}
		h, other, err := admit(ctx)
		if err != nil {
			if r, ok := refused(false, err); ok {
				return nil, r
			}
			return nil, status.FromContextError(err).Err()
		}
		cs, err := streamer(ctx, desc, cc, method, opts...)
		if err != nil {
			settle(ctx, h, other, err)
			return nil, err
		}
		s := &heldStream{ClientStream: cs, serverStreams: desc.ServerStreams}
		s.end = func(err error) { settle(ctx, h, other, err) }
		s.stop = context.AfterFunc(ctx, func() {
			if !s.done.Swap(true) {
				s.end(status.FromContextError(ctx.Err()).Err())
			}
		})
		return s, nil
	}
}

// openThroughDo admits a stream's opening through g's Do.
func openThroughDo(ctx context.Context, g ward.Guard, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts []grpc.CallOption) (grpc.ClientStream, error) {
	var cs grpc.ClientStream
	var serr error
	ran := false
	err := g.Do(ctx, func(ctx context.Context) error {
		ran = true
		cs, serr = streamer(ctx, desc, cc, method, opts...)
		return outcome(serr)
	})
	if r, ok := refused(ran, err); ok {
		return nil, r
	}
	if !ran {
		return nil, status.FromContextError(err).Err()
	}
	return cs, serr
}

// admitFunc admits a call and returns its handle, and how a call that ended with an error outside
// the mapping's three (nil, canceled, overload) settles: as the type's own Do settles it.
type admitFunc func(ctx context.Context) (h ward.Handle, other contract.Outcome, err error)

// Holder is a guard of your own whose admission is a handle: [StreamClientInterceptor] holds the
// handle for a stream's whole life, as it does an adaptive limit's lease. Hold admits a call in
// ctx or returns a refusal (matching ward.ErrRefused) or ctx's error; a status the mapping does
// not decide (codes.Canceled while ctx is live) settles Fail.
type Holder interface {
	ward.Guard
	Hold(ctx context.Context) (ward.Handle, error)
}

// holder returns how to admit a stream through g with a handle, or nil when g has none.
func holder(g ward.Guard) admitFunc {
	switch g := g.(type) {
	case Holder:
		return func(ctx context.Context) (ward.Handle, contract.Outcome, error) {
			h, err := g.Hold(ctx)
			return h, contract.Fail, err
		}
	case *adaptive.Limiter:
		return func(context.Context) (ward.Handle, contract.Outcome, error) {
			l, ok := g.Acquire()
			if !ok {
				return nil, 0, adaptive.ErrLimitExceeded
			}
			return &l, contract.Ignore, nil
		}
	case *adaptive.Partition:
		return func(context.Context) (ward.Handle, contract.Outcome, error) {
			l, ok := g.Acquire()
			if !ok {
				return nil, 0, adaptive.ErrLimitExceeded
			}
			return &l, contract.Ignore, nil
		}
	case *adaptive.Queue:
		return func(ctx context.Context) (ward.Handle, contract.Outcome, error) {
			s, err := g.Acquire(ctx)
			if err != nil {
				return nil, 0, err
			}
			return &s, contract.Ignore, nil
		}
	case *breaker.Breaker:
		return func(context.Context) (ward.Handle, contract.Outcome, error) {
			p, err := g.Allow()
			if err != nil {
				return nil, 0, err
			}
			return &p, contract.Fail, nil
		}
	case *shed.Shedder:
		return func(context.Context) (ward.Handle, contract.Outcome, error) {
			p, err := g.Allow()
			if err != nil {
				return nil, 0, err
			}
			return &p, contract.Fail, nil
		}
	}
	return nil
}

// settle settles h once by a stream's final error, as the type's Do would settle a call that
// returned outcome(err).
func settle(ctx context.Context, h ward.Handle, other contract.Outcome, err error) {
	contract.Settle(contract.Classify(ctx, outcome(err), nil, nil, other, other), h.Pass, h.Fail, h.Ignore)
}

// heldStream is a client stream holding its admission until it ends; end runs once.
type heldStream struct {
	grpc.ClientStream
	serverStreams bool
	done          atomic.Bool
	end           func(error)
	stop          func() bool // stops the context watch
}

// finish ends the stream with err (nil: a success), once.
func (s *heldStream) finish(err error) {
	if s.done.Swap(true) {
		return
	}
	s.stop()
	s.end(err)
}

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
