"""The `GET_STATUS` reply, formatted exactly as upstream, and a reader for it.

`STATUS|<STATE>|q0|...|q12|<speed>|<pause_valid>|<pause_id>|<pause_bar>\\n`

* STATE: STANDBY, INIT, IDLE, PLAYING, SHUTTINGDOWN as upstream; this controller adds FAULT and
  ESTOP (a client that only prints the state keeps working).
* q0..q12: joint angles in degrees with 2 decimals, in the model's joint order. Like upstream we
  report the **last commanded target** (the end state of the queued motion), not the measured
  angles: clients compare them with what they sent, and the reference client prints them as
  "current target angles". Measured angles are on `/joint_states`. Before START the list is empty
  (upstream has no trajectory yet), so the reply is `STATUS|STANDBY|1.00|0|-|0`.
* speed: the playback speed factor with 2 decimals.
* pause fields: `1|<play id>|<bar>` when a resume point is saved, else `0|-|0`. The oldest
  upstream snapshot stops after the speed; `pause_fields=False` writes that form.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

STATUS_PREFIX = 'STATUS'
NO_PLAY_ID = '-'


def _field(text: str) -> str:
    """Keep a free-text field from breaking the line or the field split."""
    return text.replace('|', '_').replace('\n', '_').replace('\r', '_') or NO_PLAY_ID


def format_status(
    state: str,
    joint_angles_rad: Sequence[float] | None = None,
    speed: float = 1.0,
    resume_play_id: str | None = None,
    resume_bar: int = 0,
    pause_fields: bool = True,
) -> str:
    """Write the GET_STATUS reply line, terminated by `\\n`.

    Args:
        state: The state name (e.g. `RobotState.IDLE.value`, 'IDLE').
        joint_angles_rad: Last commanded joint targets (rad, joint order); None or empty before
            START.
        speed: Playback speed factor.
        resume_play_id: Play id of the saved resume point, None when there is none.
        resume_bar: Bar of the saved resume point.
        pause_fields: Write the three pause fields (current upstream) or stop after the speed.

    Returns:
        e.g. `STATUS|IDLE|10.00|90.00|...|0.00|1.00|1|BF|3\\n`.
    """
    fields = [STATUS_PREFIX, _field(state)]
    if joint_angles_rad is not None:
        fields += [f'{math.degrees(float(angle)):.2f}' for angle in joint_angles_rad]
    fields.append(f'{speed:.2f}')
    if pause_fields:
        if resume_play_id is None:
            fields += ['0', NO_PLAY_ID, '0']
        else:
            fields += ['1', _field(resume_play_id), str(int(resume_bar))]
    return '|'.join(fields) + '\n'


@dataclass(frozen=True)
class StatusReport:
    """A parsed GET_STATUS reply (degrees, as on the wire).

    Attributes:
        state: The state name.
        joint_angles_deg: The joint angles (empty before START).
        speed: Playback speed factor, None if the reply had none.
        resume_play_id: Play id of the resume point, None when there is none.
        resume_bar: Bar of the resume point (0 when there is none).
    """

    state: str
    joint_angles_deg: tuple[float, ...]
    speed: float | None
    resume_play_id: str | None
    resume_bar: int


def parse_status(line: str, joint_count: int) -> StatusReport:
    """Read a GET_STATUS reply the way the reference client does (by field count).

    Args:
        line: The reply, with or without its `\\n`.
        joint_count: Number of joints of the robot (13).

    Raises:
        ValueError: The line is not a STATUS reply or a field is not a number.
    """
    fields = line.strip().split('|')
    if len(fields) < 2 or fields[0] != STATUS_PREFIX:
        raise ValueError(f'not a STATUS reply: {line[:80]!r}')
    state, values = fields[1], fields[2:]
    resume_play_id: str | None = None
    resume_bar = 0
    if len(values) in (4, joint_count + 4):
        valid, play_id, bar = values[-3:]
        if valid == '1':
            resume_play_id, resume_bar = play_id, int(bar)
        values = values[:-3]
    speed = float(values.pop()) if values else None
    return StatusReport(
        state, tuple(float(value) for value in values), speed, resume_play_id, resume_bar
    )
