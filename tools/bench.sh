#!/usr/bin/env bash
# Run every benchmark (<package>/bench/bench_*.py); each prints JSON lines. The lines are
# shown and saved to runs/bench-<time>.jsonl.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
set +u
# shellcheck source=tools/env.sh
source "$root/tools/env.sh"
set -u
mkdir -p runs
out="runs/bench-$(date +%Y%m%d-%H%M%S).jsonl"
status=0
for bench in phil_*/bench/bench_*.py; do
  [ -e "$bench" ] || continue
  echo "[bench] $bench" >&2
  python "$bench" | tee -a "$out" || status=$?
done
echo "[bench] results: $out" >&2
exit "$status"
