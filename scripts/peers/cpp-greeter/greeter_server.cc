// A default grpc C++ server of helloworld.Greeter and api.Users (grpc's synchronous example, as
// users write it),
// built against Debian's libgrpc++-dev by build.sh. Usage: cpp-greeter --addr 127.0.0.1:0
// (prints "listening on ADDR" on stderr once ready).
#include <cstring>
#include <iostream>
#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "api/users.grpc.pb.h"
#include "helloworld/helloworld.grpc.pb.h"

class GreeterImpl final : public helloworld::Greeter::Service {
  grpc::Status SayHello(grpc::ServerContext*, const helloworld::HelloRequest* req,
                        helloworld::HelloReply* reply) override {
    reply->set_message("Hello " + req->name());
    return grpc::Status::OK;
  }
};

class UsersImpl final : public api::Users::Service {
  grpc::Status Get(grpc::ServerContext*, const api::GetUserRequest* req, api::User* user) override {
    user->set_id(req->id());
    user->set_email("dmitry.k@test.tld");
    user->set_name("Dmitry K.");
    user->set_rating(228.53);
    return grpc::Status::OK;
  }
  grpc::Status List(grpc::ServerContext*, const api::ListUserRequest*,
                    grpc::ServerWriter<api::User>* writer) override {
    for (int i = 0; i < 10; i++) {
      api::User user;
      user.set_id(i);
      user.set_email("user" + std::to_string(i) + "@test");
      user.set_name("User " + std::to_string(i));
      user.set_rating(i * 1.53);
      writer->Write(user);
    }
    return grpc::Status::OK;
  }
};

int main(int argc, char** argv) {
  std::string addr = "127.0.0.1:0";
  for (int i = 1; i + 1 < argc; i++) {
    if (std::strcmp(argv[i], "--addr") == 0) addr = argv[i + 1];
  }
  GreeterImpl service;
  UsersImpl users;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(addr, grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  builder.RegisterService(&users);
  std::unique_ptr<grpc::Server> server(builder.BuildAndStart());
  if (!server || port == 0) {
    std::cerr << "cpp-greeter: cannot listen on " << addr << std::endl;
    return 1;
  }
  std::cerr << "listening on " << addr.substr(0, addr.rfind(':')) << ":" << port << std::endl;
  server->Wait();
}
