#!/usr/bin/env bash
# Installs the Debian packages the tests use besides Go, when missing:
# strace (the SQLite store's fsync test counts real fsyncs with it).
# PostgreSQL is installed and started by scripts/with-postgres.sh.
set -euo pipefail
missing=()
command -v strace >/dev/null || missing+=(strace)
[ ${#missing[@]} -eq 0 ] && exit 0
echo "deps: installing ${missing[*]}" >&2
sudo=()
[ "$(id -u)" = 0 ] || sudo=(sudo)
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
for m in "${missing[@]}"; do
  command -v "$m" >/dev/null || { echo "deps: $m is still missing after install" >&2; exit 1; }
done
