#!/usr/bin/env bash
# Writes the build overlay the Windows test binaries need under Wine 8 and
# prints the path of its JSON file (argument: the folder to write it in;
# default ${TMPDIR:-/tmp}/braid-wine).
#
# Go deletes files with a call Wine 8 answers "not implemented", which is
# not one of the answers after which Go falls back to the older call, so
# every os.RemoveAll (t.TempDir's cleanup included) fails under Wine. The
# overlay replaces that one standard-library file with a copy that falls
# back on that answer too. It changes nothing on Windows itself.
#
# `make lint` vets for Windows with the same overlay as scripts/windows-test.sh
# builds with: a changed standard-library file means every package is
# compiled again for it, so sharing it saves one build of everything for
# Windows (about 90 s on a cold build cache).
set -euo pipefail
work=${1:-${TMPDIR:-/tmp}/braid-wine}
mkdir -p "$work/overlay"
at="$(go env GOROOT)/src/internal/syscall/windows/at_windows.go"
sed 's|^\(\s*\)STATUS_NOT_SUPPORTED:|\1STATUS_NOT_SUPPORTED, NTStatus(0xC0000002) /* STATUS_NOT_IMPLEMENTED, Wine */:|' "$at" > "$work/overlay/at_windows.go.new"
grep -q 'NTStatus(0xC0000002)' "$work/overlay/at_windows.go.new" ||
  { echo "windows-overlay: $at changed; update the overlay in $0" >&2; exit 1; }
# Rewritten only when it changes: the file's time is not part of Go's
# cache keys, but an unchanged file is the plainer promise.
if cmp -s "$work/overlay/at_windows.go.new" "$work/overlay/at_windows.go"; then
  rm "$work/overlay/at_windows.go.new"
else
  mv "$work/overlay/at_windows.go.new" "$work/overlay/at_windows.go"
fi
printf '{"Replace":{"%s":"%s"}}\n' "$at" "$work/overlay/at_windows.go" > "$work/overlay.json"
echo "$work/overlay.json"
