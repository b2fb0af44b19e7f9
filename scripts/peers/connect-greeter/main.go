// A connect-go server of helloworld.Greeter and api.Users (answers as volley's built-in
// services give them), speaking Connect, gRPC and gRPC-Web on one h2c port, with gRPC server
// reflection: the peer `volley call -protocol connect|grpc-web|grpc` is checked against.
// Usage: connect-greeter -addr 127.0.0.1:0 (prints "listening on ADDR" once ready).
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"

	"connectrpc.com/connect"
	"connectrpc.com/grpcreflect"

	"volley.local/peers/connect-greeter/gen/api"
	"volley.local/peers/connect-greeter/gen/api/apiconnect"
	"volley.local/peers/connect-greeter/gen/helloworld"
	"volley.local/peers/connect-greeter/gen/helloworld/helloworldconnect"
)

type greeter struct{}

func (greeter) SayHello(_ context.Context, req *connect.Request[helloworld.HelloRequest]) (*connect.Response[helloworld.HelloReply], error) {
	if req.Msg.GetName() == "" {
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("name is empty"))
	}
	return connect.NewResponse(&helloworld.HelloReply{Message: "Hello " + req.Msg.GetName()}), nil
}

type users struct{}

func (users) Get(_ context.Context, req *connect.Request[api.GetUserRequest]) (*connect.Response[api.User], error) {
	return connect.NewResponse(&api.User{Id: req.Msg.GetId(), Email: "dmitry.k@test.tld", Name: "Dmitry K.", Rating: 228.53}), nil
}

func (users) List(_ context.Context, _ *connect.Request[api.ListUserRequest], stream *connect.ServerStream[api.User]) error {
	for i := int64(0); i < 10; i++ {
		u := &api.User{Id: i, Email: fmt.Sprintf("user%d@test", i), Name: fmt.Sprintf("User %d", i), Rating: float64(i) * 1.53}
		if err := stream.Send(u); err != nil {
			return err
		}
	}
	return nil
}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	flag.Parse()
	mux := http.NewServeMux()
	mux.Handle(helloworldconnect.NewGreeterHandler(greeter{}))
	mux.Handle(apiconnect.NewUsersHandler(users{}))
	reflector := grpcreflect.NewStaticReflector(helloworldconnect.GreeterName, apiconnect.UsersName)
	mux.Handle(grpcreflect.NewHandlerV1(reflector))
	mux.Handle(grpcreflect.NewHandlerV1Alpha(reflector))
	lis, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// HTTP/1.1 (Connect, gRPC-Web) and HTTP/2 without TLS (gRPC, and the others) on one port.
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	srv := &http.Server{Handler: mux, Protocols: protocols}
	fmt.Fprintf(os.Stderr, "listening on %s\n", lis.Addr())
	if err := srv.Serve(lis); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
