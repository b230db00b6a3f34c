"""CommandTurns: waiting commands are decided in arrival order, once the transition is over or
with the reason once their time is up."""

from __future__ import annotations

from phil_control.core.behavior.turns import CommandTurns
from phil_control.core.protocol import Look, Ready


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_first_waiting_command_goes_when_the_transition_is_over_then_the_next():
    clock, woken = Clock(), []
    turns = CommandTurns(clock, wait_s=10.0)
    transition = {'reason': 'START is in progress'}
    ready = turns.join(Ready(), lambda late: woken.append(('READY', late)))
    look = turns.join(Look(0.1, 0.0), lambda late: woken.append(('LOOK', late)))
    turns.release(lambda _command: transition['reason'])
    assert woken == [] and turns.busy
    transition['reason'] = ''
    turns.release(lambda _command: '')
    turns.release(lambda _command: '')  # the head is woken once; LOOK waits for READY's end
    assert woken == [('READY', '')]
    turns.leave(ready)
    turns.release(lambda _command: '')
    assert woken == [('READY', ''), ('LOOK', '')]
    turns.leave(look)
    assert not turns.busy


def test_a_command_whose_time_is_up_is_woken_with_the_reason():
    clock, woken = Clock(), []
    turns = CommandTurns(clock, wait_s=10.0)
    turns.join(Ready(), woken.append)
    clock.now = 9.9
    turns.release(lambda _command: 'START is in progress')
    assert woken == []
    clock.now = 10.0
    turns.release(lambda _command: 'START is in progress')
    assert woken == ['waited 10 s: START is in progress']
