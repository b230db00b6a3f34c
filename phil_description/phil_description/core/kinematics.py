"""Forward kinematics straight from the URDF's joint origins and axes (numpy, batched)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from phil_description.core.errors import DescriptionError
from phil_description.core.urdf import UrdfJoint


def rpy_matrix(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """URDF fixed-axis roll-pitch-yaw: R = Rz(yaw) @ Ry(pitch) @ Rx(roll)."""
    cr, sr = np.cos(roll), np.sin(roll)
    cp, sp = np.cos(pitch), np.sin(pitch)
    cy, sy = np.cos(yaw), np.sin(yaw)
    return np.array(
        [
            [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr],
        ]
    )


def origin_transform(joint: UrdfJoint) -> np.ndarray:
    """The joint's fixed <origin> as a 4x4 homogeneous transform (parent -> joint frame)."""
    transform = np.eye(4)
    transform[:3, :3] = rpy_matrix(*joint.origin_rpy)
    transform[:3, 3] = joint.origin_xyz
    return transform


def axis_rotation(axis: np.ndarray, angles_rad: np.ndarray) -> np.ndarray:
    """Rotations about a unit axis, batched over ``angles_rad``: shape (*angles.shape, 4, 4)."""
    x, y, z = axis
    skew = np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])
    angles = np.asarray(angles_rad, dtype=float)[..., None, None]
    rotation = np.eye(3) + np.sin(angles) * skew + (1.0 - np.cos(angles)) * (skew @ skew)
    transform = np.zeros(angles.shape[:-2] + (4, 4))
    transform[..., :3, :3] = rotation
    transform[..., 3, 3] = 1.0
    return transform


class KinematicTree:
    """The URDF's link tree, for forward kinematics of any link.

    Args:
        joints: URDF joints by name (fixed and revolute; prismatic is not used by Phil).
        joint_order: names of the movable joints, in the order of the position vectors passed
            to :meth:`link_transform`.
        source: file name for error messages.
    """

    def __init__(
        self, joints: Mapping[str, UrdfJoint], joint_order: Sequence[str], source: str
    ) -> None:
        self._source = source
        self._joint_index = {name: index for index, name in enumerate(joint_order)}
        self._parent_joint: dict[str, UrdfJoint] = {}
        for joint in joints.values():
            if joint.child in self._parent_joint:
                raise DescriptionError(source, f'link {joint.child!r}', 'has two parent joints')
            if joint.type == 'prismatic':
                raise DescriptionError(
                    source, f'joint {joint.name!r}', 'prismatic joints are not supported'
                )
            self._parent_joint[joint.child] = joint
        for name in joint_order:
            if name not in joints or not joints[name].movable:
                raise DescriptionError(source, f'joint {name!r}', 'is not a movable URDF joint')
        for joint in joints.values():
            if joint.movable and joint.name not in self._joint_index:
                raise DescriptionError(
                    source,
                    f'joint {joint.name!r}',
                    'is movable but has no actuator in <ros2_control>',
                )
        self._origins = {name: origin_transform(joint) for name, joint in joints.items()}
        self._axes = {
            name: np.asarray(joint.axis) / np.linalg.norm(joint.axis)
            for name, joint in joints.items()
        }
        self._chains: dict[str, tuple[UrdfJoint, ...]] = {}
        roots = {joint.parent for joint in joints.values()} - set(self._parent_joint)
        if len(roots) != 1:
            raise DescriptionError(
                source, '', f'the link tree must have one root, found {sorted(roots)}'
            )
        self.root = roots.pop()

    def chain(self, link: str) -> tuple[UrdfJoint, ...]:
        """Joints from the root to ``link``, root first."""
        if link not in self._chains:
            joints = []
            current = link
            while current != self.root:
                joint = self._parent_joint.get(current)
                if joint is None:
                    raise DescriptionError(self._source, f'link {link!r}', 'is not in the tree')
                joints.append(joint)
                current = joint.parent
            self._chains[link] = tuple(reversed(joints))
        return self._chains[link]

    def link_transform(
        self, positions_rad: np.ndarray, link: str, relative_to: str | None = None
    ) -> np.ndarray:
        """Pose of ``link`` in the frame of ``relative_to`` (default: the root link).

        Args:
            positions_rad: joint positions in ``joint_order``, shape (J,) or batched (..., J).
            link: the link whose frame is wanted.
            relative_to: express it in this link's frame instead of the root's.

        Returns:
            4x4 homogeneous transform(s), shape (4, 4) or (..., 4, 4).
        """
        positions = np.asarray(positions_rad, dtype=float)
        transform = np.broadcast_to(np.eye(4), positions.shape[:-1] + (4, 4))
        for joint in self.chain(link):
            transform = transform @ self._origins[joint.name]
            if joint.movable:
                angle = positions[..., self._joint_index[joint.name]]
                transform = transform @ axis_rotation(self._axes[joint.name], angle)
        if relative_to is not None and relative_to != self.root:
            reference = self.link_transform(positions, relative_to)
            transform = np.linalg.inv(reference) @ transform
        return transform

    def link_position(
        self, positions_rad: np.ndarray, link: str, relative_to: str | None = None
    ) -> np.ndarray:
        """Origin of ``link`` (m), shape (3,) or (..., 3)."""
        return self.link_transform(positions_rad, link, relative_to)[..., :3, 3]
