// The anchor of volley gateway's tests: a bookstore gRPC server written as grpc-go users write
// one (the upstream), and grpc-gateway generated for the same proto in front of it (the peer
// volley gateway is compared with).
//
//	bookstore upstream ADDR            # gRPC with reflection
//	bookstore gateway ADDR UPSTREAM    # grpc-gateway's default ServeMux, h1 and h2c
//
// Each prints "listening on HOST:PORT" to stderr once it listens (ADDR may have port 0).
package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/h2c"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	pb "volley.local/peers/grpc-gateway/gen/bookstore/v1"
)

type store struct {
	pb.UnimplementedBookstoreServer
	mu      sync.Mutex
	shelves map[int64]*pb.Shelf
	books   map[int64][]*pb.Book
	next    int64
}

func newStore() *store {
	s := &store{shelves: map[int64]*pb.Shelf{}, books: map[int64][]*pb.Book{}, next: 3}
	s.shelves[1] = &pb.Shelf{Id: 1, Theme: "Fiction"}
	s.shelves[2] = &pb.Shelf{Id: 2, Theme: "Science"}
	added := timestamppb.New(mustTime("2024-05-01T10:00:00Z"))
	s.books[1] = []*pb.Book{
		{Shelf: 1, Id: 1, Author: "Ursula K. Le Guin", Title: "The Dispossessed", Tags: []string{"classic", "utopia"}, Pages: wrapperspb.Int32(387), Added: added, Format: pb.Format_FORMAT_PAPER},
		{Shelf: 1, Id: 2, Author: "Ursula K. Le Guin", Title: "The Lathe of Heaven", Tags: []string{"classic"}, Added: added, Format: pb.Format_FORMAT_EBOOK},
		{Shelf: 1, Id: 3, Author: "Octavia E. Butler", Title: "Kindred", Tags: []string{"classic", "time"}, Pages: wrapperspb.Int32(264), Format: pb.Format_FORMAT_PAPER},
	}
	return s
}

func (s *store) ListShelves(ctx context.Context, _ *emptypb.Empty) (*pb.ListShelvesResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := &pb.ListShelvesResponse{}
	for _, sh := range s.shelves {
		out.Shelves = append(out.Shelves, sh)
	}
	sort.Slice(out.Shelves, func(i, j int) bool { return out.Shelves[i].Id < out.Shelves[j].Id })
	grpc.SetHeader(ctx, metadata.Pairs("x-shelf-count", fmt.Sprint(len(out.Shelves))))
	grpc.SetTrailer(ctx, metadata.Pairs("x-listed", "shelves"))
	return out, nil
}

func (s *store) CreateShelf(_ context.Context, r *pb.CreateShelfRequest) (*pb.Shelf, error) {
	if r.GetShelf().GetTheme() == "" {
		return nil, invalid("shelf.theme", "a shelf needs a theme")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sh := &pb.Shelf{Id: s.next, Theme: r.Shelf.Theme}
	s.next++
	s.shelves[sh.Id] = sh
	return sh, nil
}

func (s *store) shelf(id int64) (*pb.Shelf, error) {
	sh, ok := s.shelves[id]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "shelf %d not found", id)
	}
	return sh, nil
}

func (s *store) GetShelf(_ context.Context, r *pb.GetShelfRequest) (*pb.Shelf, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shelf(r.Shelf)
}

func (s *store) DeleteShelf(_ context.Context, r *pb.DeleteShelfRequest) (*emptypb.Empty, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.shelf(r.Shelf); err != nil {
		return nil, err
	}
	delete(s.shelves, r.Shelf)
	delete(s.books, r.Shelf)
	return &emptypb.Empty{}, nil
}

func matches(b *pb.Book, f *pb.Filter) bool {
	if f == nil {
		return true
	}
	if f.Author != "" && b.Author != f.Author {
		return false
	}
	if f.Format != pb.Format_FORMAT_UNSPECIFIED && b.Format != f.Format {
		return false
	}
	for _, t := range f.Tags {
		found := false
		for _, bt := range b.Tags {
			found = found || bt == t
		}
		if !found {
			return false
		}
	}
	return true
}

func (s *store) ListBooks(_ context.Context, r *pb.ListBooksRequest) (*pb.ListBooksResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.shelf(r.Shelf); err != nil {
		return nil, err
	}
	out := &pb.ListBooksResponse{}
	for _, b := range s.books[r.Shelf] {
		if matches(b, r.Filter) && (r.PageSize == 0 || len(out.Books) < int(r.PageSize)) {
			out.Books = append(out.Books, b)
		}
	}
	return out, nil
}

func (s *store) CreateBook(_ context.Context, r *pb.CreateBookRequest) (*pb.Book, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.shelf(r.Shelf); err != nil {
		return nil, err
	}
	if r.GetBook().GetTitle() == "" {
		return nil, invalid("book.title", "a book needs a title")
	}
	b := proto.Clone(r.Book).(*pb.Book)
	b.Shelf = r.Shelf
	b.Id = int64(len(s.books[r.Shelf]) + 1)
	s.books[r.Shelf] = append(s.books[r.Shelf], b)
	return b, nil
}

func (s *store) book(shelf, id int64) (*pb.Book, error) {
	if _, err := s.shelf(shelf); err != nil {
		return nil, err
	}
	for _, b := range s.books[shelf] {
		if b.Id == id {
			return b, nil
		}
	}
	return nil, status.Errorf(codes.NotFound, "book %d not found on shelf %d", id, shelf)
}

func (s *store) GetBook(_ context.Context, r *pb.GetBookRequest) (*pb.Book, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.book(r.Shelf, r.Book)
}

func (s *store) GetBookTitle(ctx context.Context, r *pb.GetBookRequest) (*pb.Book, error) {
	return s.GetBook(ctx, r)
}

func (s *store) UpdateBook(_ context.Context, r *pb.UpdateBookRequest) (*pb.Book, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, err := s.book(r.GetBook().GetShelf(), r.GetBook().GetId())
	if err != nil {
		return nil, err
	}
	paths := r.GetUpdateMask().GetPaths()
	if len(paths) == 0 {
		return nil, invalid("update_mask", "no field to update")
	}
	for _, p := range paths {
		switch p {
		case "author":
			b.Author = r.Book.Author
		case "title":
			b.Title = r.Book.Title
		case "tags":
			b.Tags = r.Book.Tags
		case "pages":
			b.Pages = r.Book.Pages
		case "format":
			b.Format = r.Book.Format
		default:
			return nil, invalid("update_mask", fmt.Sprintf("%q cannot be updated", p))
		}
	}
	return b, nil
}

func (s *store) WatchShelf(r *pb.WatchShelfRequest, st grpc.ServerStreamingServer[pb.Book]) error {
	s.mu.Lock()
	_, err := s.shelf(r.Shelf)
	books := append([]*pb.Book(nil), s.books[r.Shelf]...)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	for _, b := range books {
		if err := st.Send(b); err != nil {
			return err
		}
	}
	if r.Shelf == 2 {
		return status.Error(codes.ResourceExhausted, "the watch on shelf 2 ends here")
	}
	return nil
}

func (s *store) Annotate(_ context.Context, r *pb.AnnotateRequest) (*pb.AnnotateResponse, error) {
	return &pb.AnnotateResponse{Note: r.Note}, nil
}

func (s *store) Echo(ctx context.Context, r *pb.EchoRequest) (*pb.EchoResponse, error) {
	if r.Code != 0 {
		return nil, status.Error(codes.Code(r.Code), "echoed status: "+r.Text)
	}
	md, _ := metadata.FromIncomingContext(ctx)
	out := &pb.EchoResponse{Request: r}
	for k, vs := range md {
		// The transport's own, which differ by client and not by gateway rule.
		if k == ":authority" || k == "content-type" || k == "user-agent" || k == "grpc-accept-encoding" {
			continue
		}
		for _, v := range vs {
			out.Metadata = append(out.Metadata, k+": "+v)
		}
	}
	sort.Strings(out.Metadata)
	return out, nil
}

// invalid is INVALID_ARGUMENT with a BadRequest detail naming the field.
func invalid(field, why string) error {
	st := status.New(codes.InvalidArgument, why)
	d, err := st.WithDetails(&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: field, Description: why}}})
	if err != nil {
		return st.Err()
	}
	return d.Err()
}

func mustTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func listen(addr string) net.Listener {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "listening on %s\n", l.Addr())
	return l
}

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: bookstore upstream ADDR | bookstore gateway ADDR UPSTREAM")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "upstream":
		srv := grpc.NewServer()
		pb.RegisterBookstoreServer(srv, newStore())
		reflection.Register(srv)
		if err := srv.Serve(listen(os.Args[2])); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	case "gateway":
		if len(os.Args) < 4 {
			fmt.Fprintln(os.Stderr, "usage: bookstore gateway ADDR UPSTREAM")
			os.Exit(2)
		}
		mux := runtime.NewServeMux()
		opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
		if err := pb.RegisterBookstoreHandlerFromEndpoint(context.Background(), mux, os.Args[3], opts); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		l := listen(os.Args[2])
		srv := &http.Server{Handler: h2c.NewHandler(mux, &http2.Server{})}
		if err := srv.Serve(l); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	default:
		fmt.Fprintln(os.Stderr, "usage: bookstore upstream ADDR | bookstore gateway ADDR UPSTREAM")
		os.Exit(2)
	}
}
