# Source me (bash): the workspace environment = venv + ROS 2 + the built workspace.
# Used by the Makefile targets; also handy in a shell: `source tools/env.sh`, or
# `PHIL_ROS=jazzy source tools/env.sh` for the Jazzy venv and trees (tools/workspace.sh).

# shellcheck source=tools/workspace.sh
source "$(dirname "${BASH_SOURCE[0]}")/workspace.sh"
phil_select_ros || return 1
phil_forget_other_trees

# shellcheck disable=SC1091
source "$phil_venv/bin/activate"

if [ -z "${ROS_DISTRO:-}" ]; then
  # ROS 2 from PyPI wheels: the venv is the underlay. PHIL_ROS names the distro for the
  # launcher (a sourced install names it in ROS_DISTRO).
  export PHIL_ROS=$phil_ros
  export AMENT_PREFIX_PATH=$phil_venv${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}
  export CMAKE_PREFIX_PATH=$phil_venv${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
  export RMW_IMPLEMENTATION=${RMW_IMPLEMENTATION:-rmw_fastrtps_cpp}
fi
# colcon's build, install, test-result and log trees of this choice (the defaults for Kilted
# and a sourced install: build/, install/, log/).
if [ "$phil_install" != "$phil_root/install" ]; then
  export COLCON_DEFAULTS_FILE=$phil_root/tools/colcon/${phil_install##*/}.yaml
  export COLCON_LOG_PATH=$phil_log
elif [ "${COLCON_DEFAULTS_FILE:-}" = "$phil_root/tools/colcon/install-jazzy.yaml" ]; then
  unset COLCON_DEFAULTS_FILE COLCON_LOG_PATH  # left by an earlier PHIL_ROS=jazzy in this shell
fi

# A sourced distro can carry colcon on its PYTHONPATH without a `colcon` script on PATH (pip
# then sees it installed and adds no script to the venv): run it through Python.
if ! command -v colcon >/dev/null; then
  colcon() {
    python -c 'import sys; from colcon_core.command import main; sys.argv[0] = "colcon"; sys.exit(main())' "$@"
  }
fi

if [ -z "${PHIL_ENV_BUILDING:-}" ] && [ -f "$phil_install/setup.bash" ]; then
  # shellcheck disable=SC1091
  source "$phil_install/setup.bash"
  # Sourcing the workspace drops the venv from AMENT_PREFIX_PATH; put it back.
  case ":$AMENT_PREFIX_PATH:" in
    *":$phil_venv:"*) ;;
    *) [ -z "${ROS_DISTRO:-}" ] && export AMENT_PREFIX_PATH=$AMENT_PREFIX_PATH:$phil_venv ;;
  esac
fi

# The `phil` command (installed the ROS way under lib/phil_bringup) on PATH.
if [ -d "$phil_install/phil_bringup/lib/phil_bringup" ]; then
  case ":$PATH:" in
    *":$phil_install/phil_bringup/lib/phil_bringup:"*) ;;
    *) export PATH=$phil_install/phil_bringup/lib/phil_bringup:$PATH ;;
  esac
fi

# Keep DDS on this machine: the loopback-only Fast DDS profile (shared memory + UDP on
# 127.0.0.1; README "Network access and security"), unless a profile of the user's is set. The
# rules of phil_bringup/core/dds_scope.py: Fast DDS 3 reads FASTDDS_, Jazzy's 2.14 FASTRTPS_;
# Humble's 2.6 predates the profile's allowlist, ROS_LOCALHOST_ONLY=1 does the same there.
case "$phil_ros" in
  humble) _phil_profile_variable= ;;
  jazzy) _phil_profile_variable=FASTRTPS_DEFAULT_PROFILES_FILE ;;
  *) _phil_profile_variable=FASTDDS_DEFAULT_PROFILES_FILE ;;
esac
if [ -n "${FASTDDS_DEFAULT_PROFILES_FILE:-}${FASTRTPS_DEFAULT_PROFILES_FILE:-}" ]; then
  export ROS_AUTOMATIC_DISCOVERY_RANGE=${ROS_AUTOMATIC_DISCOVERY_RANGE:-LOCALHOST}
elif [ -z "$_phil_profile_variable" ]; then
  export ROS_LOCALHOST_ONLY=1 ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST
else
  export "$_phil_profile_variable=$phil_root/phil_bringup/config/fastdds_loopback.xml"
  # LOCALHOST (or ROS_LOCALHOST_ONLY=1) would make rmw_fastrtps add a UDP transport on every
  # interface beside the profile's.
  case "${ROS_AUTOMATIC_DISCOVERY_RANGE:-LOCALHOST}" in
    LOCALHOST) export ROS_AUTOMATIC_DISCOVERY_RANGE=SYSTEM_DEFAULT ;;
  esac
  unset ROS_LOCALHOST_ONLY
fi
export PYTHONUNBUFFERED=1
unset _phil_profile_variable
