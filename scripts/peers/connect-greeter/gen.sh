#!/usr/bin/env bash
# Regenerates gen/ (helloworld.Greeter and api.Users for connect-go, committed as Go projects do)
# from the repository's protos. Needs protoc and the plugins:
#   go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.10
#   go install connectrpc.com/connect/cmd/protoc-gen-connect-go@v1.21.1
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
rm -rf "$here/gen"
mkdir -p "$here/gen"
protoc -I "$here/../../../proto" --go_out="$here/gen" --go_opt=module=volley.local/peers/connect-greeter/gen \
  --go_opt=Mhelloworld/helloworld.proto=volley.local/peers/connect-greeter/gen/helloworld \
  --go_opt=Mapi/users.proto=volley.local/peers/connect-greeter/gen/api \
  --connect-go_out="$here/gen" --connect-go_opt=module=volley.local/peers/connect-greeter/gen \
  --connect-go_opt=Mhelloworld/helloworld.proto=volley.local/peers/connect-greeter/gen/helloworld \
  --connect-go_opt=Mapi/users.proto=volley.local/peers/connect-greeter/gen/api \
  helloworld/helloworld.proto api/users.proto
