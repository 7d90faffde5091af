#!/usr/bin/env bash
# Installs the Go tools that `make lint` needs, pinned, into $(go env GOPATH)/bin:
#   scripts/tools.sh
# Prints the bin folder, so callers can put it on PATH.
set -euo pipefail
bin="$(go env GOPATH)/bin"

if ! "$bin/staticcheck" -version 2>/dev/null | grep -q "(0.8.2)"; then
  echo "tools: installing staticcheck (honnef.co/go/tools v0.8.2)" >&2
  GOFLAGS=-mod=mod go install honnef.co/go/tools/cmd/staticcheck@v0.8.2
fi
echo "$bin"
