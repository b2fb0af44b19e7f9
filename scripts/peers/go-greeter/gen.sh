#!/usr/bin/env bash
# Regenerates api/ (api.Users stubs, committed as Go projects do) from proto/api/users.proto.
# Needs protoc, and the plugins: go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.10
# google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.5.1
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
protoc -I "$here/../../../proto" --go_out="$here/api" --go_opt=paths=source_relative \
  --go_opt=Mapi/users.proto=volley.local/peers/go-greeter/api \
  --go-grpc_out="$here/api" --go-grpc_opt=paths=source_relative \
  --go-grpc_opt=Mapi/users.proto=volley.local/peers/go-greeter/api api/users.proto
mv "$here/api/api/"*.go "$here/api/" && rmdir "$here/api/api"
