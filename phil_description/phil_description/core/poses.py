"""Named whole-body poses from config/poses.yaml, validated against the URDF joints."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from phil_description.core.errors import DescriptionError
from phil_description.core.yaml_file import load_yaml_mapping


def load_poses(
    path: Path | str, joint_names: Sequence[str], lower_rad: np.ndarray, upper_rad: np.ndarray
) -> dict[str, np.ndarray]:
    """Load named poses (degrees by joint name in the file) as radian vectors in joint order.

    Raises:
        DescriptionError: naming the file, the pose and the joint, when a pose misses a joint,
            names an unknown joint, holds a non-number, or leaves the joint limits.
    """
    source = str(path)
    poses: dict[str, np.ndarray] = {}
    for pose_name, angles in load_yaml_mapping(path, 'poses').items():
        item = f'pose {pose_name!r}'
        if not isinstance(angles, dict):
            raise DescriptionError(source, item, 'expected a mapping of joint name -> degrees')
        unknown = sorted(set(map(str, angles)) - set(joint_names))
        if unknown:
            raise DescriptionError(
                source,
                item,
                f'unknown joint(s) {", ".join(unknown)}; valid joints: {", ".join(joint_names)}',
            )
        missing = [name for name in joint_names if name not in angles]
        if missing:
            raise DescriptionError(source, item, f'missing joint(s) {", ".join(missing)}')
        vector = np.empty(len(joint_names))
        for index, joint in enumerate(joint_names):
            value = angles[joint]
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not math.isfinite(value)
            ):
                raise DescriptionError(
                    source,
                    f'{item} joint {joint!r}',
                    f'{value!r} is not a finite number of degrees',
                )
            vector[index] = math.radians(value)
            if not lower_rad[index] <= vector[index] <= upper_rad[index]:
                lower_deg, upper_deg = np.degrees([lower_rad[index], upper_rad[index]])
                raise DescriptionError(
                    source,
                    f'{item} joint {joint!r}',
                    f'{value} deg is outside the joint limits [{lower_deg:g}, {upper_deg:g}] deg',
                )
        vector.setflags(write=False)
        poses[str(pose_name)] = vector
    return poses
