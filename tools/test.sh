#!/usr/bin/env bash
# Run every test of the workspace with `colcon test` and print a readable summary, on the ROS 2
# tools/workspace.sh picks (PHIL_ROS=kilted, the default, or jazzy; or a sourced install).
# Exit status: 0 only when every package's tests ran and none failed.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
"$root/tools/setup.sh"

set +u
# shellcheck source=tools/env.sh
source "$root/tools/env.sh"
set -u

# A private DDS domain per run, so parallel runs on one machine never see each other.
export ROS_DOMAIN_ID=${ROS_DOMAIN_ID:-$((RANDOM % 100 + 1))}
echo "[test] ROS_DOMAIN_ID=$ROS_DOMAIN_ID"
# CI: reproducible property tests (see */test/conftest.py).
if [ -n "${CI:-}" ]; then export HYPOTHESIS_PROFILE=${HYPOTHESIS_PROFILE:-ci}; fi

colcon test-result --delete-yes >/dev/null 2>&1 || true
status=0
colcon test --paths phil_msgs phil_description phil_ros phil_control phil_hardware phil_bringup \
  --executor sequential --event-handlers console_cohesion+ summary+ \
  --return-code-on-test-failure "$@" || status=$?

python "$root/tools/test_summary.py" "$phil_build" || status=$?
exit "$status"
