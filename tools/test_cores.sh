#!/usr/bin/env bash
# The ROS-free cores and their tests on another CPython without ROS (default 3.10, Humble's), so
# nothing newer than that Python slips into them:  make test-cores PY=3.10
# The tests of phil_description, phil_control and phil_hardware run; a test module that needs
# ROS is skipped and counted (tools/cores_plugin.py); anything else that fails, fails.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
version=${1:-3.10}
venv=$root/.venv-py$version
stamps=$root/.stamps
mkdir -p "$stamps"
cd "$root"
say() { printf '[test-cores] %s\n' "$*"; }

find_python() {
  local candidate
  for candidate in "python$version" "$(pyenv root 2>/dev/null)/versions/$version"*/bin/"python$version" \
                   "$HOME/.pyenv/versions/$version"*/bin/"python$version"; do
    # A pyenv shim is on PATH even when that version is not selected: run it to be sure.
    if "$candidate" -c "import sys; sys.exit(f'{sys.version_info[0]}.{sys.version_info[1]}' != '$version')" \
        >/dev/null 2>&1; then
      command -v "$candidate"; return
    fi
  done
  echo "[test-cores] error: CPython $version not found (neither python$version on PATH nor a" >&2
  echo "[test-cores]        pyenv version $version). Install it, e.g. 'pyenv install $version'" >&2
  echo "[test-cores]        or your distribution's python$version package, and re-run." >&2
  exit 1
}

if [ ! -x "$venv/bin/python" ]; then
  python=$(find_python)
  say "creating $venv ($("$python" --version))"
  "$python" -m venv "$venv"
  rm -f "$stamps/cores-$version"
fi
wanted=$(sha256sum requirements.txt | cut -d' ' -f1)
if [ "$(cat "$stamps/cores-$version" 2>/dev/null)" != "$wanted" ]; then
  say "installing Python packages (requirements.txt)"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r requirements.txt
  echo "$wanted" > "$stamps/cores-$version"
fi

if [ -n "${CI:-}" ]; then export HYPOTHESIS_PROFILE=${HYPOTHESIS_PROFILE:-ci}; fi
export PYTHONPATH="$root/phil_description:$root/phil_control:$root/phil_hardware:$root/tools"
say "$("$venv/bin/python" --version), no ROS"
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider -p cores_plugin \
  phil_description/test phil_control/test phil_hardware/test "${@:2}"
