"""State machine semantics: START, motions, PLAY/PAUSE/RESUME/PLAY_CTRL and the QUIT paths."""

from __future__ import annotations

import math

from phil_control.core.behavior import (
    ActivateHardware,
    BehaviorConfig,
    HaltMotion,
    LookAt,
    MoveJoints,
    MoveToPose,
    PausePlay,
    PerformGesture,
    ResetHardware,
    ResumePlay,
    ResumePoint,
    RobotState,
    SetPlaySpeed,
    Shutdown,
    StartPlay,
    StateMachine,
    StopPlay,
    StrikeInstrument,
)
from phil_control.core.profiles import Profile
from phil_control.core.protocol import (
    Estop,
    Gesture,
    Hit,
    Look,
    Move,
    Pause,
    Play,
    PlayCtrlSpeed,
    PlayCtrlStop,
    Pose,
    Quit,
    Ready,
    Reset,
    Resume,
    Start,
)
from phil_description.core import default_robot_model

MODEL = default_robot_model()


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def idle_machine(clock=None):
    machine = StateMachine(BehaviorConfig(pose_names=tuple(MODEL.poses)), clock or FakeClock())
    machine.decide(Start())
    machine.start_completed()
    assert machine.decide(Ready()).accepted
    return machine


def test_start_activates_then_moves_home_and_waits_for_the_first_trajectory():
    clock = FakeClock()
    machine = StateMachine(BehaviorConfig(), clock)
    clock.now = 5.0
    decision = machine.decide(Start())
    assert decision.accepted and decision.state is RobotState.INIT
    assert decision.actions == (ActivateHardware(), MoveToPose('home', 3.0, Profile.COSINE))
    assert not machine.snapshot().started and machine.snapshot().state_since_s == 5.0
    assert not machine.decide(Ready()).accepted
    assert machine.start_completed().accepted and machine.snapshot().started
    assert not machine.start_completed().accepted
    assert machine.decide(Ready()).state is RobotState.IDLE


def test_motion_commands_request_their_motions_with_upstream_times():
    machine = idle_machine()
    look = machine.decide(Look(0.1, -0.2))
    assert look.actions == (LookAt(0.1, -0.2, 1.0, Profile.COSINE),)
    assert machine.decide(Gesture('wave')).actions == (PerformGesture('wave'),)
    targets = (('waist', math.radians(10)),)
    assert machine.decide(Move(targets, None)).actions == (
        MoveJoints(targets, 3.0, Profile.COSINE),
    )
    assert machine.decide(Move(targets, 1.5)).actions == (
        MoveJoints(targets, 1.5, Profile.COSINE),
    )
    assert machine.decide(Pose('ready')).actions == (
        MoveToPose('ready', 3.0, Profile.TRAPEZOIDAL),
    )
    hit = machine.decide(Hit('closed hihat'))
    assert hit.actions == (StrikeInstrument('closed hihat'),)
    assert hit.state is RobotState.IDLE


def test_play_resets_speed_and_drops_the_resume_point():
    machine = idle_machine()
    machine.decide(Play('BF'))
    machine.decide(PlayCtrlSpeed(1.5))
    machine.decide(Pause())
    machine.play_paused(ResumePoint('BF', 4))
    assert machine.resume_point == ResumePoint('BF', 4) and machine.speed == 1.5
    decision = machine.decide(Play('TI'))
    assert decision.actions == (StartPlay('TI'),) and decision.state is RobotState.PLAYING
    assert machine.resume_point is None and machine.speed == 1.0


def test_pause_saves_a_point_and_resume_uses_it_up():
    machine = idle_machine()
    machine.decide(Play('BF'))
    pause = machine.decide(Pause())
    assert pause.actions == (PausePlay(),) and pause.state is RobotState.PLAYING
    assert machine.decide(Pause()).actions == ()  # asked once
    assert machine.play_paused(ResumePoint('BF', 3)).state is RobotState.IDLE
    machine.decide(Look(0.0, 0.0))  # other motions keep the point
    assert machine.resume_point == ResumePoint('BF', 3)
    resume = machine.decide(Resume())
    assert resume.actions == (ResumePlay('BF', 3),) and resume.state is RobotState.PLAYING
    assert machine.resume_point is None and machine.speed == 1.0
    machine.decide(Pause())
    machine.play_paused(ResumePoint('BF', 9))
    assert machine.resume_point == ResumePoint('BF', 9)


def test_play_ctrl_stop_clears_the_point_even_if_the_player_still_reports_one():
    machine = idle_machine()
    machine.decide(Play('BF'))
    machine.decide(Pause())
    stop = machine.decide(PlayCtrlStop())
    assert stop.accepted and stop.actions == (StopPlay(),)
    assert not machine.decide(Pause()).accepted
    assert machine.play_paused(ResumePoint('BF', 2)).state is RobotState.IDLE
    assert machine.resume_point is None
    assert not machine.decide(Resume()).accepted


def test_normal_end_returns_to_idle_and_keeps_the_point():
    machine = idle_machine()
    machine.decide(Play('BF'))
    machine.decide(Pause())
    machine.play_paused(ResumePoint('BF', 5))
    machine.decide(Resume())
    assert machine.play_finished().state is RobotState.IDLE
    assert not machine.play_finished().accepted


def test_speed_is_clamped_by_the_parser_and_the_clamp_is_reported():
    machine = idle_machine()
    machine.decide(Play('BF'))
    decision = machine.decide(PlayCtrlSpeed(2.0, requested=3.0))
    assert decision.accepted and decision.actions == (SetPlaySpeed(2.0),)
    assert decision.reason == 'speed 3 clamped to 2.00'
    assert machine.decide(PlayCtrlSpeed(0.75)).reason == ''
    assert machine.speed == 0.75


def test_quit_in_idle_moves_to_the_shutdown_pose_then_asks_for_shutdown():
    machine = idle_machine()
    decision = machine.decide(Quit())
    assert decision.state is RobotState.SHUTTINGDOWN
    assert decision.actions == (MoveToPose('shutdown', 3.0, Profile.COSINE),)
    assert not machine.decide(Look(0.0, 0.0)).accepted
    assert machine.motion_finished().actions == (Shutdown(),)
    assert not machine.motion_finished().accepted
    assert machine.shutdown_completed().accepted and machine.snapshot().finished


def test_quit_in_standby_shuts_down_at_once():
    machine = StateMachine()
    decision = machine.decide(Quit())
    assert decision.state is RobotState.SHUTTINGDOWN and decision.actions == (Shutdown(),)


def test_quit_during_start_before_the_first_trajectory_shuts_down_at_once():
    machine = StateMachine()
    machine.decide(Start())
    assert machine.decide(Quit()).actions == (Shutdown(),)


def test_quit_in_init_halts_and_switches_the_torque_off_without_any_motion():
    machine = StateMachine()
    machine.decide(Start())
    machine.start_completed()
    decision = machine.decide(Quit())
    assert decision.state is RobotState.SHUTTINGDOWN
    assert decision.actions == (HaltMotion(), Shutdown())
    assert not machine.motion_finished().accepted  # the START motion's end asks for nothing


def test_quit_in_playing_stops_the_play_then_moves_to_the_shutdown_pose():
    machine = idle_machine()
    machine.decide(Play('BF'))
    decision = machine.decide(Quit())
    assert decision.state is RobotState.SHUTTINGDOWN and decision.actions == (StopPlay(),)
    assert not machine.decide(Resume()).accepted
    # The player saves a point on stop as on pause; QUIT keeps none.
    ended = machine.play_paused(ResumePoint('BF', 3))
    assert ended.actions == (MoveToPose('shutdown', 3.0, Profile.COSINE),)
    assert machine.snapshot().resume_point is None
    assert machine.motion_finished().actions == (Shutdown(),)


def test_quit_after_pause_in_playing_still_stops_and_shuts_down():
    machine = idle_machine()
    machine.decide(Play('BF'))
    machine.decide(Pause())
    assert machine.decide(Quit()).actions == (StopPlay(),)
    assert machine.play_finished().actions == (MoveToPose('shutdown', 3.0, Profile.COSINE),)
    assert machine.motion_finished().actions == (Shutdown(),)


def test_estop_during_quit_in_playing_finishes_it_without_motion():
    machine = idle_machine()
    machine.decide(Play('BF'))
    machine.decide(Quit())
    machine.decide(Estop())
    assert not machine.play_finished().actions  # no shutdown pose while latched
    machine.hardware_cleared()
    assert machine.decide(Reset()).actions == (ResetHardware(), Shutdown())


def test_pose_shutdown_also_ends_in_shuttingdown():
    machine = idle_machine()
    decision = machine.decide(Pose('shutdown'))
    assert decision.state is RobotState.SHUTTINGDOWN
    assert decision.actions == (MoveToPose('shutdown', 3.0, Profile.TRAPEZOIDAL),)
    assert machine.motion_finished().actions == (Shutdown(),)


def test_motion_finished_outside_shutdown_changes_nothing():
    machine = idle_machine()
    decision = machine.motion_finished()
    assert not decision.accepted and decision.state is RobotState.IDLE


def test_shutdown_from_outside_in_any_state():
    machine = idle_machine()
    assert machine.shutdown_completed().state is RobotState.SHUTTINGDOWN
    assert machine.snapshot().finished


def test_configured_pose_names_and_times_are_used():
    config = BehaviorConfig(
        start_pose='init',
        shutdown_pose='home',
        start_duration_s=4.0,
        pose_names=tuple(MODEL.poses),
    )
    machine = StateMachine(config)
    assert machine.decide(Start()).actions[1] == MoveToPose('init', 4.0, Profile.COSINE)
    machine.start_completed()
    machine.decide(Ready())
    assert machine.decide(Pose('home')).state is RobotState.SHUTTINGDOWN
