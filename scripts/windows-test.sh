#!/usr/bin/env bash
# Runs the tests of the packages that talk to the operating system (the
# SQLite store: its files, locks and WAL fsyncs; the braid command; the
# agent's at-most-once start marks, which read the clock) as Windows
# binaries under Wine, installing Wine and a MinGW compiler from Debian
# when missing. `make lint` only builds for Windows; this runs the code.
#
# Two gaps of Wine 8 are bridged here, for the test runs only:
# - Go's runtime loads ProcessPrng from bcryptprimitives.dll, which Wine 8
#   lacks: a DLL that forwards it to RtlGenRandom is built into a private
#   Wine prefix;
# - Go deletes files with a call Wine 8 answers "not implemented" (not one
#   of the answers after which Go falls back to the older call), so every
#   os.RemoveAll, t.TempDir's cleanup included, fails: the test binaries
#   are built with an overlay of that one Go file that falls back on that
#   answer too (scripts/windows-overlay.sh; `make lint` vets with it, so
#   the packages it compiled for Windows serve these builds).
# The kill -9 process tests are Unix-only and skip themselves, and so do
# the PostgreSQL tests: the binaries run without CI and without a DSN
# (make test runs those tests, on Linux, against a server).
set -euo pipefail
cd "$(dirname "$0")/.."
PKGS=${WINDOWS_TEST_PKGS:-"./persistence/sqlite ./persistence ./cmd/braid ./agent"}

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

overlay=$(scripts/windows-overlay.sh "$work")

status=0
for pkg in $PKGS; do
  name=$(echo "$pkg" | tr -c 'a-zA-Z0-9\n' _)
  rm -f "$work/$name.exe"
  GOOS=windows GOARCH=amd64 CGO_ENABLED=0 go test -overlay "$overlay" -c -o "$work/$name.exe" "$pkg"
  [ -f "$work/$name.exe" ] || continue # a package without tests
  echo "windows-test: $pkg" >&2
  if ! (cd "$pkg" && env -u CI -u BRAID_TEST_POSTGRES_DSN -u BRAID_TEST_POSTGRES_STANDBY_DSN /usr/lib/wine/wine64 "$work/$name.exe" -test.count=1 -test.timeout=10m); then
    status=1
  fi
  rm -f "$work/$name.exe" # tens of MB each; the prefix is what is worth keeping
done
exit $status
