#!/usr/bin/env bash
# Runs the Strands TypeScript peer benchmark (b1, b2, b3, b4 and b5, the scenarios Braid's
# bench command compares against) and writes its JSON lines to the file given
# as $1 (default /tmp/braid-peer/results.jsonl). Needs node and npm. The
# peer is installed in $PEER_WORK_DIR (default /tmp/braid-peer/strands-ts),
# where `go run ./bench -peer-dir` runs its b4 again in paired rounds.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
src=${PEER_BENCH_DIR:-$root/../shared/peer-bench/strands-ts}
out=${1:-/tmp/braid-peer/results.jsonl}
work=${PEER_WORK_DIR:-/tmp/braid-peer/strands-ts}
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "peer-bench: node and npm are needed" >&2
  exit 1
fi
[ -d "$src" ] || { echo "peer-bench: no peer benchmark at $src" >&2; exit 1; }
mkdir -p "$work" "$(dirname "$out")"
cp -r "$src"/. "$work"/
chmod -R u+w "$work"
cd "$work"
[ -d node_modules/@strands-agents ] || npm install --no-audit --no-fund --loglevel=error >&2
: > "$out"
node bench/b1_invoke_one_tool.mjs 2000 200 >> "$out"
node bench/b2_interrupt_resume.mjs 2000 200 >> "$out"
node bench/b4_session_interrupt_resume.mjs 500 50 >> "$out"
node bench/b3_graph.mjs 10 >> "$out"
for mode in idle interrupted completed; do
  node --expose-gc bench/b5_memory.mjs "$mode" 1000 >> "$out"
done
echo "$out"
