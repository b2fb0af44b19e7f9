#!/usr/bin/env bash
# Generates gen/ from proto/ as a grpc-gateway project does: protoc with protoc-gen-go,
# protoc-gen-go-grpc and protoc-gen-grpc-gateway (all on PATH; scripts/install-test-tools
# installs the pinned versions). grpc-gateway v2 ships no googleapis protos: the project's
# proto/google/api serve, mapped onto the Go package of their generated code (genproto's).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
api=google.golang.org/genproto/googleapis/api/annotations
m="module=volley.local/peers/grpc-gateway/gen,Mgoogle/api/annotations.proto=$api,Mgoogle/api/http.proto=$api"
rm -rf "$here/gen" && mkdir -p "$here/gen"
protoc -I "$here/proto" -I "$root/proto" \
  --go_out="$here/gen" --go_opt="$m" \
  --go-grpc_out="$here/gen" --go-grpc_opt="$m" \
  --grpc-gateway_out="$here/gen" --grpc-gateway_opt="$m" \
  bookstore/v1/bookstore.proto
