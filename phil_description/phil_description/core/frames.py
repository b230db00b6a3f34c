"""The one mapping between REP 103 and the robot's kinematic frame.

base_link (REP 103): x forward, y left, z up, on the floor under the waist axis.
kinematic_frame (the drum-kit and arm-IK frame, as the upstream controller uses it):
x = robot's right, y = forward, z = up, origin on the waist axis at shoulder height.
The URDF's fixed joint ``kinematic_frame_joint`` is the only place that relates the two;
these helpers read it rather than restating it.
"""

from __future__ import annotations

import numpy as np

BASE_FRAME = 'base_link'
KINEMATIC_FRAME = 'kinematic_frame'


def transform_points(transform: np.ndarray, points_m: np.ndarray) -> np.ndarray:
    """Apply a 4x4 transform to points of shape (3,) or (N, 3)."""
    points = np.asarray(points_m, dtype=float)
    return points @ transform[:3, :3].T + transform[:3, 3]
