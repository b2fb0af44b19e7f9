// A default grpc-go server of helloworld.Greeter, api.Users (the seed's user service) and grpc-go's
// own interop grpc.testing.TestService: the reference volley's server is measured against.
// Usage: go-greeter -addr 127.0.0.1:0 [-tls-cert CERT.pem -tls-key KEY.pem] (prints "listening
// on ADDR" once ready); with the TLS flags it serves TLS as grpc-go's examples do
// (credentials.NewServerTLSFromFile).
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	pb "google.golang.org/grpc/examples/helloworld/helloworld"
	"google.golang.org/grpc/interop"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"volley.local/peers/go-greeter/api"
)

type server struct {
	pb.UnimplementedGreeterServer
}

func (server) SayHello(_ context.Context, in *pb.HelloRequest) (*pb.HelloReply, error) {
	return &pb.HelloReply{Message: "Hello " + in.GetName()}, nil
}

// users answers api.Users as volley's built-in service does: Get one fixed user with the
// requested id, List ten users.
type users struct {
	api.UnimplementedUsersServer
}

func (users) Get(_ context.Context, in *api.GetUserRequest) (*api.User, error) {
	return &api.User{Id: in.GetId(), Email: "dmitry.k@test.tld", Name: "Dmitry K.", Rating: 228.53}, nil
}

func (users) List(_ *api.ListUserRequest, stream api.Users_ListServer) error {
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
	certFile := flag.String("tls-cert", "", "PEM certificate: serve TLS (with -tls-key)")
	keyFile := flag.String("tls-key", "", "PEM private key for -tls-cert")
	flag.Parse()
	var opts []grpc.ServerOption
	if *certFile != "" {
		creds, err := credentials.NewServerTLSFromFile(*certFile, *keyFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		opts = append(opts, grpc.Creds(creds))
	}
	lis, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	s := grpc.NewServer(opts...)
	pb.RegisterGreeterServer(s, server{})
	api.RegisterUsersServer(s, users{})
	// grpc-go's own grpc.testing.TestService (the one its interop server runs), for the payload
	// rows: UnaryCall answers a payload of the requested size.
	testgrpc.RegisterTestServiceServer(s, interop.NewTestServer())
	fmt.Fprintf(os.Stderr, "listening on %s\n", lis.Addr())
	if err := s.Serve(lis); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
