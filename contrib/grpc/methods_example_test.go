package wardgrpc_test

import (
	"fmt"

	"google.golang.org/grpc"

	"github.com/wardgo/ward"
	"github.com/wardgo/ward/adaptive"
	wardgrpc "github.com/wardgo/ward/contrib/grpc"
)

// One limit for the export method, another for every other method, refused at the tap before
// a request is read; the interceptors settle what the tap admitted.
func ExampleByMethod() {
	api, export := adaptive.Default(), adaptive.Default()
	m, err := wardgrpc.ByMethod(map[string]ward.Guard{"/shop.Orders/Export": export}, api)
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := grpc.NewServer(
		grpc.InTapHandle(m.Tap),
		grpc.ChainUnaryInterceptor(m.UnaryServerInterceptor()),
		grpc.ChainStreamInterceptor(m.StreamServerInterceptor()))
	defer srv.Stop()
	fmt.Println(m.Guard("/shop.Orders/Export") == export, m.Guard("/shop.Orders/Get") == api)

	_, err = wardgrpc.ByMethod(map[string]ward.Guard{"shop.Orders/Export": export}, nil)
	fmt.Println(err)
	// Output:
	// true true
	// wardgrpc: invalid configuration: guards["shop.Orders/Export"]: want a full method name, "/package.Service/Method"
}
