"""Parse an expanded URDF into plain data: joints, links, <ros2_control> and <drum_kit>.

Only the subset Phil uses is read; anything malformed raises DescriptionError naming the
file and the element.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from phil_description.core.errors import DescriptionError

MOVABLE_JOINT_TYPES = ('revolute', 'continuous', 'prismatic')


@dataclass(frozen=True)
class UrdfJoint:
    """One URDF joint. Angles in rad, lengths in m."""

    name: str
    type: str
    parent: str
    child: str
    origin_xyz: tuple[float, float, float]
    origin_rpy: tuple[float, float, float]
    axis: tuple[float, float, float]
    lower: float = -math.inf
    upper: float = math.inf
    velocity: float = math.inf
    effort: float = math.inf
    soft_lower: float | None = None
    soft_upper: float | None = None

    @property
    def movable(self) -> bool:
        return self.type in MOVABLE_JOINT_TYPES


@dataclass(frozen=True)
class Ros2ControlJoint:
    """A <joint> of the <ros2_control> block: interfaces and hardware parameters (strings)."""

    name: str
    command_interfaces: tuple[str, ...]
    state_interfaces: tuple[str, ...]
    params: dict[str, str]


@dataclass(frozen=True)
class Ros2ControlBlock:
    """The <ros2_control> block: plugin, hardware-level parameters, joints in declared order."""

    name: str
    plugin: str
    params: dict[str, str]
    joints: tuple[Ros2ControlJoint, ...]


@dataclass(frozen=True)
class UrdfDocument:
    """An expanded URDF as data."""

    source: str
    robot_name: str
    links: tuple[str, ...]
    joints: dict[str, UrdfJoint]
    ros2_control: Ros2ControlBlock | None
    drum_kit: ET.Element | None = field(default=None, compare=False)


def _floats(text: str | None, count: int, source: str, item: str, what: str) -> tuple:
    if text is None:
        raise DescriptionError(source, item, f'{what} is missing')
    parts = text.split()
    try:
        values = tuple(float(part) for part in parts)
    except ValueError:
        raise DescriptionError(source, item, f'{what} {text!r} is not {count} numbers') from None
    if len(values) != count or not all(math.isfinite(v) for v in values):
        raise DescriptionError(source, item, f'{what} {text!r} is not {count} finite numbers')
    return values


def _float_attr(element: ET.Element, attribute: str, source: str, item: str) -> float:
    text = element.get(attribute)
    if text is None:
        raise DescriptionError(source, item, f'<{element.tag}> lacks attribute {attribute!r}')
    return _floats(text, 1, source, item, f'<{element.tag} {attribute}>')[0]


def _parse_joint(element: ET.Element, source: str) -> UrdfJoint:
    name = element.get('name')
    if not name:
        raise DescriptionError(source, 'joint', 'a <joint> has no name')
    item = f'joint {name!r}'
    joint_type = element.get('type', '')
    if joint_type not in (*MOVABLE_JOINT_TYPES, 'fixed', 'floating', 'planar'):
        raise DescriptionError(source, item, f'unknown joint type {joint_type!r}')
    links = {}
    for tag in ('parent', 'child'):
        link_element = element.find(tag)
        if link_element is None or not link_element.get('link'):
            raise DescriptionError(source, item, f'<{tag} link=...> is missing')
        links[tag] = link_element.get('link')
    origin = element.find('origin')
    if origin is None:
        origin = ET.Element('origin')
    xyz = _floats(origin.get('xyz', '0 0 0'), 3, source, item, 'origin xyz')
    rpy = _floats(origin.get('rpy', '0 0 0'), 3, source, item, 'origin rpy')
    axis_element = element.find('axis')
    axis = (1.0, 0.0, 0.0)
    if axis_element is not None:
        axis = _floats(axis_element.get('xyz'), 3, source, item, 'axis xyz')
    if joint_type in MOVABLE_JOINT_TYPES and math.hypot(*axis) < 1e-9:
        raise DescriptionError(source, item, 'axis has zero length')
    limits: dict[str, float | None] = {}
    limit = element.find('limit')
    if joint_type in ('revolute', 'prismatic'):
        if limit is None:
            raise DescriptionError(source, item, f'a {joint_type} joint needs <limit>')
        for attribute in ('lower', 'upper', 'velocity', 'effort'):
            limits[attribute] = _float_attr(limit, attribute, source, item)
        if limits['lower'] >= limits['upper']:
            raise DescriptionError(
                source,
                item,
                f'lower limit {limits["lower"]} is not below upper limit {limits["upper"]}',
            )
        if limits['velocity'] <= 0 or limits['effort'] <= 0:
            raise DescriptionError(source, item, 'velocity and effort limits must be positive')
    safety = element.find('safety_controller')
    if safety is not None:
        limits['soft_lower'] = _float_attr(safety, 'soft_lower_limit', source, item)
        limits['soft_upper'] = _float_attr(safety, 'soft_upper_limit', source, item)
        if not (limits['lower'] <= limits['soft_lower'] < limits['soft_upper'] <= limits['upper']):
            raise DescriptionError(source, item, 'soft limits are not inside the hard limits')
    return UrdfJoint(
        name=name,
        type=joint_type,
        parent=links['parent'],
        child=links['child'],
        origin_xyz=xyz,
        origin_rpy=rpy,
        axis=axis,
        **limits,
    )


def _parse_params(element: ET.Element, source: str, item: str) -> dict[str, str]:
    params: dict[str, str] = {}
    for param in element.findall('param'):
        key = param.get('name')
        if not key:
            raise DescriptionError(source, item, 'a <param> has no name')
        if key in params:
            raise DescriptionError(source, item, f'parameter {key!r} is given twice')
        params[key] = (param.text or '').strip()
    return params


def _interface_names(joint: ET.Element, tag: str) -> tuple[str, ...]:
    return tuple(interface.get('name', '') for interface in joint.findall(tag))


def _parse_ros2_control(element: ET.Element, source: str) -> Ros2ControlBlock:
    name = element.get('name', '')
    hardware = element.find('hardware')
    if hardware is None:
        raise DescriptionError(source, f'ros2_control {name!r}', '<hardware> is missing')
    plugin = (hardware.findtext('plugin') or '').strip()
    joints = []
    for joint in element.findall('joint'):
        joint_name = joint.get('name', '')
        item = f'ros2_control joint {joint_name!r}'
        joints.append(
            Ros2ControlJoint(
                name=joint_name,
                command_interfaces=_interface_names(joint, 'command_interface'),
                state_interfaces=_interface_names(joint, 'state_interface'),
                params=_parse_params(joint, source, item),
            )
        )
    return Ros2ControlBlock(
        name=name,
        plugin=plugin,
        params=_parse_params(hardware, source, f'ros2_control {name!r}'),
        joints=tuple(joints),
    )


def parse_urdf(xml_text: str, source: str = '<urdf>') -> UrdfDocument:
    """Parse an expanded URDF string.

    Args:
        xml_text: the URDF XML (already expanded by xacro).
        source: a name for error messages, usually the file path.

    Raises:
        DescriptionError: malformed XML, missing or invalid elements, duplicate names,
            joints that reference unknown links.
    """
    try:
        root = ET.fromstring(xml_text)
    except ET.ParseError as error:
        raise DescriptionError(source, '', f'not well-formed XML ({error})') from None
    if root.tag != 'robot':
        raise DescriptionError(source, '', f'root element is <{root.tag}>, expected <robot>')
    links = []
    for link in root.findall('link'):
        link_name = link.get('name')
        if not link_name:
            raise DescriptionError(source, 'link', 'a <link> has no name')
        if link_name in links:
            raise DescriptionError(source, f'link {link_name!r}', 'defined twice')
        links.append(link_name)
    joints: dict[str, UrdfJoint] = {}
    for element in root.findall('joint'):
        joint = _parse_joint(element, source)
        if joint.name in joints:
            raise DescriptionError(source, f'joint {joint.name!r}', 'defined twice')
        for link_name in (joint.parent, joint.child):
            if link_name not in links:
                raise DescriptionError(
                    source, f'joint {joint.name!r}', f'refers to unknown link {link_name!r}'
                )
        joints[joint.name] = joint
    blocks = root.findall('ros2_control')
    if len(blocks) > 1:
        raise DescriptionError(source, 'ros2_control', 'only one <ros2_control> block is allowed')
    return UrdfDocument(
        source=source,
        robot_name=root.get('name', ''),
        links=tuple(links),
        joints=joints,
        ros2_control=_parse_ros2_control(blocks[0], source) if blocks else None,
        drum_kit=root.find('drum_kit'),
    )
