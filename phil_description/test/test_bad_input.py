"""Every broken description input raises one DescriptionError naming the file and the item."""

import shutil
from pathlib import Path

import pytest

from phil_description.core import DescriptionError, load_robot_model, paths
from phil_description.core.urdf import parse_urdf


@pytest.fixture
def description(tmp_path) -> Path:
    """A private copy of urdf/ and config/ that a test may break."""
    share = paths.share_directory()
    for folder in ('urdf', 'config'):
        shutil.copytree(share / folder, tmp_path / folder)
    return tmp_path


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f'{old!r} not in {path}'
    path.write_text(text.replace(old, new, 1))


def load(description: Path):
    return load_robot_model(
        description / 'urdf' / 'phil.urdf.xacro', description / 'config' / 'poses.yaml'
    )


def expect_error(description: Path, file_name: str, *fragments: str) -> DescriptionError:
    with pytest.raises(DescriptionError) as caught:
        load(description)
    message = str(caught.value)
    assert file_name in caught.value.source, message
    for fragment in fragments:
        assert fragment in message, message
    return caught.value


def test_the_unbroken_copy_loads(description):
    assert len(load(description).joints) == 13


def test_missing_hardware_parameter(description):
    edit(
        description / 'urdf' / 'phil.ros2_control.xacro',
        '<param name="current_limit_a">${current_limit_a}</param>',
        '',
    )
    error = expect_error(description, 'phil.urdf.xacro', "parameter 'current_limit_a' is missing")
    assert error.item == "ros2_control joint 'waist'"


def test_malformed_hardware_parameter(description):
    edit(
        description / 'urdf' / 'phil.ros2_control.xacro',
        'bus="can1" node_id="4"',
        'bus="can1" node_id="four"',
    )
    expect_error(
        description,
        'phil.urdf.xacro',
        "joint 'right_elbow'",
        "parameter 'node_id' = 'four' is not a number",
    )


def test_out_of_range_hardware_parameter(description):
    edit(
        description / 'urdf' / 'phil.ros2_control.xacro',
        'direction_sign="-1" initial_deg="90" kp="60"',
        'direction_sign="2" initial_deg="90" kp="60"',
    )
    expect_error(
        description,
        'phil.urdf.xacro',
        "joint 'right_wrist'",
        "'direction_sign' = '2' must be +1 or -1",
    )


def test_unknown_motor_family(description):
    edit(
        description / 'urdf' / 'phil.ros2_control.xacro',
        '<param name="family">dynamixel</param>',
        '<param name="family">servo</param>',
    )
    expect_error(
        description,
        'phil.urdf.xacro',
        "joint 'head_yaw'",
        "'family' = 'servo' must be one of: tmotor, epos4, dynamixel",
    )


def test_unknown_canopen_frame_form(description):
    edit(
        description / 'urdf' / 'phil.urdf.xacro',
        '<xacro:arg name="epos4_frame_form" default="cia301"/>',
        '<xacro:arg name="epos4_frame_form" default="dlc8"/>',
    )
    expect_error(
        description,
        'phil.urdf.xacro',
        "joint 'right_wrist'",
        "'frame_form' = 'dlc8' must be one of: cia301, upstream",
    )


def test_two_motors_with_one_id_on_one_bus(description):
    edit(
        description / 'urdf' / 'phil.ros2_control.xacro',
        'bus="can1" node_id="3"',
        'bus="can1" node_id="1"',
    )
    expect_error(
        description,
        'phil.urdf.xacro',
        "joint 'right_shoulder_2'",
        "device id 1 on can1 is already used by 'right_shoulder_1'",
    )


def test_pose_with_an_unknown_joint(description):
    edit(
        description / 'config' / 'poses.yaml',
        'head_yaw: 0, head_pitch: 20}',
        'head_yaw: 0, head_pitch: 20, neck: 3}',
    )
    expect_error(description, 'poses.yaml', "pose 'ready'", 'unknown joint(s) neck')


def test_pose_missing_a_joint(description):
    edit(description / 'config' / 'poses.yaml', 'head_yaw: 0, head_pitch: 30}', 'head_yaw: 0}')
    expect_error(description, 'poses.yaml', "pose 'shutdown'", 'missing joint(s) head_pitch')


def test_pose_outside_the_joint_limits(description):
    edit(description / 'config' / 'poses.yaml', 'right_elbow: 65', 'right_elbow: 150')
    expect_error(
        description,
        'poses.yaml',
        "pose 'ready' joint 'right_elbow'",
        '150 deg is outside the joint limits [0, 140.1] deg',
    )


def test_pose_with_a_non_number(description):
    edit(description / 'config' / 'poses.yaml', 'right_elbow: 65', 'right_elbow: .nan')
    expect_error(description, 'poses.yaml', "joint 'right_elbow'", 'not a finite number')


def test_broken_yaml(description):
    edit(description / 'config' / 'poses.yaml', 'poses:\n', 'poses:\n  init: [\n')
    expect_error(description, 'poses.yaml', 'line ', 'YAML syntax error')


def test_missing_poses_file(description):
    (description / 'config' / 'poses.yaml').unlink()
    expect_error(description, 'poses.yaml', 'cannot read file')


def test_broken_kit_yaml_names_the_kit_file(description):
    edit(description / 'config' / 'drum_kit.yaml', 'instruments:\n', 'instruments: [\n')
    expect_error(description, 'phil.urdf.xacro', 'xacro failed', 'drum_kit.yaml')


def test_broken_xacro(description):
    edit(
        description / 'urdf' / 'phil_body.xacro',
        '${upper_arm_length} 0 0',
        '${upper_arm_lenght} 0 0',
    )
    expect_error(description, 'phil.urdf.xacro', 'xacro failed', 'upper_arm_lenght')


def test_broken_urdf_xml(tmp_path):
    broken = tmp_path / 'broken.urdf'
    broken.write_text('<robot name="phil"><link name="a"></robot>')
    with pytest.raises(DescriptionError, match=r'broken\.urdf: not well-formed XML'):
        load_robot_model(broken, paths.default_poses_path())


def test_urdf_limit_without_upper_names_the_joint():
    urdf = (
        '<robot name="r"><link name="a"/><link name="b"/>'
        '<joint name="j" type="revolute"><parent link="a"/><child link="b"/>'
        '<limit lower="0" velocity="1" effort="1"/></joint></robot>'
    )
    with pytest.raises(
        DescriptionError,
        match=r"x\.urdf: joint 'j': <limit> lacks attribute "
        r"'upper'",
    ):
        parse_urdf(urdf, 'x.urdf')


def test_joint_referring_to_an_unknown_link():
    urdf = (
        '<robot name="r"><link name="a"/>'
        '<joint name="j" type="fixed"><parent link="a"/><child link="b"/></joint></robot>'
    )
    with pytest.raises(DescriptionError, match="joint 'j': refers to unknown link 'b'"):
        parse_urdf(urdf, 'x.urdf')


def test_unknown_joint_lookup_lists_the_valid_names():
    model = load_robot_model()
    with pytest.raises(KeyError, match="unknown joint 'elbow'; valid joints: waist, "):
        model.joint('elbow')
    with pytest.raises(KeyError, match="unknown joint 'neck'"):
        model.positions({'neck': 0.1})
