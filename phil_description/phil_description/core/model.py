"""The robot model: the expanded URDF loaded once, as joints, limits, hardware, poses, kit and FK.

Typical use::

    model = load_robot_model()                  # installed or source-tree description
    model.joint('right_elbow').upper_rad        # 2.445
    model.poses['ready']                        # radians, joint order
    tips = model.stick_tip_positions(model.poses['ready'])   # kinematic frame, m
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from phil_description.core import paths
from phil_description.core.errors import DescriptionError
from phil_description.core.frames import BASE_FRAME, KINEMATIC_FRAME
from phil_description.core.hardware import HardwareConfig, MotorParams, parse_hardware
from phil_description.core.kinematics import KinematicTree
from phil_description.core.kit import HANDS, DrumKit, parse_kit
from phil_description.core.poses import load_poses
from phil_description.core.urdf import UrdfDocument, parse_urdf


@dataclass(frozen=True)
class JointSpec:
    """One actuated joint: limits (rad, rad/s, N m) and its motor."""

    name: str
    index: int
    lower_rad: float
    upper_rad: float
    soft_lower_rad: float  # planning/IK limits (URDF <safety_controller>), inside the hard ones
    soft_upper_rad: float
    velocity_limit_rad_s: float
    effort_limit: float
    motor: MotorParams

    def contains(self, position_rad: float, soft: bool = False) -> bool:
        lower, upper = (
            (self.soft_lower_rad, self.soft_upper_rad)
            if soft
            else (self.lower_rad, self.upper_rad)
        )
        return lower <= position_rad <= upper


@dataclass(frozen=True)
class ArmLengths:
    """Arm link lengths (m) read from the URDF joint origins; the same for both arms."""

    shoulder_offset_m: float  # waist axis to each shoulder_1 axis
    upper_arm_m: float
    forearm_m: float
    stick_m: float


def expand_xacro(path: Path | str, mappings: Mapping[str, str] | None = None) -> str:
    """Expand a xacro file to URDF XML.

    Raises:
        DescriptionError: the file is missing or xacro rejects it (message names the file).
    """
    import xacro

    path = Path(path)
    if not path.is_file():
        raise DescriptionError(str(path), '', 'file not found')
    try:
        document = xacro.process_file(str(path), mappings=dict(mappings or {}))
    except Exception as error:  # xacro raises many unrelated types; report them all as ours
        raise DescriptionError(str(path), '', f'xacro failed: {error}') from None
    return document.toprettyxml(indent='  ')


class RobotModel:
    """Joints, limits, hardware parameters, poses, drum kit and forward kinematics."""

    def __init__(self, urdf_xml: str, source: str, poses_path: Path | str) -> None:
        self.urdf_xml = urdf_xml
        self.source = source
        self.document: UrdfDocument = parse_urdf(urdf_xml, source)
        if self.document.ros2_control is None:
            raise DescriptionError(source, 'ros2_control', 'the URDF has no <ros2_control> block')
        self.hardware: HardwareConfig = parse_hardware(self.document.ros2_control, source)
        self.joints: tuple[JointSpec, ...] = tuple(self._joint_specs())
        self.joint_names: tuple[str, ...] = tuple(joint.name for joint in self.joints)
        self._by_name = {joint.name: joint for joint in self.joints}
        self.lower_rad = np.array([joint.lower_rad for joint in self.joints])
        self.upper_rad = np.array([joint.upper_rad for joint in self.joints])
        self.soft_lower_rad = np.array([joint.soft_lower_rad for joint in self.joints])
        self.soft_upper_rad = np.array([joint.soft_upper_rad for joint in self.joints])
        self.velocity_limit_rad_s = np.array([j.velocity_limit_rad_s for j in self.joints])
        self.tree = KinematicTree(self.document.joints, self.joint_names, source)
        self.poses: dict[str, np.ndarray] = load_poses(
            poses_path, self.joint_names, self.lower_rad, self.upper_rad
        )
        zero = np.zeros(len(self.joints))
        self.kit: DrumKit = parse_kit(
            self.document.drum_kit,
            source,
            self.document.links,
            self.joint_names,
            lambda link: self.tree.link_position(zero, link, relative_to=KINEMATIC_FRAME),
        )
        self.arm_lengths: ArmLengths = self._arm_lengths()

    def _joint_specs(self):
        for index, control_joint in enumerate(self.document.ros2_control.joints):
            urdf_joint = self.document.joints.get(control_joint.name)
            item = f'ros2_control joint {control_joint.name!r}'
            if urdf_joint is None or not urdf_joint.movable:
                raise DescriptionError(self.source, item, 'is not a movable joint of the URDF')
            if not math.isfinite(urdf_joint.lower) or not math.isfinite(urdf_joint.upper):
                raise DescriptionError(self.source, item, 'needs finite <limit> lower/upper')
            soft_lower, soft_upper = urdf_joint.soft_lower, urdf_joint.soft_upper
            if soft_lower is None:
                soft_lower, soft_upper = urdf_joint.lower, urdf_joint.upper
            yield JointSpec(
                name=control_joint.name,
                index=index,
                lower_rad=urdf_joint.lower,
                upper_rad=urdf_joint.upper,
                soft_lower_rad=soft_lower,
                soft_upper_rad=soft_upper,
                velocity_limit_rad_s=urdf_joint.velocity,
                effort_limit=urdf_joint.effort,
                motor=self.hardware.motors[control_joint.name],
            )

    def _arm_lengths(self) -> ArmLengths:
        joints = self.document.joints
        lengths = {}
        for hand in HANDS:
            names = (
                f'{hand}_shoulder_1',
                f'{hand}_elbow',
                f'{hand}_wrist',
                f'{hand}_stick_tip_joint',
            )
            missing = [name for name in names if name not in joints]
            if missing:
                raise DescriptionError(self.source, f'{hand} arm', f'missing joint(s) {missing}')
            shoulder = joints[names[0]].origin_xyz
            lengths[hand] = ArmLengths(
                shoulder_offset_m=math.hypot(shoulder[0], shoulder[1]),
                upper_arm_m=float(np.linalg.norm(joints[names[1]].origin_xyz)),
                forearm_m=float(np.linalg.norm(joints[names[2]].origin_xyz)),
                stick_m=float(np.linalg.norm(joints[names[3]].origin_xyz)),
            )
        if lengths['right'] != lengths['left']:
            raise DescriptionError(
                self.source,
                'arms',
                f'right and left arm lengths differ: {lengths["right"]} vs {lengths["left"]}',
            )
        return lengths['right']

    def joint(self, name: str) -> JointSpec:
        """The joint called ``name``; KeyError lists the valid names."""
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(
                f'unknown joint {name!r}; valid joints: {", ".join(self.joint_names)}'
            ) from None

    def positions(
        self, by_name: Mapping[str, float], base: Sequence[float] | None = None
    ) -> np.ndarray:
        """A joint-order vector from ``{joint: rad}``; joints not named keep ``base`` (or 0)."""
        vector = np.zeros(len(self.joints)) if base is None else np.array(base, dtype=float)
        for name, value in by_name.items():
            vector[self.joint(name).index] = value
        return vector

    def limit_violations(self, positions_rad: Sequence[float], soft: bool = False) -> list[str]:
        """Human-readable list of joints outside their (hard or soft) limits; empty if none."""
        problems = []
        for joint, value in zip(self.joints, positions_rad, strict=True):
            if not math.isfinite(value):
                problems.append(f'{joint.name}: {value} is not finite')
            elif not joint.contains(value, soft):
                lower, upper = (
                    (joint.soft_lower_rad, joint.soft_upper_rad)
                    if soft
                    else (joint.lower_rad, joint.upper_rad)
                )
                problems.append(
                    f'{joint.name}: {math.degrees(value):.2f} deg outside '
                    f'[{math.degrees(lower):g}, {math.degrees(upper):g}] deg'
                )
        return problems

    def link_transform(
        self, positions_rad: np.ndarray, link: str, frame: str = BASE_FRAME
    ) -> np.ndarray:
        """Pose (4x4, batched over leading axes) of ``link`` in ``frame`` from the URDF."""
        return self.tree.link_transform(positions_rad, link, relative_to=frame)

    def stick_tip_positions(
        self, positions_rad: np.ndarray, frame: str = KINEMATIC_FRAME
    ) -> tuple[np.ndarray, np.ndarray]:
        """(right, left) stick-tip positions in ``frame`` (m), batched over leading axes."""
        return (
            self.tree.link_position(positions_rad, 'right_stick_tip', relative_to=frame),
            self.tree.link_position(positions_rad, 'left_stick_tip', relative_to=frame),
        )

    def shoulder_positions(self, waist_rad: np.ndarray) -> dict[str, np.ndarray]:
        """Shoulder centres (kinematic frame, m) for waist angles (batched)."""
        waist = np.asarray(waist_rad, dtype=float)
        positions = np.zeros(waist.shape + (len(self.joints),))
        positions[..., self.joint('waist').index] = waist
        return {
            hand: self.tree.link_position(
                positions, f'{hand}_shoulder_1_link', relative_to=KINEMATIC_FRAME
            )
            for hand in HANDS
        }


def load_robot_model(
    urdf_path: Path | str | None = None,
    poses_path: Path | str | None = None,
    xacro_args: Mapping[str, str] | None = None,
) -> RobotModel:
    """Expand (``.xacro``) or read (``.urdf``) the description and build the RobotModel.

    Args:
        urdf_path: description file; default: the installed ``urdf/phil.urdf.xacro``.
        poses_path: named poses; default: the installed ``config/poses.yaml``.
        xacro_args: xacro arguments, e.g. ``{'sim': 'true'}``.

    Raises:
        DescriptionError: naming the file and the item, for any missing or invalid content.
    """
    urdf_path = Path(urdf_path) if urdf_path is not None else paths.default_urdf_path()
    poses_path = Path(poses_path) if poses_path is not None else paths.default_poses_path()
    if urdf_path.suffix == '.xacro':
        xml = expand_xacro(urdf_path, xacro_args)
    else:
        try:
            xml = urdf_path.read_text()
        except OSError as error:
            raise DescriptionError(str(urdf_path), '', f'cannot read ({error.strerror})') from None
    return RobotModel(xml, str(urdf_path), poses_path)


@functools.lru_cache(maxsize=4)
def default_robot_model(sim: bool = False, epos4_frame_form: str = 'cia301') -> RobotModel:
    """The installed description, expanded once per process (``sim`` selects simulated buses,
    ``epos4_frame_form`` the xacro argument of that name)."""
    return load_robot_model(
        xacro_args={'sim': 'true' if sim else 'false', 'epos4_frame_form': epos4_frame_form}
    )
