// A default grpc C++ helloworld.Greeter server (grpc's synchronous example, as users write it),
// built against Debian's libgrpc++-dev by build.sh. Usage: cpp-greeter --addr 127.0.0.1:0
// (prints "listening on ADDR" on stderr once ready).
#include <cstring>
#include <iostream>
#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "helloworld/helloworld.grpc.pb.h"

class GreeterImpl final : public helloworld::Greeter::Service {
  grpc::Status SayHello(grpc::ServerContext*, const helloworld::HelloRequest* req,
                        helloworld::HelloReply* reply) override {
    reply->set_message("Hello " + req->name());
    return grpc::Status::OK;
  }
};

int main(int argc, char** argv) {
  std::string addr = "127.0.0.1:0";
  for (int i = 1; i + 1 < argc; i++) {
    if (std::strcmp(argv[i], "--addr") == 0) addr = argv[i + 1];
  }
  GreeterImpl service;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(addr, grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server(builder.BuildAndStart());
  if (!server || port == 0) {
    std::cerr << "cpp-greeter: cannot listen on " << addr << std::endl;
    return 1;
  }
  std::cerr << "listening on " << addr.substr(0, addr.rfind(':')) << ":" << port << std::endl;
  server->Wait();
}
