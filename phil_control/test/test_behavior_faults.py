"""State machine: latched FAULT and ESTOP, RESET, and the state the robot returns to."""

from __future__ import annotations

from phil_control.core.behavior import (
    EstopHardware,
    HaltMotion,
    PausePlay,
    ResetHardware,
    ResumePlay,
    ResumePoint,
    RobotState,
    Shutdown,
    StateMachine,
)
from phil_control.core.protocol import (
    Estop,
    Hit,
    Look,
    Pause,
    Play,
    PlayCtrlStop,
    Quit,
    Ready,
    Reset,
    Resume,
    Start,
)


def idle_machine():
    machine = StateMachine()
    machine.decide(Start())
    machine.start_completed()
    machine.decide(Ready())
    return machine


def test_fault_rejects_motions_with_its_cause():
    machine = idle_machine()
    decision = machine.hardware_fault('right_elbow over current')
    assert decision.state is RobotState.FAULT and decision.actions == (HaltMotion(),)
    rejected = machine.decide(Hit('snare'))
    assert not rejected.accepted
    assert 'FAULT (right_elbow over current)' in rejected.reason and 'RESET' in rejected.reason
    assert machine.snapshot().fault_reason == 'right_elbow over current'


def test_reset_waits_for_the_hardware_then_returns_to_the_state_before():
    machine = idle_machine()
    machine.hardware_fault('bus silent')
    reset = machine.decide(Reset())
    assert reset.accepted and reset.actions == (ResetHardware(),)
    assert reset.state is RobotState.FAULT and 'waiting' in reset.reason
    assert machine.hardware_cleared().state is RobotState.IDLE
    assert machine.snapshot().fault_reason == ''
    assert machine.decide(Look(0.0, 0.0)).accepted


def test_cause_gone_before_reset_lets_reset_leave_at_once():
    machine = idle_machine()
    machine.hardware_fault('bus silent')
    cleared = machine.hardware_cleared()
    assert not cleared.accepted and cleared.state is RobotState.FAULT
    reset = machine.decide(Reset())
    assert reset.state is RobotState.IDLE and reset.actions == (ResetHardware(),)


def test_a_new_fault_cancels_a_pending_reset():
    machine = idle_machine()
    machine.hardware_fault('first')
    machine.decide(Reset())
    machine.hardware_fault('second')
    assert machine.hardware_cleared().state is RobotState.FAULT
    assert machine.decide(Reset()).state is RobotState.IDLE


def test_a_reset_the_hardware_granted_leaves_even_after_a_later_latch_report():
    # ESTOP, RESET at once: the hardware's status with the latch comes after the RESET was
    # asked, then the hardware grants the RESET (it judged that latch: the ESTOP word count).
    machine = idle_machine()
    machine.decide(Estop())
    machine.decide(Reset())
    machine.hardware_estop('emergency stop')
    assert machine.hardware_cleared(reset_granted=True).state is RobotState.IDLE


def test_fault_in_init_returns_to_init():
    machine = StateMachine()
    machine.decide(Start())
    machine.start_completed()
    machine.hardware_fault('x')
    machine.decide(Reset())
    assert machine.hardware_cleared().state is RobotState.INIT


def test_fault_before_the_first_trajectory_returns_to_standby():
    machine = StateMachine()
    machine.decide(Start())
    decision = machine.hardware_fault('activation failed')
    assert decision.actions == ()
    machine.decide(Reset())
    assert machine.hardware_cleared().state is RobotState.STANDBY
    assert machine.decide(Start()).accepted


def test_torque_lost_returns_to_standby_and_needs_start_again():
    machine = idle_machine()
    machine.hardware_fault('over current cut-off')
    machine.decide(Reset())
    decision = machine.hardware_cleared(torque_on=False)
    assert decision.state is RobotState.STANDBY and not machine.snapshot().started
    assert not machine.decide(Look(0.0, 0.0)).accepted
    assert machine.decide(Start()).accepted


def test_fault_while_playing_pauses_the_play_and_keeps_its_point_for_resume():
    machine = idle_machine()
    machine.decide(Play('BF'))
    decision = machine.hardware_fault('left_wrist range')
    assert decision.actions == (PausePlay(), HaltMotion())
    assert machine.play_paused(ResumePoint('BF', 6)).state is RobotState.FAULT
    machine.decide(Reset())
    assert machine.hardware_cleared().state is RobotState.IDLE
    assert machine.decide(Resume()).actions == (ResumePlay('BF', 6),)


def test_fault_after_play_ctrl_stop_keeps_no_point():
    machine = idle_machine()
    machine.decide(Play('BF'))
    machine.decide(PlayCtrlStop())
    machine.hardware_fault('x')
    machine.play_paused(ResumePoint('BF', 2))
    assert machine.resume_point is None


def test_estop_command_is_accepted_everywhere_and_latches():
    for prepare in (StateMachine, idle_machine):
        machine = prepare()
        before = machine.state
        decision = machine.decide(Estop())
        assert decision.accepted and decision.state is RobotState.ESTOP
        assert decision.actions[0] == EstopHardware()
        assert (HaltMotion() in decision.actions) == (before is RobotState.IDLE)
        machine.decide(Reset())
        assert machine.hardware_cleared().state is before


def test_estop_dominates_fault_and_a_later_fault_keeps_estop():
    machine = idle_machine()
    machine.hardware_fault('x')
    assert machine.hardware_estop().state is RobotState.ESTOP
    assert machine.hardware_fault('y').state is RobotState.ESTOP
    machine.decide(Reset())
    assert machine.hardware_cleared().state is RobotState.IDLE


def test_estop_while_playing_pauses_the_play():
    machine = idle_machine()
    machine.decide(Play('BF'))
    decision = machine.decide(Estop())
    assert decision.actions == (EstopHardware(), PausePlay(), HaltMotion())
    assert not machine.decide(Pause()).accepted


def test_quit_from_a_latched_state_shuts_down_without_motion():
    machine = idle_machine()
    machine.hardware_fault('x')
    decision = machine.decide(Quit())
    assert decision.state is RobotState.SHUTTINGDOWN and decision.actions == (Shutdown(),)


def test_fault_during_the_shutdown_pose_finishes_the_shutdown_after_reset():
    machine = idle_machine()
    machine.decide(Quit())
    machine.hardware_fault('x')
    machine.decide(Reset())
    decision = machine.hardware_cleared()
    assert decision.state is RobotState.SHUTTINGDOWN and Shutdown() in decision.actions
    assert not machine.motion_finished().accepted


def test_clear_and_reset_outside_latched_states_are_ignored_or_rejected():
    machine = idle_machine()
    assert not machine.hardware_cleared().accepted
    rejected = machine.decide(Reset())
    assert not rejected.accepted and 'only in FAULT or ESTOP' in rejected.reason


def test_play_events_in_other_states_are_ignored():
    machine = idle_machine()
    assert not machine.play_paused(ResumePoint('BF', 1)).accepted
    assert machine.resume_point is None
