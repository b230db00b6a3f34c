"""Where the description files are: the installed share directory, else the source tree."""

from __future__ import annotations

from pathlib import Path

PACKAGE = 'phil_description'


def share_directory() -> Path:
    """The package's share directory (urdf/, config/, rviz/).

    Uses the ament index when the package is installed, and falls back to the source tree
    so the core also works from a plain checkout.
    """
    try:
        from ament_index_python.packages import (
            PackageNotFoundError,
            get_package_share_directory,
        )
    except ImportError:
        pass
    else:
        try:
            return Path(get_package_share_directory(PACKAGE))
        except (PackageNotFoundError, OSError):  # OSError: no AMENT_PREFIX_PATH at all
            pass
    return Path(__file__).resolve().parents[2]


def default_urdf_path() -> Path:
    return share_directory() / 'urdf' / 'phil.urdf.xacro'


def default_poses_path() -> Path:
    return share_directory() / 'config' / 'poses.yaml'


def default_rviz_path() -> Path:
    return share_directory() / 'rviz' / 'phil.rviz'
