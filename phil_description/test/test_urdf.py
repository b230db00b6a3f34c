"""The URDF expands, parses and carries every number of the upstream joint table."""

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from upstream_reference import IK_LIMITS, JOINT_TABLE, UPSTREAM_CONFIG

from phil_description.core import (
    DynamixelParams,
    Epos4Params,
    MotorFamily,
    TMotorParams,
    load_robot_model,
    paths,
)
from phil_description.core.urdf import parse_urdf


@pytest.fixture(scope='module')
def model():
    return load_robot_model()


def test_xacro_command_line_expands_to_a_parsable_urdf():
    xacro_file = paths.default_urdf_path()
    xacro = shutil.which('xacro') or str(Path(sys.executable).with_name('xacro'))
    result = subprocess.run([xacro, str(xacro_file)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    document = parse_urdf(result.stdout, 'xacro output')
    assert document.robot_name == 'phil'
    movable = [joint.name for joint in document.joints.values() if joint.movable]
    assert len(movable) == 13


def test_thirteen_joints_in_upstream_index_order(model):
    assert model.joint_names == tuple(row[1] for row in JOINT_TABLE)
    for joint in model.joints:
        assert model.document.joints[joint.name].type == 'revolute'


@pytest.mark.parametrize('row', JOINT_TABLE, ids=[row[1] for row in JOINT_TABLE])
def test_joint_table_values(model, row):
    (
        index,
        name,
        family,
        model_name,
        gear,
        device_id,
        sign,
        initial,
        lower,
        upper,
        current,
        gains,
    ) = row
    joint = model.joint(name)
    motor = joint.motor
    assert joint.index == index
    assert motor.family is MotorFamily(family)
    assert model_name in motor.model
    assert motor.device_id == device_id
    assert motor.direction_sign == sign
    assert math.degrees(motor.initial_position_rad) == pytest.approx(initial)
    assert math.degrees(joint.lower_rad) == pytest.approx(lower)
    assert math.degrees(joint.upper_rad) == pytest.approx(upper)
    soft_lower, soft_upper = IK_LIMITS[name]
    assert math.degrees(joint.soft_lower_rad) == pytest.approx(soft_lower)
    assert math.degrees(joint.soft_upper_rad) == pytest.approx(soft_upper)
    if isinstance(motor, TMotorParams):
        assert motor.gear_ratio == gear
        assert motor.pole_pairs == 21
        assert motor.current_limit_a == pytest.approx(current)
        assert motor.control_gain_erpm_per_rad == pytest.approx(gains)
    elif isinstance(motor, Epos4Params):
        assert motor.gear_ratio == gear
        assert motor.counts_per_output_rev == 143360
        assert (motor.kp_mnm_per_rad, motor.kd_mnm_s_per_rad) == pytest.approx(gains)
        assert motor.rated_torque_mnm == pytest.approx(31.052)
    else:
        assert isinstance(motor, DynamixelParams)


def test_bus_layout_and_parameters(model):
    hardware = model.hardware
    assert set(hardware.can_buses) == {'can0', 'can1', 'can2', 'can3'}
    for bus in hardware.can_buses.values():
        assert bus.interface == 'socketcan'
        assert bus.channel == bus.name
        assert bus.bitrate == 1_000_000
    dxl = hardware.serial_buses['dxl']
    assert (dxl.port, dxl.baudrate, dxl.protocol_version, dxl.latency_timer_ms) == (
        '/dev/ttyUSB0',
        4_500_000,
        2.0,
        1,
    )
    assert [m.joint for m in hardware.motors_on_bus('can3')] == ['right_wrist', 'left_wrist']
    assert [m.joint for m in hardware.motors_on_bus('can2')] == ['right_pedal', 'left_pedal']
    assert [m.joint for m in hardware.motors_on_bus('dxl')] == ['head_yaw', 'head_pitch']


def test_sim_argument_switches_every_bus_to_the_simulators():
    sim = load_robot_model(xacro_args={'sim': 'true', 'sim_dxl_port': '/tmp/x/ttyDXL'})
    channels = {bus.channel for bus in sim.hardware.can_buses.values()}
    assert all(bus.interface == 'udp_multicast' for bus in sim.hardware.can_buses.values())
    # IPv6 interface-local multicast (ff11::/16) only: simulated frames never leave the host.
    assert all(channel.startswith('ff11::') for channel in channels) and len(channels) == 4
    assert sim.hardware.serial_buses['dxl'].port == '/tmp/x/ttyDXL'


def test_every_movable_joint_has_an_actuator_with_position_and_velocity_commands(model):
    for control_joint in model.document.ros2_control.joints:
        assert control_joint.command_interfaces == ('position', 'velocity')
        assert set(control_joint.state_interfaces) == {'position', 'velocity', 'effort'}


@pytest.mark.skipif(not UPSTREAM_CONFIG.is_dir(), reason='upstream reference files not present')
def test_matches_upstream_motors_json(model):
    motors = json.loads((UPSTREAM_CONFIG / 'motors.json').read_text())['motors']
    for entry in motors:
        joint = model.joint(entry['name'])
        assert joint.index == entry['id']
        assert math.degrees(joint.lower_rad) == pytest.approx(entry['min_angle'])
        assert math.degrees(joint.upper_rad) == pytest.approx(entry['max_angle'])
        assert joint.motor.direction_sign == entry['direction_sign']
        assert math.degrees(joint.motor.initial_position_rad) == pytest.approx(
            entry['initial_joint_angle']
        )
        expected_id = entry.get('dxl_id', entry.get('node_id'))
        assert joint.motor.device_id == (
            int(expected_id, 16) if isinstance(expected_id, str) else expected_id
        )
