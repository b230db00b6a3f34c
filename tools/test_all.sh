#!/usr/bin/env bash
# Every suite CI runs (make test-all): the workspace on ROS 2 Kilted (CPython 3.11), the same on
# ROS 2 Jazzy (CPython 3.12), and the ROS-free cores on CPython 3.10 (Humble's Python) without
# ROS. Each runs even when one before it failed; the exit status is non-zero if any failed.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
unset PHIL_ROS

suites=("kilted:env PHIL_ROS=kilted tools/test.sh"
        "jazzy:env PHIL_ROS=jazzy tools/test.sh"
        "cores-py3.10:tools/test_cores.sh 3.10")
summary=() status=0
for suite in "${suites[@]}"; do
  name=${suite%%:*}
  printf '[test-all] === %s ===\n' "$name"
  started=$SECONDS
  if ${suite#*:}; then outcome=passed; else outcome=FAILED; status=1; fi
  summary+=("$(printf '%-13s %s in %d s' "$name" "$outcome" $((SECONDS - started)))")
done
printf '[test-all] %s\n' "${summary[@]}"
exit "$status"
