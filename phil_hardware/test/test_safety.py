"""Safety rules, each on its own: skips, latched faults and reset only when the cause is gone."""

from __future__ import annotations

import math

import pytest

from phil_hardware.core.safety import (
    Fault,
    FaultCode,
    JointSafety,
    SafetyConfig,
    SafetyMonitor,
    SendCheck,
)

DEG = math.pi / 180.0
JOINTS = (
    JointSafety('elbow', 0.0, 140.1 * DEG, 0.05, current_limit_a=23.2, pre_send_checks=True),
    JointSafety('wrist', -90 * DEG, 100 * DEG, 0.05),
    JointSafety('head', -90 * DEG, 90 * DEG, 0.1),
)
ELBOW, WRIST, HEAD = 0, 1, 2


@pytest.fixture
def monitor() -> SafetyMonitor:
    monitor = SafetyMonitor(JOINTS)
    for index in range(3):
        monitor.on_position(index, 10 * DEG, 0.0)
    return monitor


def test_fault_codes_mirror_phil_msgs_fault():
    assert [(c.name, c.value) for c in FaultCode][1:] == [
        ('ESTOP', 1),
        ('POSITION_OUT_OF_RANGE', 2),
        ('OVER_CURRENT', 3),
        ('FEEDBACK_TIMEOUT', 4),
        ('INVALID_TARGET', 5),
        ('MOTOR_ERROR', 6),
        ('MOTOR_MISSING', 7),
        ('BUS_ERROR', 8),
        ('PROCESS_DIED', 9),
    ]
    fault = Fault(FaultCode.OVER_CURRENT, 'elbow', 'x', 1.5)
    assert Fault.from_dict(fault.to_dict()) == fault


def test_jump_check_skips_a_target_more_than_30_deg_from_measured(monitor):
    assert monitor.check_send(ELBOW, 39.9 * DEG) == SendCheck.OK
    assert monitor.check_send(ELBOW, 40.1 * DEG) == SendCheck.SKIP_JUMP
    assert monitor.counters.skipped_jump == 1
    assert monitor.skips(ELBOW) == (1, 0)
    assert not monitor.faulted  # a skip never latches


def test_range_check_skips_a_target_outside_the_urdf_limits(monitor):
    assert monitor.check_send(ELBOW, -0.1 * DEG) == SendCheck.SKIP_RANGE
    assert monitor.counters.skipped_range == 1
    assert not monitor.faulted


def test_a_stale_measurement_asks_for_the_feed_forward_velocity_alone(monitor):
    # measured at t = 0 (fixture); fresh for 15 ms, then stale
    assert monitor.check_send(ELBOW, 40.1 * DEG, now_s=0.015) == SendCheck.SKIP_JUMP
    assert monitor.check_send(ELBOW, 40.1 * DEG, now_s=0.0151) == SendCheck.FEEDFORWARD_ONLY
    assert monitor.check_send(ELBOW, 10 * DEG, now_s=0.5) == SendCheck.FEEDFORWARD_ONLY
    assert monitor.counters.feedforward_only == 2
    assert monitor.check_send(ELBOW, -0.1 * DEG, now_s=0.5) == SendCheck.SKIP_RANGE  # first
    monitor.on_position(ELBOW, 12 * DEG, 0.5)
    assert monitor.check_send(ELBOW, 12 * DEG, now_s=0.51) == SendCheck.OK
    assert not monitor.faulted
    with pytest.raises(ValueError, match='fresh_feedback_s'):
        SafetyConfig(fresh_feedback_s=0.0)


def test_pre_send_checks_apply_to_tmotors_only(monitor):
    assert monitor.check_send(WRIST, 95 * DEG) == SendCheck.OK


@pytest.mark.parametrize('index', [ELBOW, WRIST, HEAD])
def test_measured_out_of_range_latches_for_every_family(monitor, index):
    fault = monitor.on_position(index, 150 * DEG, 1.0)
    assert fault is not None and fault.code == FaultCode.POSITION_OUT_OF_RANGE
    assert fault.joint == JOINTS[index].name and '150.00 deg outside' in fault.reason
    assert monitor.out_of_range(index)
    assert monitor.on_position(index, 151 * DEG, 1.1) is None  # latched once


def test_over_current_latches_on_the_7th_consecutive_frame_not_the_6th(monitor):
    for frame in range(6):
        assert monitor.on_current(ELBOW, 25.0, frame * 0.005) is None
    fault = monitor.on_current(ELBOW, 25.0, 0.03)
    assert fault is not None and fault.code == FaultCode.OVER_CURRENT
    assert '7 consecutive frames above 23.2 A' in fault.reason


def test_over_current_counter_restarts_after_a_frame_below_and_counts_magnitude(monitor):
    for _ in range(6):
        monitor.on_current(ELBOW, -25.0, 0.0)  # a large negative current counts too
    monitor.on_current(ELBOW, 1.0, 0.0)
    for _ in range(6):
        assert monitor.on_current(ELBOW, 30.0, 0.0) is None
    assert not monitor.faulted


def test_feedback_timeout_latches_only_while_armed_and_after_the_timeout(monitor):
    assert monitor.check_timeouts(100.0) == []  # not armed yet
    monitor.arm(1.0)
    assert monitor.check_timeouts(1.049) == []
    faults = monitor.check_timeouts(1.06)
    assert [(f.code, f.joint) for f in faults] == [
        (FaultCode.FEEDBACK_TIMEOUT, 'elbow'),
        (FaultCode.FEEDBACK_TIMEOUT, 'wrist'),
    ]
    assert [f.joint for f in monitor.check_timeouts(1.2)] == ['head']  # 100 ms serial timeout


def test_disabled_joint_is_not_supervised(monitor):
    monitor.set_enabled(HEAD, False)
    monitor.arm(0.0)
    assert all(f.joint != 'head' for f in monitor.check_timeouts(5.0))
    assert monitor.on_position(HEAD, 170 * DEG, 5.0) is None


def test_nan_or_inf_target_latches_invalid_target(monitor):
    assert monitor.check_targets([0.1, 0.2, 0.3], 0.0) is None
    fault = monitor.check_targets([0.1, math.inf, 0.3], 0.0)
    assert fault.code == FaultCode.INVALID_TARGET and fault.joint == 'wrist'
    assert monitor.reset(0.1) == []


def test_reset_clears_out_of_range_only_when_the_joint_is_back(monitor):
    monitor.on_position(WRIST, 120 * DEG, 1.0)
    reasons = monitor.reset(1.1)
    assert reasons and 'wrist is still out of range' in reasons[0]
    assert monitor.faulted and monitor.counters.resets_refused == 1
    monitor.on_position(WRIST, 95 * DEG, 1.2)
    assert monitor.reset(1.3) == []
    assert not monitor.faulted


def test_reset_clears_over_current_only_when_below_the_limit(monitor):
    for _ in range(7):
        monitor.on_current(ELBOW, 30.0, 0.0)
    assert 'still above the limit' in monitor.reset(0.1)[0]
    monitor.on_current(ELBOW, 3.0, 0.2)
    assert monitor.reset(0.3) == []


def test_reset_clears_timeout_only_when_feedback_is_back(monitor):
    monitor.arm(0.0)
    monitor.check_timeouts(0.2)
    assert monitor.faulted
    assert any('still sends no feedback' in r for r in monitor.reset(0.3))
    for index in range(3):
        monitor.on_position(index, 10 * DEG, 0.31)
    assert monitor.reset(0.32) == []
    assert monitor.check_timeouts(0.33) == []


def test_motor_error_clears_when_the_motor_stops_reporting_it(monitor):
    fault = monitor.on_motor_error(ELBOW, 'motor error 2: over-current', 0.0)
    assert fault.code == FaultCode.MOTOR_ERROR
    assert monitor.reset(0.1)
    monitor.on_motor_error(ELBOW, '', 0.2)
    assert monitor.reset(0.3) == []


def test_estop_latches_and_reset_clears_it(monitor):
    fault = monitor.estop(2.0)
    assert fault.code == FaultCode.ESTOP and monitor.estop_latched
    assert monitor.reset(2.1) == []
    assert not monitor.estop_latched and not monitor.faulted


def test_estop_stays_latched_with_another_fault_that_remains(monitor):
    monitor.estop(2.0)
    monitor.on_position(WRIST, 120 * DEG, 2.0)
    assert monitor.reset(2.1)
    assert [f.code for f in monitor.faults] == [FaultCode.POSITION_OUT_OF_RANGE]
    assert not monitor.estop_latched


def test_missing_motor_is_not_cleared_by_reset(monitor):
    monitor.latch(FaultCode.MOTOR_MISSING, 'head', 'not found', 0.0)
    assert 'configure again' in monitor.reset(0.1)[0]


def test_config_is_validated():
    with pytest.raises(ValueError, match='jump_limit_rad'):
        SafetyConfig(jump_limit_rad=math.nan)
    with pytest.raises(ValueError, match='over_current_frames'):
        SafetyConfig(over_current_frames=0)
