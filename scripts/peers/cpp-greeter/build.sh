#!/usr/bin/env bash
# Builds cpp-greeter into $1 (default .tools/bin) from proto/helloworld and proto/api with Debian's
# grpc++.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$here/../../.."
out="${1:-$root/.tools/bin}"
gen=$(mktemp -d)
protoc -I "$root/proto" --cpp_out="$gen" --grpc_out="$gen" \
  --plugin=protoc-gen-grpc="$(command -v grpc_cpp_plugin)" helloworld/helloworld.proto api/users.proto
g++ -O2 -std=c++17 -I "$gen" "$here/greeter_server.cc" "$gen/helloworld/helloworld.pb.cc" \
  "$gen/helloworld/helloworld.grpc.pb.cc" \
  "$gen/api/users.pb.cc" "$gen/api/users.grpc.pb.cc" -o "$out/cpp-greeter" $(pkg-config --cflags --libs grpc++ protobuf) -lpthread
rm -rf "$gen"
