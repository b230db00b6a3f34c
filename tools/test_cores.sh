#!/usr/bin/env bash
# The ROS-free cores and their tests on another CPython without ROS (default 3.10, Humble's), so
# nothing newer than that Python slips into them:  make test-cores PY=3.10
# The tests of phil_description, phil_control and phil_hardware run; a test module that needs
# ROS is skipped and counted (tools/cores_plugin.py); anything else that fails, fails.
set -euo pipefail

# shellcheck source=tools/workspace.sh
source "$(dirname "${BASH_SOURCE[0]}")/workspace.sh"
root=$phil_root
version=${1:-3.10}
venv=$root/.venv-py$version
stamps=$root/.stamps
mkdir -p "$stamps"
cd "$root"
say() { printf '[test-cores] %s\n' "$*"; }

if [ ! -x "$venv/bin/python" ]; then
  python=$(phil_find_python "$version" "make test-cores PY=$version")
  say "creating ${venv##*/} ($("$python" --version))"
  "$python" -m venv "$venv"
  rm -f "$stamps/cores-$version"
fi
phil_install_requirements "$venv" "$stamps/cores-$version" requirements.txt || true

if [ -n "${CI:-}" ]; then export HYPOTHESIS_PROFILE=${HYPOTHESIS_PROFILE:-ci}; fi
export PYTHONPATH="$root/phil_description:$root/phil_control:$root/phil_hardware:$root/tools"
say "$("$venv/bin/python" --version), no ROS"
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider -p cores_plugin \
  phil_description/test phil_control/test phil_hardware/test "${@:2}"
