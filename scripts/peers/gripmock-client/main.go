// A GripMock user's client: its calls made through the stubs protoc-gen-go-grpc generates from
// proto/ (into gen/, by gen.sh), against whatever serves proto/ on -addr (GripMock, or `volley
// serve --stub=stubs --imports=proto proto/greeter/greeter.proto proto/store/price.proto`).
// One JSON line per call: its name, status code and message, replies (protojson) and the
// x-stub response header, for the test to check.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"volley.local/peers/gripmock-client/gen/greeter"
	"volley.local/peers/gripmock-client/gen/store"
)

type result struct {
	Call    string            `json:"call"`
	Code    string            `json:"code"`
	Message string            `json:"message,omitempty"`
	Replies []json.RawMessage `json:"replies"`
	Stub    string            `json:"x-stub,omitempty"`
}

func report(name string, replies []proto.Message, header metadata.MD, err error) {
	r := result{Call: name, Code: status.Code(err).String(), Message: status.Convert(err).Message(),
		Replies: []json.RawMessage{}}
	for _, m := range replies {
		b, _ := protojson.Marshal(m)
		r.Replies = append(r.Replies, b)
	}
	if v := header.Get("x-stub"); len(v) > 0 {
		r.Stub = v[0]
	}
	line, _ := json.Marshal(r)
	fmt.Println(string(line))
}

func main() {
	addr := flag.String("addr", "127.0.0.1:4770", "the server")
	only := flag.String("only", "", "make only this call")
	flag.Parse()
	conn, err := grpc.NewClient(*addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer conn.Close()
	g, s := greeter.NewGreeterClient(conn), store.NewStoreClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	hello := func(name string, req *greeter.HelloRequest) {
		if *only != "" && *only != name {
			return
		}
		var header metadata.MD
		reply, err := g.SayHello(ctx, req, grpc.Header(&header))
		var out []proto.Message
		if err == nil {
			out = append(out, reply)
		}
		report(name, out, header, err)
	}
	hello("equals", &greeter.HelloRequest{Name: "tokopedia"})
	hello("matches-error", &greeter.HelloRequest{Name: "error-please"})
	hello("contains-header", &greeter.HelloRequest{Name: "someone", UserId: 42})
	hello("no-stub", &greeter.HelloRequest{Name: "nobody"})
	hello("late", &greeter.HelloRequest{Name: "late"})
	if *only != "" {
		return
	}

	{
		var header metadata.MD
		stream, err := g.Quotes(ctx, &greeter.QuoteRequest{Sku: "apple"}, grpc.Header(&header))
		var out []proto.Message
		for err == nil {
			var p *store.Price
			if p, err = stream.Recv(); err == nil {
				out = append(out, p)
			}
		}
		if err == io.EOF {
			err = nil
		}
		report("server-stream", out, header, err)
	}
	{
		stream, err := g.Basket(ctx)
		var out []proto.Message
		if err == nil {
			for _, sku := range []string{"first", "middle", "last"} {
				if err = stream.Send(&store.Price{Sku: sku, Cents: 333}); err != nil {
					break
				}
			}
		}
		var total *greeter.BasketTotal
		if err == nil {
			if total, err = stream.CloseAndRecv(); err == nil {
				out = append(out, total)
			}
		}
		report("client-stream", out, metadata.MD{}, err)
	}
	{
		stream, err := g.Chat(ctx)
		var out []proto.Message
		if err == nil {
			err = stream.Send(&greeter.HelloRequest{Name: "ann"})
		}
		var reply *greeter.HelloReply
		if err == nil {
			if reply, err = stream.Recv(); err == nil {
				out = append(out, reply)
			}
		}
		if err == nil {
			err = stream.CloseSend()
		}
		if err == nil {
			if _, err = stream.Recv(); err == io.EOF {
				err = nil
			}
		}
		report("bidi", out, metadata.MD{}, err)
	}
	{
		reply, err := s.GetPrice(ctx, &store.Price{Sku: "pear"})
		var out []proto.Message
		if err == nil {
			out = append(out, reply)
		}
		report("other-service", out, metadata.MD{}, err)
	}
}
