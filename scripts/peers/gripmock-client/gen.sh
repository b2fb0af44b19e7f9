#!/usr/bin/env bash
# Generates gen/ from proto/ as the project's own build does: protoc with protoc-gen-go and
# protoc-gen-go-grpc (both on PATH; scripts/install-test-tools installs the pinned versions).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
rm -rf "$here/gen" && mkdir -p "$here/gen"
protoc -I "$here/proto" \
  --go_out="$here/gen" --go_opt=module=volley.local/peers/gripmock-client/gen \
  --go-grpc_out="$here/gen" --go-grpc_opt=module=volley.local/peers/gripmock-client/gen \
  greeter/greeter.proto store/price.proto
