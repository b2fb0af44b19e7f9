module volley.local/peers/connect-greeter

go 1.26.0

require (
	connectrpc.com/connect v1.21.1
	connectrpc.com/grpcreflect v1.3.1
	google.golang.org/protobuf v1.36.12
)
