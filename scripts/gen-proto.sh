#!/usr/bin/env bash
# Regenerates the Go code beside every .proto file under proto/, with pinned
# tools: protoc PROTOC_VERSION (Debian bookworm's protobuf-compiler) and
# protoc-gen-go at the version go.mod pins for google.golang.org/protobuf.
# Installs them when they are missing; refuses a protoc of another version,
# whose output would differ from the committed code.
set -euo pipefail
cd "$(dirname "$0")/.."
PROTOC_VERSION=3.21.12
if ! command -v protoc >/dev/null; then
  echo "gen-proto: installing protobuf-compiler" >&2
  apt-get update -qq && apt-get install -y -qq protobuf-compiler >/dev/null
fi
have=$(protoc --version | awk '{print $2}')
if [ "$have" != "$PROTOC_VERSION" ]; then
  echo "gen-proto: protoc $have found, this project pins $PROTOC_VERSION (Debian bookworm's protobuf-compiler)" >&2
  exit 1
fi
gobin=$(go env GOPATH)/bin
ver=$(go list -m -f '{{.Version}}' google.golang.org/protobuf)
if [ ! -x "$gobin/protoc-gen-go" ] || [ "$("$gobin/protoc-gen-go" --version | awk '{print $2}')" != "$ver" ]; then
  echo "gen-proto: installing protoc-gen-go $ver" >&2
  go install "google.golang.org/protobuf/cmd/protoc-gen-go@$ver"
fi
export PATH="$gobin:$PATH"
find proto -name '*.proto' -print0 | while IFS= read -r -d '' f; do
  protoc --proto_path=proto --go_out=proto --go_opt=paths=source_relative "$f"
done
