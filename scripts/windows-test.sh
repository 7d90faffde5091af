#!/usr/bin/env bash
# Runs the tests of the packages that talk to the operating system (the
# SQLite store: its files, locks and WAL fsyncs) as Windows binaries under
# Wine, installing Wine and a MinGW compiler from Debian when missing.
# `make lint` only builds for Windows; this runs the code.
#
# Two things are Wine's, not Braid's, and handled here:
# - Go's runtime loads ProcessPrng from bcryptprimitives.dll, which Wine 8
#   lacks: a three-line DLL that forwards to RtlGenRandom is built into a
#   private Wine prefix;
# - t.TempDir's cleanup fails under Wine 8 ("Invalid function": Go removes
#   files with a call Wine does not implement): scripts/winecheck.go counts
#   a test whose only failure is that line as passed, and fails on any
#   other failure output.
# The kill -9 process tests are Unix-only and skip themselves.
set -euo pipefail
cd "$(dirname "$0")/.."
PKGS=${WINDOWS_TEST_PKGS:-"./persistence/sqlite ./persistence"}

missing=()
[ -x /usr/lib/wine/wine64 ] || missing+=(wine64)
command -v x86_64-w64-mingw32-gcc >/dev/null || missing+=(gcc-mingw-w64-x86-64-win32)
if [ ${#missing[@]} -gt 0 ]; then
  echo "windows-test: installing ${missing[*]}" >&2
  sudo=()
  [ "$(id -u)" = 0 ] || sudo=(sudo)
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi
[ -x /usr/lib/wine/wine64 ] || { echo "windows-test: wine64 is missing after install" >&2; exit 1; }

work=${WINDOWS_TEST_DIR:-${TMPDIR:-/tmp}/braid-wine}
mkdir -p "$work"
export WINEPREFIX="$work/prefix" WINEDEBUG=-all
if [ ! -f "$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll" ]; then
  cat > "$work/prng.c" <<'C'
#include <windows.h>
#include <ntsecapi.h>
__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
  while (len > 0) {
    ULONG n = len > 0x10000000 ? 0x10000000 : (ULONG)len;
    if (!RtlGenRandom(data, n)) return FALSE;
    data += n; len -= n;
  }
  return TRUE;
}
C
  x86_64-w64-mingw32-gcc -shared -o "$work/bcryptprimitives.dll" "$work/prng.c" -ladvapi32
  /usr/lib/wine/wine64 wineboot --init >/dev/null 2>&1 || true
  cp "$work/bcryptprimitives.dll" "$WINEPREFIX/drive_c/windows/system32/"
fi

status=0
for pkg in $PKGS; do
  name=$(echo "$pkg" | tr -c 'a-zA-Z0-9\n' _)
  GOOS=windows GOARCH=amd64 CGO_ENABLED=0 go test -c -o "$work/$name.exe" "$pkg"
  echo "windows-test: $pkg" >&2
  if ! (cd "$pkg" && /usr/lib/wine/wine64 "$work/$name.exe" -test.v -test.count=1 2>&1) |
      go tool test2json -t | go run scripts/winecheck.go; then
    status=1
  fi
done
exit $status
