#!/usr/bin/env bash
# Run a command with the machine busy, as on the robot (speech recognition, a language model and
# text-to-speech share its CPU): one busy-looping process per CPU at normal priority beside it.
#   tools/under_load.sh make test        HOGS=4 tools/under_load.sh make bench
set -euo pipefail
if [ "$#" -eq 0 ]; then
  echo "usage: tools/under_load.sh <command> [args...]   (HOGS=<n>, default: one per CPU)" >&2
  exit 2
fi
hogs=${HOGS:-$(nproc)}
pids=()
stop_hogs() { [ "${#pids[@]}" -eq 0 ] || kill "${pids[@]}" 2>/dev/null || true; }
trap stop_hogs EXIT
for _ in $(seq "$hogs"); do
  python3 -c 'while True: pass' &
  pids+=("$!")
done
echo "[under_load] $hogs CPU hog(s) running: ${pids[*]}" >&2
"$@"
