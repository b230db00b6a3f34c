# shellcheck shell=bash
# Source me: which ROS 2 the workspace uses and where its venv and colcon trees are. Used by
# setup.sh, env.sh and test_cores.sh. Returns non-zero (with a message) on a bad choice.
#
#   ROS_DISTRO set (a ROS 2 install is sourced): a venv on top of that install; trees build/,
#     install/, log/. PHIL_ROS, when set, must name the same distro.
#   PHIL_ROS=kilted (the default): ROS 2 Kilted from PyPI wheels, CPython 3.11, in .venv;
#     trees build/, install/, log/.
#   PHIL_ROS=jazzy: ROS 2 Jazzy from PyPI wheels, CPython 3.12, in .venv-jazzy; trees
#     build-jazzy/, install-jazzy/, log-jazzy/ (colcon finds them through COLCON_DEFAULTS_FILE
#     and COLCON_LOG_PATH, which env.sh sets).
#
# Sets phil_root, phil_ros (the distro), phil_mode, phil_venv, phil_stamps, phil_build,
# phil_install, phil_log, phil_python_version (empty for a sourced install) and
# phil_requirements_ros (empty for a sourced install). phil_forget_other_trees then clears
# the path variables of the choice not made.

phil_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

phil_select_ros() {
  local suffix=
  if [ -n "${ROS_DISTRO:-}" ]; then
    if [ -n "${PHIL_ROS:-}" ] && [ "$PHIL_ROS" != "$ROS_DISTRO" ]; then
      echo "[phil] error: ROS=$PHIL_ROS was asked for, but ROS 2 $ROS_DISTRO is sourced in this" >&2
      echo "[phil]        shell. Leave ROS unset to use $ROS_DISTRO, or use a shell without it." >&2
      return 1
    fi
    phil_ros=$ROS_DISTRO phil_mode=system-$ROS_DISTRO phil_python_version= phil_requirements_ros=
  else
    case "${PHIL_ROS:-kilted}" in
      kilted) phil_ros=kilted phil_python_version=3.11 ;;
      jazzy) phil_ros=jazzy phil_python_version=3.12 suffix=-jazzy ;;
      *)
        echo "[phil] error: ROS=$PHIL_ROS: the PyPI wheels here are kilted (the default) and" >&2
        echo "[phil]        jazzy; for another distro source its install (ROS_DISTRO) instead." >&2
        return 1 ;;
    esac
    phil_mode=pypi-$phil_ros phil_requirements_ros=requirements-ros-$phil_ros.txt
  fi
  phil_venv=$phil_root/.venv$suffix
  phil_stamps=$phil_root/.stamps$suffix
  phil_build=$phil_root/build$suffix
  phil_install=$phil_root/install$suffix
  phil_log=$phil_root/log$suffix
}

# The CPython of a version (e.g. 3.12): the distribution's first, then PATH, then pyenv; a
# clear message when there is none. Debian's build (PGO, LTO) ran pure Python a fifth faster
# here than a pyenv build of the same version (no PGO, shared libpython), the bus loop with a
# tenth less CPU; and on the robot ROS 2 from apt runs on the distribution's Python too.
phil_find_python() {
  local version=$1 purpose=$2 candidate
  for candidate in "/usr/bin/python$version" "python$version" \
                   "$(pyenv root 2>/dev/null)/versions/$version"*/bin/"python$version" \
                   "$HOME/.pyenv/versions/$version"*/bin/"python$version"; do
    # A pyenv shim is on PATH even when that version is not selected: run it to be sure. A
    # distribution's Python makes venvs with pip only with its venv package (ensurepip).
    if "$candidate" -c "import sys, venv, ensurepip; sys.exit(f'{sys.version_info[0]}.{sys.version_info[1]}' != '$version')" \
        >/dev/null 2>&1; then
      command -v "$candidate"; return
    fi
  done
  echo "[phil] error: $purpose needs CPython $version: neither python$version on PATH nor a" >&2
  echo "[phil]        pyenv version $version. Install it (e.g. 'pyenv install $version', or your" >&2
  echo "[phil]        distribution's python$version and python$version-venv) and re-run." >&2
  return 1
}

# Install the requirement files into a venv whenever they change (a stamp holds their hash).
# Returns 0 when it installed something, 1 when they were up to date; exits when pip fails.
phil_install_requirements() {
  local venv=$1 stamp=$2 args=() file wanted
  shift 2
  wanted=$(cat "$@" | sha256sum | cut -d' ' -f1)
  [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ] || return 1
  echo "[phil] installing Python packages into ${venv##*/} ($*)"
  for file in "$@"; do args+=(-r "$file"); done
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${args[@]}" || exit 1
  echo "$wanted" > "$stamp"
}

# Drop the other choice's venv and trees from the path variables of a shell that had it sourced
# (`source tools/env.sh`, then `PHIL_ROS=jazzy source tools/env.sh`): the mix loads Kilted's
# message libraries into Jazzy's Python, and a build chains the other install into this one's
# setup.bash for good. Entries outside the workspace, and this choice's own, stay; a variable
# with nothing to drop is left exactly as it was.
phil_forget_other_trees() {
  local variable entry tree others=() kept dropped
  for tree in .venv build install .venv-jazzy build-jazzy install-jazzy; do
    case "$tree" in
      "${phil_venv##*/}"|"${phil_build##*/}"|"${phil_install##*/}") ;;
      *) others+=("$phil_root/$tree") ;;
    esac
  done
  for variable in COLCON_PREFIX_PATH AMENT_PREFIX_PATH CMAKE_PREFIX_PATH LD_LIBRARY_PATH \
                  PYTHONPATH PATH _OLD_VIRTUAL_PATH; do
    [ -n "${!variable:-}" ] || continue
    kept= dropped=
    while IFS= read -r -d: entry; do
      for tree in "${others[@]}"; do
        case "$entry" in "$tree"|"$tree"/*) dropped=1; continue 2 ;; esac
      done
      kept+="$entry:"
    done <<< "${!variable}:"
    [ -n "$dropped" ] || continue
    kept=${kept%:}
    if [ -z "$kept" ]; then unset "$variable"; else export "$variable=$kept"; fi
  done
}
