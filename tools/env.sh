# Source me (bash): the workspace environment = venv + ROS 2 + the built workspace.
# Used by the Makefile targets; also handy in a shell: `source tools/env.sh`.

_phil_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
_phil_venv=$_phil_root/.venv

# shellcheck disable=SC1091
source "$_phil_venv/bin/activate"

if [ -z "${ROS_DISTRO:-}" ]; then
  # ROS 2 from PyPI wheels: the venv is the underlay.
  export AMENT_PREFIX_PATH=$_phil_venv${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}
  export CMAKE_PREFIX_PATH=$_phil_venv${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
  export RMW_IMPLEMENTATION=${RMW_IMPLEMENTATION:-rmw_fastrtps_cpp}
fi

# A sourced distro can carry colcon on its PYTHONPATH without a `colcon` script on PATH (pip
# then sees it installed and adds no script to the venv): run it through Python.
if ! command -v colcon >/dev/null; then
  colcon() {
    python -c 'import sys; from colcon_core.command import main; sys.argv[0] = "colcon"; sys.exit(main())' "$@"
  }
fi

if [ -z "${PHIL_ENV_BUILDING:-}" ] && [ -f "$_phil_root/install/setup.bash" ]; then
  # shellcheck disable=SC1091
  source "$_phil_root/install/setup.bash"
  # Sourcing the workspace drops the venv from AMENT_PREFIX_PATH; put it back.
  case ":$AMENT_PREFIX_PATH:" in
    *":$_phil_venv:"*) ;;
    *) [ -z "${ROS_DISTRO:-}" ] && export AMENT_PREFIX_PATH=$AMENT_PREFIX_PATH:$_phil_venv ;;
  esac
fi

# The `phil` command (installed the ROS way under lib/phil_bringup) on PATH.
if [ -d "$_phil_root/install/phil_bringup/lib/phil_bringup" ]; then
  case ":$PATH:" in
    *":$_phil_root/install/phil_bringup/lib/phil_bringup:"*) ;;
    *) export PATH=$_phil_root/install/phil_bringup/lib/phil_bringup:$PATH ;;
  esac
fi

# Keep DDS on this machine: the loopback-only Fast DDS profile (shared memory + UDP on
# 127.0.0.1; README "Network access and security"), unless a profile of the user's is set. The
# rules of phil_bringup/core/dds_scope.py: Fast DDS 3 reads FASTDDS_, Jazzy's 2.14 FASTRTPS_;
# Humble's 2.6 predates the profile's allowlist, ROS_LOCALHOST_ONLY=1 does the same there.
case "${ROS_DISTRO:-}" in
  humble) _phil_profile_variable= ;;
  jazzy) _phil_profile_variable=FASTRTPS_DEFAULT_PROFILES_FILE ;;
  *) _phil_profile_variable=FASTDDS_DEFAULT_PROFILES_FILE ;;
esac
if [ -n "${FASTDDS_DEFAULT_PROFILES_FILE:-}${FASTRTPS_DEFAULT_PROFILES_FILE:-}" ]; then
  export ROS_AUTOMATIC_DISCOVERY_RANGE=${ROS_AUTOMATIC_DISCOVERY_RANGE:-LOCALHOST}
elif [ -z "$_phil_profile_variable" ]; then
  export ROS_LOCALHOST_ONLY=1 ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST
else
  export "$_phil_profile_variable=$_phil_root/phil_bringup/config/fastdds_loopback.xml"
  # LOCALHOST (or ROS_LOCALHOST_ONLY=1) would make rmw_fastrtps add a UDP transport on every
  # interface beside the profile's.
  case "${ROS_AUTOMATIC_DISCOVERY_RANGE:-LOCALHOST}" in
    LOCALHOST) export ROS_AUTOMATIC_DISCOVERY_RANGE=SYSTEM_DEFAULT ;;
  esac
  unset ROS_LOCALHOST_ONLY
fi
export PYTHONUNBUFFERED=1
unset _phil_root _phil_venv _phil_profile_variable
