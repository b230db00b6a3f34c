"""One arm's closed-form chain: the shoulder carried by the waist, the forearm and stick folded
into one virtual link whose shape depends on the wrist angle, and the planar two-link solution of
shoulder_1, shoulder_2 and elbow (vectorised over rows), with atan2 angles shifted by a whole turn
into their joint range.
"""

from __future__ import annotations

import numpy as np

from phil_control.core.kinematics.geometry import ArmGeometry

# Relative slack of the reachability test (see `solve_arm_chain`).
_RELATIVE_ROUNDING = 1e-12


def solve_arm_chain(
    geometry: ArmGeometry,
    side: float,
    tips: np.ndarray,
    waist: np.ndarray,
    wrist: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Solve shoulder_1, shoulder_2, elbow of one arm (side +1 right, -1 left) and reachability."""
    shoulder_x, shoulder_y = shoulder_xy(geometry, side, waist)
    delta_x, delta_y = tips[:, 0] - shoulder_x, tips[:, 1] - shoulder_y
    shoulder_1 = np.arctan2(delta_y, delta_x) - waist
    horizontal = np.hypot(delta_x, delta_y)
    depth = -tips[:, 2]
    virtual_length, virtual_angle = virtual_link(geometry, wrist)
    upper_arm = geometry.upper_arm_m
    cosine_term = depth**2 + horizontal**2 - upper_arm**2 - virtual_length**2
    full_span = 4.0 * upper_arm**2 * virtual_length**2
    discriminant = full_span - cosine_term**2
    # A fully stretched or folded arm gives a discriminant of 0 that rounds to a hair below.
    reachable = discriminant >= -_RELATIVE_ROUNDING * full_span
    elbow = np.arctan2(np.sqrt(np.maximum(discriminant, 0.0)), cosine_term)
    shoulder_2 = np.arctan2(horizontal, depth) - np.arctan2(
        virtual_length * np.sin(elbow), upper_arm + virtual_length * np.cos(elbow)
    )
    return shoulder_1, shoulder_2, elbow - virtual_angle, reachable


def shoulder_xy(
    geometry: ArmGeometry, side: float, waist: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Shoulder position (x, y) of one arm (side +1 right, -1 left) at waist angles, m."""
    offset = side * geometry.shoulder_offset_m
    return offset * np.cos(waist), offset * np.sin(waist)


def virtual_link(geometry: ArmGeometry, wrist: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Length and angle (from the forearm) of the elbow-to-tip segment for a wrist angle."""
    along = geometry.forearm_m + geometry.stick_m * np.cos(wrist)
    across = geometry.stick_m * np.sin(wrist)
    return np.hypot(along, across), np.arctan2(across, along)


def shift_into_range(angles: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Move angles by a whole turn where that lands them inside [lower, upper].

    atan2 differences live in (-3 pi, 3 pi), while e.g. left_shoulder_1 ranges over 30..180 deg, so
    a valid pose can come out one turn off. Angles that no shift makes valid are returned wrapped
    to (-pi, pi] for reporting.
    """
    inside = (angles >= lower) & (angles <= upper)
    shifted = lower + np.mod(angles - lower, 2.0 * np.pi)
    principal = np.pi - np.mod(np.pi - angles, 2.0 * np.pi)
    return np.where(inside, angles, np.where(shifted <= upper, shifted, principal))
