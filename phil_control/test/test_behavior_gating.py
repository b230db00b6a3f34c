"""Which command the state machine accepts in which state (upstream gating plus FAULT/ESTOP)."""

from __future__ import annotations

import itertools
import math

import pytest

from phil_control.core.behavior import BehaviorConfig, RobotState, StateMachine
from phil_control.core.protocol import (
    Estop,
    Gesture,
    GetStatus,
    Hit,
    Look,
    Move,
    Pause,
    Play,
    PlayCtrlSpeed,
    PlayCtrlStop,
    Pose,
    Protocol,
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
        self.now = 100.0

    def __call__(self):
        return self.now


def machine_in(situation):
    """A machine brought to a named situation through its public inputs only."""
    machine = StateMachine(BehaviorConfig(pose_names=tuple(MODEL.poses)), FakeClock())
    if situation == 'standby':
        return machine
    if situation == 'fault_standby':
        machine.hardware_fault('bus can0 silent')
        return machine
    machine.decide(Start())
    if situation == 'starting':
        return machine
    machine.start_completed()
    if situation == 'init':
        return machine
    machine.decide(Ready())
    if situation == 'idle':
        return machine
    if situation == 'playing':
        machine.decide(Play('BF'))
    elif situation == 'shuttingdown':
        machine.decide(Quit())
    elif situation == 'fault':
        machine.hardware_fault('right_elbow over current')
    elif situation == 'estop':
        machine.hardware_estop()
    return machine


SITUATIONS = {
    'standby': RobotState.STANDBY,
    'starting': RobotState.INIT,
    'init': RobotState.INIT,
    'idle': RobotState.IDLE,
    'playing': RobotState.PLAYING,
    'shuttingdown': RobotState.SHUTTINGDOWN,
    'fault': RobotState.FAULT,
    'estop': RobotState.ESTOP,
    'fault_standby': RobotState.FAULT,
}
MOTIONS = [
    Look(0.1, 0.2),
    Gesture('nod'),
    Move((('waist', math.radians(10)),), None),
    Pose('ready'),
    Hit('snare'),
    Play('BF'),
]
ALWAYS = [GetStatus(), Protocol(2), Estop()]
ALWAYS_TYPES = (GetStatus, Protocol, Estop)

# situation -> commands accepted there (everything else must be rejected)
ACCEPTED = {
    'standby': [Start(), Quit()],
    'starting': [Quit()],
    'init': [Ready(), Quit()],
    'idle': [*MOTIONS, Quit()],
    'playing': [Pause(), PlayCtrlStop(), PlayCtrlSpeed(1.5), Quit()],
    'shuttingdown': [],
    'fault': [Reset(), Quit()],
    'estop': [Reset(), Quit()],
    'fault_standby': [Reset(), Quit()],
}
ALL_COMMANDS = [
    Start(),
    Ready(),
    Quit(),
    *MOTIONS,
    Resume(),
    Pause(),
    PlayCtrlStop(),
    PlayCtrlSpeed(1.5),
    Reset(),
    *ALWAYS,
]


def test_situations_reach_their_states():
    for situation, state in SITUATIONS.items():
        assert machine_in(situation).state is state, situation


@pytest.mark.parametrize(
    ('situation', 'command'), list(itertools.product(SITUATIONS, ALL_COMMANDS))
)
def test_gating_matrix(situation, command):
    machine = machine_in(situation)
    before = machine.state
    decision = machine.decide(command)
    expected = command in ACCEPTED[situation] or command in ALWAYS
    assert decision.accepted == expected, decision.reason
    if not expected:
        op = command.opcode.value
        assert decision.reason.startswith(f'{op} rejected: ')
        assert before.value in decision.reason
        assert machine.state is before and decision.actions == ()
        assert machine.last_rejection is not None
        assert machine.last_rejection.reason == decision.reason
        assert machine.last_rejection.opcode == op
        assert machine.last_rejection.state is before
        assert machine.last_rejection.time_s == 100.0


def test_motion_rejection_reason_names_state_and_rule():
    machine = machine_in('playing')
    assert machine.decide(Hit('snare')).reason == (
        'HIT rejected: robot is PLAYING; motions are allowed only in IDLE'
    )


def test_before_the_first_trajectory_only_start_and_quit():
    reason = machine_in('starting').decide(Ready()).reason
    assert 'START is in progress' in reason and 'only START and QUIT' in reason
    assert 'not started' in machine_in('standby').decide(Look(0.0, 0.0)).reason


def test_resume_needs_a_saved_point():
    decision = machine_in('idle').decide(Resume())
    assert not decision.accepted and 'no resume point is saved' in decision.reason


def test_status_and_protocol_never_change_anything():
    for situation in SITUATIONS:
        machine = machine_in(situation)
        before = machine.snapshot()
        for command in (GetStatus(), Protocol(2), Protocol(1)):
            decision = machine.decide(command)
            assert decision.accepted and decision.actions == ()
        assert machine.snapshot() == before


def test_rejections_do_not_change_state_speed_or_resume_point():
    machine = machine_in('playing')
    machine.decide(PlayCtrlSpeed(1.5))
    before = machine.snapshot()
    for command in [Start(), Ready(), *MOTIONS, Resume(), Reset()]:
        assert not machine.decide(command).accepted
    after = machine.snapshot()
    assert (after.state, after.speed, after.resume_point) == (
        before.state,
        before.speed,
        before.resume_point,
    )


def test_config_rejects_role_poses_the_model_lacks():
    with pytest.raises(ValueError, match='shutdown_pose'):
        BehaviorConfig(shutdown_pose='off', pose_names=tuple(MODEL.poses))
    with pytest.raises(ValueError, match='look_duration_s'):
        BehaviorConfig(look_duration_s=0.0)


def test_commands_wait_only_while_start_or_a_play_ending_is_carried_out():
    """`waits` names the transition exactly where the command's refusal would be ours (a
    slower start-up than upstream's, a pause still being carried out), never elsewhere."""
    for situation in SITUATIONS:
        machine = machine_in(situation)
        for command in ALL_COMMANDS:
            reason = machine.waits(command)
            if situation == 'starting' and not isinstance(command, (Quit, Reset, *ALWAYS_TYPES)):
                assert reason == 'START is in progress', (situation, command)
            else:
                assert reason == '', (situation, command)


def test_after_pause_a_motion_waits_for_the_play_to_end_and_is_then_accepted():
    machine = machine_in('playing')
    look = Look(0.1, 0.2)
    assert machine.waits(look) == ''  # not ending: refused now, as upstream (motions in IDLE)
    machine.decide(Pause())
    assert machine.waits(look) == 'the play is ending (PAUSE)'
    assert machine.waits(PlayCtrlSpeed(1.2)) == '' and machine.waits(PlayCtrlStop()) == ''
    machine.decide(PlayCtrlStop())
    assert machine.waits(look) == 'the play is ending (PLAY_CTRL stop)'
    machine.play_finished()
    assert machine.waits(look) == '' and machine.decide(look).accepted


def test_once_start_has_its_first_trajectory_ready_is_decided_at_once():
    machine = machine_in('starting')
    assert machine.waits(Ready()) == 'START is in progress'
    machine.start_completed()
    assert machine.waits(Ready()) == '' and machine.decide(Ready()).accepted
