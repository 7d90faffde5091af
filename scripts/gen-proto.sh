#!/usr/bin/env bash
# Regenerates the Go code beside every .proto file under proto/. Installs
# protoc (Debian protobuf-compiler) and protoc-gen-go (at the version go.mod
# pins for google.golang.org/protobuf) when they are missing.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v protoc >/dev/null; then
  echo "gen-proto: installing protobuf-compiler" >&2
  apt-get update -qq && apt-get install -y -qq protobuf-compiler >/dev/null
fi
gobin=$(go env GOPATH)/bin
if [ ! -x "$gobin/protoc-gen-go" ]; then
  ver=$(go list -m -f '{{.Version}}' google.golang.org/protobuf)
  echo "gen-proto: installing protoc-gen-go $ver" >&2
  go install "google.golang.org/protobuf/cmd/protoc-gen-go@$ver"
fi
export PATH="$gobin:$PATH"
find proto -name '*.proto' -print0 | while IFS= read -r -d '' f; do
  protoc --proto_path=proto --go_out=proto --go_opt=paths=source_relative "$f"
done
