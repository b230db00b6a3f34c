"""Typed commands travel between nodes as BehaviorCommand messages and come back unchanged;
goals become the commands they ask for, with their options; bad input is named."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_protocol_fuzz import MODEL, VALID_COMMANDS, VOCABULARY, same_command

from phil_control.command_conversions import command_from_msg, command_to_msg, goal_command
from phil_control.core.behavior import StateMachine
from phil_control.core.behavior.actions import StartPlay, StrikeInstrument
from phil_control.core.protocol import commands as cmd
from phil_control.core.protocol import validate_command
from phil_msgs.action import Hit, Move, Play
from phil_msgs.msg import BehaviorCommand

SENT = VALID_COMMANDS.filter(lambda command: not isinstance(command, cmd.Protocol))


@given(SENT)
def test_every_command_but_protocol_round_trips_through_its_message(command):
    back = command_from_msg(command_to_msg(command))
    assert same_command(command, back), (command, back)
    assert validate_command(back, VOCABULARY) is None


@given(
    st.sampled_from(MODEL.kit.names),
    st.integers(1, 7),
    st.sampled_from(cmd.HIT_HANDS),
    st.floats(0.5, 2.0),
    st.integers(0, 40),
    st.booleans(),
)
def test_goal_options_travel_in_the_command(instrument, velocity, hand, speed, bar, improv):
    hit = cmd.Hit(instrument, velocity, hand)
    assert command_from_msg(command_to_msg(hit)) == hit
    play = cmd.Play('rock', speed, bar, improv)
    assert command_from_msg(command_to_msg(play)) == play


def test_a_clamped_speed_travels_as_asked_and_is_clamped_once():
    asked = cmd.PlayCtrlSpeed.asked(3.0)
    assert (asked.speed, asked.requested, asked.was_clamped) == (2.0, 3.0, True)
    assert command_from_msg(command_to_msg(asked)) == asked
    assert cmd.PlayCtrlSpeed.asked(1.25) == cmd.PlayCtrlSpeed(1.25)


def test_a_speed_that_is_not_a_number_is_refused_by_name():
    problem = validate_command(cmd.PlayCtrlSpeed.asked(math.nan), VOCABULARY)
    assert problem is not None and 'factor' in problem.reason


def test_defaults_of_a_message_are_the_protocol_defaults():
    assert command_from_msg(BehaviorCommand(kind=BehaviorCommand.HIT, name='snare')) == cmd.Hit(
        'snare'
    )
    assert command_from_msg(BehaviorCommand(kind=BehaviorCommand.PLAY, name='rock')) == cmd.Play(
        'rock'
    )
    move = command_from_msg(
        BehaviorCommand(kind=BehaviorCommand.MOVE, joint_names=['waist'], positions_rad=[0.1])
    )
    assert move == cmd.Move((('waist', 0.1),))


def test_an_unknown_kind_or_unpaired_move_is_refused_with_the_reason():
    with pytest.raises(ValueError, match='unknown command kind 200'):
        command_from_msg(BehaviorCommand(kind=200))
    with pytest.raises(ValueError, match='2 joint names but 1 positions'):
        command_from_msg(
            BehaviorCommand(
                kind=BehaviorCommand.MOVE, joint_names=['waist', 'head_yaw'], positions_rad=[0.0]
            )
        )
    with pytest.raises(ValueError, match='Protocol is not sent'):
        command_to_msg(cmd.Protocol(2))


def test_goals_become_commands_with_their_options():
    assert goal_command('hit', Hit.Goal(instrument='snare')) == cmd.Hit('snare', 5, '')
    assert goal_command('hit', Hit.Goal(instrument='snare', velocity=7, hand='left')) == cmd.Hit(
        'snare', 7, 'left'
    )
    assert goal_command('play', Play.Goal(score='rock', speed=1.5, start_bar=3)) == cmd.Play(
        'rock', 1.5, 3, False
    )
    assert goal_command('play', Play.Goal(score='rock', resume=True)) == cmd.Resume()
    move = Move.Goal(joint_names=['waist'], positions_rad=[0.2], profile='cubic')
    assert goal_command('move', move) == cmd.Move((('waist', 0.2),), None, 'cubic')


def test_bad_goal_options_are_refused_before_the_state_machine():
    for command in (cmd.Hit('snare', 9), cmd.Hit('snare', 5, 'both')):
        problem = validate_command(command, VOCABULARY)
        assert problem is not None and 'velocity must be 1..7' in problem.reason
    problem = validate_command(cmd.Move((('waist', 0.0),), None, 'jerky'), VOCABULARY)
    assert problem is not None and "unknown profile 'jerky'" in problem.reason


def started_machine() -> StateMachine:
    machine = StateMachine()
    for step in (cmd.Start(),):
        assert machine.decide(step).accepted
    assert machine.start_completed().accepted
    assert machine.decide(cmd.Ready()).accepted
    return machine


def test_the_state_machine_passes_the_options_on_and_plays_at_the_asked_speed():
    machine = started_machine()
    decision = machine.decide(cmd.Hit('snare', 3, 'right'))
    assert decision.actions == (StrikeInstrument('snare', 3, 'right'),)
    decision = machine.decide(cmd.Play('rock', 1.5, 4, True))
    assert decision.actions == (StartPlay('rock', 1.5, 4, True),)
    assert machine.speed == 1.5
