"""BusController against the device simulators in-process (python-can virtual buses + PTY):
discovery, configure, activate, trajectory following, fault injection, ESTOP and reset."""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_bus_rig import make_rig

from phil_description.core import default_robot_model
from phil_description.core.trajectory import Chunk, ControlMode
from phil_hardware.core.bus_controller import Lifecycle, MotorMissingError
from phil_hardware.core.codecs import epos4 as epos4_codec
from phil_hardware.core.codecs import tmotor as tmotor_codec
from phil_hardware.core.codecs.frame import CanFrame
from phil_hardware.core.safety import FaultCode, SafetyConfig

DEG = math.pi / 180.0
pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope='module')
def model():
    return default_robot_model(sim=True)


@pytest.fixture
def rig(model):
    rig = make_rig(model)
    yield rig
    rig.close()


@pytest.fixture
def active(rig):
    rig.controller.configure()
    rig.controller.activate()
    return rig


def move_chunk(ctl, goal, duration_s=1.0, delay_s=0.02, joints=None, modes=()):
    """Cosine move of ``joints`` (default all) from the current target to ``goal``."""
    names = joints or ctl.config.joint_names
    index = [ctl.config.joint_names.index(n) for n in names]
    start = np.array(ctl.queue.target_rad)[index]
    times = np.linspace(0.0, duration_s, 21)[1:]
    s = (1 - np.cos(np.pi * times / duration_s)) / 2
    ds = np.pi / duration_s * np.sin(np.pi * times / duration_s) / 2
    delta = np.asarray(goal)[index] - start
    return Chunk(
        names,
        ctl.clock.now() + delay_s,
        times,
        start + np.outer(s, delta),
        velocities_rad_s=np.outer(ds, delta),
        control_modes=modes,
    )


def test_discovers_all_13_configures_activates_and_follows_a_trajectory(active, model):
    ctl = active.controller
    assert ctl.missing == [] and all(ctl.present)
    assert ctl.lifecycle == Lifecycle.ACTIVE
    # Configure zeroed the TMotors at the pinned pose ('init'); activation holds it.
    assert np.allclose(ctl.measured.position_rad, model.poses['init'], atol=0.5 * DEG)
    goal = model.poses['ready']
    assert ctl.push_chunk(move_chunk(ctl, goal, 1.0)) is None
    active.run(2.0)
    error = np.degrees(np.abs(np.array(ctl.measured.position_rad) - goal))
    truth = np.degrees(np.abs(active.robot.joint_positions_rad() - goal))
    assert error.max() < 0.5, (error, ctl.faults())
    assert truth.max() < 0.5, truth
    assert ctl.faults() == ()
    # Lockstep includes the PTY: every sync read is answered before the next goes out.
    bank = ctl.dxl_banks['dxl']
    assert bank.reads_sent > 300 and bank.missed_replies == 0, bank.missed_replies
    assert active.clock.line.in_flight() == (0, 0)
    can3 = active.seen['can3']
    assert CanFrame(0x080, b'') in can3 and any(f.arbitration_id == 0x307 for f in can3)
    assert any(f.arbitration_id == 0x304 and f.is_extended_id for f in active.seen['can1'])


def test_a_drive_reset_during_standby_is_brought_back_and_enabled_at_activation(rig):
    ctl = rig.controller
    ctl.configure()
    wrist = next(d for d in ctl.epos.drives if ctl.config.joints[d.index].name == 'right_wrist')
    # Disable voltage (controlword 0): "switch on disabled", as after a drive reset.
    ctl.send(wrist.bus, epos4_codec.encode_controlword(wrist.node_id, 0))
    ctl.send(wrist.bus, epos4_codec.encode_sync())
    rig.clock.sleep(0.01)
    ctl.activate()
    assert ctl.lifecycle == Lifecycle.ACTIVE and wrist.enabled
    assert (
        epos4_codec.cia402_state(ctl.measured.statusword[wrist.index])
        == epos4_codec.Cia402State.OPERATION_ENABLED
    )


@pytest.mark.parametrize('zero_origins', [True, False])
def test_configure_sets_the_tmotor_origins_only_when_asked(rig, zero_origins):
    ctl = rig.controller
    ctl.configure(zero_origins=zero_origins)
    rig.collect()
    origins = {tmotor_codec.encode_set_origin(m.node_id) for m in ctl.tmotors.motors}
    sent = {frame for frames in rig.seen.values() for frame in frames}
    assert (origins <= sent) if zero_origins else not (origins & sent)


def test_missing_motors_are_named_and_an_allowed_subset_is_excluded(model):
    rig = make_rig(model, absent_buses=['can3'])
    try:
        with pytest.raises(MotorMissingError, match=r'right_wrist \(EPOS4 node 7 on can3\)') as e:
            rig.controller.configure()
        assert e.value.missing == ['right_wrist', 'left_wrist']
        assert rig.controller.lifecycle == Lifecycle.UNCONFIGURED
    finally:
        rig.close()
    rig = make_rig(model, absent_buses=['can3'], allow_missing=['right_wrist', 'left_wrist'])
    try:
        rig.controller.configure()
        rig.controller.activate()
        assert rig.controller.missing == ['right_wrist', 'left_wrist']
        rig.run(0.2)
        assert rig.controller.faults() == ()  # absent motors are not supervised
    finally:
        rig.close()


@pytest.mark.parametrize(
    ('joint', 'kind', 'code'),
    [
        ('right_elbow', 'silence', FaultCode.FEEDBACK_TIMEOUT),
        ('head_pitch', 'silence', FaultCode.FEEDBACK_TIMEOUT),
        ('left_shoulder_1', 'over_current', FaultCode.OVER_CURRENT),
        ('head_pitch', 'over_current', FaultCode.MOTOR_ERROR),
        ('waist', 'out_of_range', FaultCode.POSITION_OUT_OF_RANGE),
        ('head_yaw', 'out_of_range', FaultCode.POSITION_OUT_OF_RANGE),
        ('left_elbow', 'corrupt', FaultCode.FEEDBACK_TIMEOUT),
        ('right_pedal', 'short', FaultCode.FEEDBACK_TIMEOUT),
    ],
)
def test_each_injected_fault_latches_the_right_fault_and_holds(active, joint, kind, code):
    ctl = active.controller
    active.run(0.05)
    active.robot.set_fault(joint, kind)
    assert active.run(1.0, until=lambda: ctl.safety.faulted)
    fault = ctl.faults()[0]
    assert (fault.code, fault.joint) == (code, joint)
    assert ctl.holding and ctl.queue.queued == 0
    if kind in ('corrupt', 'short'):
        assert ctl.counters.frames_rejected > 0
    assert ctl.push_chunk(move_chunk(ctl, ctl.queue.target_rad)) == 'faulted: reset first'


@pytest.fixture
def patient(model):
    """An active rig whose CAN feedback timeout (0.25 s) is long enough to watch the velocity
    law through many frames of silence."""
    rig = make_rig(model, safety=SafetyConfig(can_feedback_timeout_s=0.25))
    rig.controller.configure()
    rig.controller.activate()
    yield rig
    rig.close()


def test_a_silent_tmotor_gets_the_trajectory_velocity_without_a_stale_correction(patient):
    """Feedback stops while the elbow moves: the velocity law drops its position term (which
    would grow with the distance to the stale angle) until feedback returns or times out."""
    active = patient
    ctl = active.controller
    active.run(0.05)
    elbow = ctl.config.joint_names.index('right_elbow')
    goal = np.array(ctl.queue.target_rad)
    goal[elbow] += 20 * DEG
    active.robot.set_fault('right_elbow', 'silence')
    assert ctl.push_chunk(move_chunk(ctl, goal, 0.5, joints=['right_elbow'])) is None
    active.seen.clear()
    active.run(0.2)  # shorter than the rig's feedback timeout: no fault yet
    assert not ctl.safety.faulted
    assert ctl.safety.counters.feedforward_only >= 30
    sent = [
        int.from_bytes(f.data, 'big', signed=True)
        for f in active.seen['can1']
        if f.is_extended_id and f.arbitration_id == 0x304
    ]
    assert len(sent) >= 30
    # Peak feed-forward of a 20 deg cosine move in 0.5 s: pi/0.5 * 20 deg / 2 = 1.097 rad/s,
    # 2005 ERPM per rad/s; the position term would add 4000 ERPM per motor rad of lag.
    peak_erpm = math.pi / 0.5 * (20 * DEG) / 2 * 21 * 10 * 60 / (2 * math.pi)
    assert max(abs(erpm) for erpm in sent) <= peak_erpm + 1
    active.robot.clear_fault('right_elbow')
    assert active.run(
        0.5,
        until=lambda: (
            ctl.safety.counters.feedforward_only > 0
            and active.now() - ctl.measured.last_feedback_s[elbow] <= 0.015
        ),
    )
    assert not ctl.safety.faulted


def test_maxon_out_of_range_gets_shutdown_and_reset_waits_for_the_cause(active):
    ctl = active.controller
    active.run(0.05)
    before = len(active.seen['can3'])  # activation sent Shutdown/Enable too
    active.robot.set_fault('right_wrist', 'out_of_range')
    assert active.run(1.0, until=lambda: ctl.safety.faulted)
    active.run(0.02)
    can3 = active.seen['can3'][before:]
    shutdown = can3.index(CanFrame(0x207, b'\x06\x00'))
    assert can3[shutdown + 1] == CanFrame(0x080, b'')
    # No more targets for that drive after the shutdown, the other wrist keeps its targets.
    after = can3[shutdown + 2 :]
    assert not any(f.arbitration_id == 0x307 for f in after)
    assert any(f.arbitration_id == 0x308 for f in after)
    assert ctl.faults()[0].code == FaultCode.POSITION_OUT_OF_RANGE
    assert any('still out of range' in r for r in ctl.reset())
    active.robot.clear_fault('right_wrist')
    active.run(0.05)
    assert ctl.reset() == []
    active.run(0.3)
    tail = active.seen['can3'][before + len(can3) :]
    assert CanFrame(0x207, b'\x0f\x00') in tail  # re-enabled
    assert ctl.measured.status[7] == 'operation enabled'
    assert ctl.push_chunk(move_chunk(ctl, ctl.queue.target_rad, 0.2)) is None


def test_estop_holds_the_measured_pose_and_reset_allows_motion_again(active, model):
    ctl = active.controller
    ctl.push_chunk(move_chunk(ctl, model.poses['ready'], 1.0, delay_s=0.0))
    active.run(0.5)
    ctl.estop()
    at_estop = np.array(ctl.measured.position_rad)
    assert ctl.safety.estop_latched and ctl.holding
    assert np.allclose(ctl.queue.target_rad, at_estop)
    active.run(0.4)
    settled = active.robot.joint_positions_rad()
    active.run(0.2)
    truth = active.robot.joint_positions_rad()
    # Stopped (the velocity law brakes a moving arm with some overshoot) near where it was.
    assert np.degrees(np.abs(truth - settled)).max() < 1.0
    assert np.degrees(np.abs(truth - at_estop)).max() < 8.0
    assert np.degrees(np.abs(truth - model.poses['ready'])).max() > 10.0  # not at the goal
    assert ctl.faults()[0].code == FaultCode.ESTOP
    # The arm came to rest away from where the latch held it (it was moving): RESET holds it
    # where it is measured now, so the next motion starts from the real pose.
    measured = np.array(ctl.measured.position_rad)
    assert np.degrees(np.abs(measured - at_estop)).max() > 0.05
    assert ctl.reset() == []
    assert np.array_equal(ctl.queue.target_rad, measured)
    assert ctl.push_chunk(move_chunk(ctl, model.poses['ready'], 0.5)) is None

    def at_ready() -> bool:
        error = np.abs(active.robot.joint_positions_rad() - model.poses['ready'])
        return np.degrees(error).max() < 2.0

    # Moving again; the gain-1000 shoulders settle with a ~2 s time constant (velocity law).
    assert active.run(3.0, until=at_ready)


def test_wrists_switch_to_cst_and_back_with_the_upstream_frames(active):
    ctl = active.controller
    goal = np.array(ctl.queue.target_rad)
    goal[7] -= 10 * DEG
    chunk = move_chunk(ctl, goal, 0.4, joints=['right_wrist'], modes=(ControlMode.TORQUE,))
    active.run(0.01)
    before = len(active.seen['can3'])  # configure wrote 0x6060 = 10 once already
    assert ctl.push_chunk(chunk) is None
    active.run(0.8)
    can3 = active.seen['can3'][before:]
    switch = can3.index(CanFrame(0x607, bytes.fromhex('2f6060000a000000')))
    assert can3[switch + 1 : switch + 3] == [
        CanFrame(0x207, b'\x06\x00'),
        CanFrame(0x207, b'\x0f\x00'),
    ]
    assert any(f.arbitration_id == 0x507 for f in can3[switch:])
    assert ctl.counters.mode_switches == 1
    assert abs(ctl.measured.position_rad[7] - goal[7]) < 5 * DEG, ctl.faults()
    back = move_chunk(ctl, goal, 0.1, joints=['right_wrist'], modes=(ControlMode.POSITION,))
    ctl.push_chunk(back)
    active.run(0.3)
    assert (
        CanFrame(0x607, bytes.fromhex('2f60600008000000'))
        in active.seen['can3'][before + switch :]
    )
    assert ctl.counters.mode_switches == 2


def test_deactivate_stops_tmotors_shuts_maxons_down_and_releases_servos(active):
    ctl = active.controller
    active.run(0.05)
    ctl.deactivate()
    active.collect()
    assert ctl.lifecycle == Lifecycle.INACTIVE
    assert CanFrame(0x300, bytes(4), True) in active.seen['can0']  # waist SET_RPM 0
    assert CanFrame(0x20A, b'\x06\x00') in active.seen['can2']  # pedal shutdown
    sent = len(active.seen['can0'])
    active.run(0.05)
    assert not any(f.arbitration_id == 0x300 for f in active.seen['can0'][sent:])


def test_each_tmotor_bus_sends_every_5_ms_on_its_own_tick(active):
    ctl = active.controller
    active.collect()
    for bus in ('can0', 'can1'):
        active.seen[bus] = []
    sent_on: dict[str, list[int]] = {'can0': [], 'can1': []}
    for _ in range(20):
        active.run(0.001)
        for bus, ticks in sent_on.items():
            # Controller commands are SET_RPM (packet 3); the motors answer with packet 0x29.
            commands = [
                f for f in active.seen[bus] if f.is_extended_id and f.arbitration_id >> 8 == 3
            ]
            if commands:
                ticks.append(ctl.tick_index)
            active.seen[bus] = []
    phases = ctl.config.cycle.tmotor_phases
    assert [tick % 5 for tick in sent_on['can0']] == [phases[0]] * 4
    assert [tick % 5 for tick in sent_on['can1']] == [phases[1]] * 4
    assert phases[0] != phases[1]
