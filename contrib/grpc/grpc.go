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
// A stream is one admission for its whole life on a server, settled when the handler returns.
// On a client, a stream interceptor admits the stream's opening only, and settles as soon as
// the stream is open (or failed to open): a stream's lifetime is the application's to judge.
package wardgrpc

import (
	"context"
	"errors"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/wardgo/ward"
	"github.com/wardgo/ward/failurewindow"
	"github.com/wardgo/ward/rate"
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

// StreamClientInterceptor admits the opening of each outgoing stream through g; a refused stream
// is not opened and ends with a [*Refused].
func StreamClientInterceptor(g ward.Guard) grpc.StreamClientInterceptor {
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
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
		return cs, serr
	}
}
