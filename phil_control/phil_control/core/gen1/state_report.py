"""The state line the Gen-1 brain reads (FACTS 9.2): one JSON object per line, sent at most every
100 ms and only when it changed.

Keys and how this robot fills them:

* ``state``: 0 idle (STANDBY, INIT, IDLE), 1 test (never: moves and gestures are ``0``), 2 play
  (PLAYING, a HIT too), 3 shutdown (SHUTTINGDOWN), 4 pause (IDLE with a resume point),
  5 add-stance (never), 6 error (FAULT, ESTOP).
* ``is_fixed``: the motors hold the robot (START done: INIT, IDLE, PLAYING, SHUTTINGDOWN).
* ``is_lock_key_removed``: the operator's READY came since the last START (the locking pins are
  out); kept through FAULT and ESTOP, which do not put the pins back.
* ``current_song``, ``progress`` ("bar/bars"), ``bpm`` (the score's tempo at that bar times the
  speed): of the song playing or paused, else ``"None"``, ``"0/0"`` and 0.
* ``last_action``: the last Gen-1 command the robot accepted.
* ``current_angles``: the 11 Gen-1 joints, measured, degrees with 2 decimals, each updated only
  when it moved more than its deadband (0.5 deg; 1.0 deg for wrists and feet).
* ``error_message``: the faults (joint: reason) in state 6, else ``"None"``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from phil_control.core.gen1.commands import GEN1_JOINTS
from phil_control.core.score import PlayList

IDLE, TEST, PLAY, SHUTDOWN, PAUSE, ADD_STANCE, ERROR = range(7)
NONE_TEXT = 'None'
#: How often the line may go out, s.
REPORT_PERIOD_S = 0.1
DEADBAND_DEG = 0.5
WIDE_DEADBAND_DEG = 1.0
_WIDE = ('R_wrist', 'L_wrist', 'R_foot', 'L_foot')
#: The order of the Gen-1 controller's ``current_angles``.
REPORTED_JOINTS = (
    'waist', 'R_arm1', 'L_arm1', 'R_arm2', 'R_arm3', 'L_arm2', 'L_arm3',
    'R_wrist', 'L_wrist', 'R_foot', 'L_foot',
)  # fmt: skip
_HOLDING = ('INIT', 'IDLE', 'PLAYING', 'SHUTTINGDOWN')
_LATCHED = ('FAULT', 'ESTOP')


@dataclass(frozen=True)
class RobotSnapshot:
    """What the report is made of (from /phil/status and the bridge).

    Attributes:
        state: RobotStatus STATE_*.
        measured_deg: URDF joint -> measured angle, degrees (NaN while unknown).
        song: The song playing or paused ('' when none), as the brain named it if it did.
        bar, total_bars: Where the song is.
        bpm: Its tempo there times the speed (0 when no song).
        paused: A resume point is kept.
        faults: ``joint: reason`` of each active fault.
        last_action: The last Gen-1 command accepted.
    """

    state: str
    measured_deg: Mapping[str, float] = field(default_factory=dict)
    song: str = ''
    bar: int = 0
    total_bars: int = 0
    bpm: float = 0.0
    paused: bool = False
    faults: tuple[str, ...] = ()
    last_action: str = ''


class StateReport:
    """Makes the state lines of one bridge (keeps the angles last reported and the pins)."""

    def __init__(self) -> None:
        self._angles: dict[str, float] = {}
        self._pins_out = False
        self._last_line = ''

    def line(self, snapshot: RobotSnapshot) -> str | None:
        """The line to send now, or None when it would say what the last one said."""
        line = json.dumps(self.report(snapshot), separators=(', ', ': '))
        if line == self._last_line:
            return None
        self._last_line = line
        return line

    def report(self, snapshot: RobotSnapshot) -> dict:
        """The report of ``snapshot`` (updates the angles past their deadband and the pins)."""
        state = snapshot.state
        if state in ('IDLE', 'PLAYING'):
            self._pins_out = True
        elif state in ('STANDBY', 'INIT'):
            self._pins_out = False
        for name, joint in GEN1_JOINTS.items():
            value = snapshot.measured_deg.get(joint, math.nan)
            band = WIDE_DEADBAND_DEG if name in _WIDE else DEADBAND_DEG
            if math.isfinite(value) and not abs(value - self._angles.get(name, math.inf)) <= band:
                self._angles[name] = round(value, 2)
        song = bool(snapshot.song)
        return {
            'state': gen1_state(state, snapshot.paused),
            'bpm': round(snapshot.bpm, 2) if song else 0,
            'is_fixed': state in _HOLDING,
            'current_song': snapshot.song or NONE_TEXT,
            'progress': f'{snapshot.bar}/{snapshot.total_bars}' if song else '0/0',
            'is_lock_key_removed': self._pins_out,
            'last_action': snapshot.last_action or NONE_TEXT,
            'current_angles': {
                name: self._angles[name] for name in REPORTED_JOINTS if name in self._angles
            },
            'error_message': '; '.join(snapshot.faults) or state
            if state in _LATCHED
            else NONE_TEXT,
        }


def gen1_state(state: str, paused: bool) -> int:
    """The Gen-1 state number of a RobotStatus state."""
    if state in _LATCHED:
        return ERROR
    if state == 'SHUTTINGDOWN':
        return SHUTDOWN
    if state == 'PLAYING':
        return PLAY
    return PAUSE if paused and state == 'IDLE' else IDLE


class SongTempos:
    """The tempo of a play-list song at a bar, for ``bpm`` (each score read once).

    Args:
        play_list: Gives the current play list, or None (no tempos then).
    """

    def __init__(self, play_list: Callable[[], PlayList | None]) -> None:
        self._play_list = play_list
        self._bars: dict[str, list[tuple[int, float]]] = {}

    def bpm(self, play_id: str, bar: int) -> float:
        """The tempo in effect at ``bar`` of ``play_id``'s score (0 when unknown)."""
        if play_id not in self._bars:
            self._bars[play_id] = self._read(play_id)
        tempo = 0.0
        for first_bar, bpm in self._bars[play_id]:
            if first_bar > bar:
                break
            tempo = bpm
        return tempo

    def forget(self) -> None:
        """Read the scores again (the play list changed)."""
        self._bars.clear()

    def _read(self, play_id: str) -> list[tuple[int, float]]:
        play_list = self._play_list()
        try:
            entry = play_list.entry(play_id)
            events = play_list.read_score(entry.score_path).events
        except (AttributeError, ValueError, OSError):  # no list, unknown id, unreadable
            return []
        changes = [(events[0].bar, events[0].bpm)] if events else []
        for event in events:
            if event.bpm != changes[-1][1]:
                changes.append((event.bar, event.bpm))
        return changes
