package wardgrpc_test

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/wardgo/ward"
	"github.com/wardgo/ward/adaptive"
	wardgrpc "github.com/wardgo/ward/contrib/grpc"
	"github.com/wardgo/ward/rate"
)

// A server protected by an adaptive limit: grpc.NewServer(grpc.ChainUnaryInterceptor(ic)). Here
// the interceptor is called directly: with the only slot taken, a call is refused before its
// handler runs, with codes.Unavailable.
func ExampleUnaryServerInterceptor() {
	rule, _ := adaptive.NewFixed(1)
	lim, _ := adaptive.New(rule)
	ic := wardgrpc.UnaryServerInterceptor(lim)
	handler := func(ctx context.Context, req any) (any, error) { return "served", nil }

	lease, _ := lim.Acquire() // a call already in flight
	_, err := ic(context.Background(), nil, &grpc.UnaryServerInfo{}, handler)
	fmt.Println(status.Code(err), errors.Is(err, ward.ErrRefused))
	lease.Pass()
	resp, err := ic(context.Background(), nil, &grpc.UnaryServerInfo{}, handler)
	fmt.Println(resp, err)
	// Output:
	// Unavailable true
	// served <nil>
}

// A client held to a rate: a refused call is not sent and ends with codes.ResourceExhausted (a
// quota), carrying its wait.
func ExampleUnaryClientInterceptor() {
	now := int64(0)
	lim, _ := rate.NewBucketLimiter(2, 1, rate.WithClock(func() int64 { return now })) // two a second
	ic := wardgrpc.UnaryClientInterceptor(lim)
	send := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error { return nil }

	fmt.Println(ic(context.Background(), "/svc/Method", nil, nil, nil, send))
	err := ic(context.Background(), "/svc/Method", nil, nil, nil, send)
	wait, _ := ward.RetryAfter(err)
	fmt.Println(status.Code(err), wait)
	// Output:
	// <nil>
	// ResourceExhausted 500ms
}
