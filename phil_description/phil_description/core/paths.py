"""Where the description files are: the installed share directory, else the source tree."""

from __future__ import annotations

from pathlib import Path

PACKAGE = 'phil_description'


def installed_share_directory(package: str) -> Path | None:
    """``package``'s share directory from the ament index; None when it is not installed (or
    ament_index_python is missing, or no AMENT_PREFIX_PATH is set)."""
    try:
        from ament_index_python.packages import (
            PackageNotFoundError,
            get_package_share_directory,
        )
    except ImportError:
        return None
    try:
        return Path(get_package_share_directory(package))
    except (PackageNotFoundError, OSError):  # OSError: no AMENT_PREFIX_PATH at all
        return None


def share_directory() -> Path:
    """The package's share directory (urdf/, config/, rviz/).

    Uses the ament index when the package is installed, and falls back to the source tree
    so the core also works from a plain checkout.
    """
    return installed_share_directory(PACKAGE) or Path(__file__).resolve().parents[2]


def default_urdf_path() -> Path:
    return share_directory() / 'urdf' / 'phil.urdf.xacro'


def default_poses_path() -> Path:
    return share_directory() / 'config' / 'poses.yaml'


def default_rviz_path() -> Path:
    return share_directory() / 'rviz' / 'phil.rviz'
