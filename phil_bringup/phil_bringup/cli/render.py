"""Text rendering for the `phil` command (ROS-free: plain values in, strings out)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class StatusView:
    """What `phil status` shows; filled from a phil_msgs/RobotStatus."""

    state: str
    speed: float
    realtime: bool
    play_id: str
    bar: int
    total_bars: int
    resume_valid: bool
    resume_play_id: str
    resume_bar: int
    joint_names: Sequence[str]
    commanded_rad: Sequence[float]
    measured_rad: Sequence[float]
    faults: Sequence[str]
    last_rejection: str


def _degrees(value: float) -> str:
    return '     -' if not math.isfinite(value) else f'{math.degrees(value):7.2f}'


def render_status(view: StatusView) -> str:
    """A compact multi-line status report."""
    lines = [
        f'state {view.state}   speed {view.speed:.2f}   '
        f'{"real-time" if view.realtime else "NOT real-time"}'
    ]
    if view.play_id:
        lines.append(f'playing {view.play_id}: bar {view.bar}/{view.total_bars}')
    if view.resume_valid:
        lines.append(f'resume point: {view.resume_play_id} bar {view.resume_bar}')
    for fault in view.faults:
        lines.append(f'FAULT {fault}')
    if view.last_rejection:
        lines.append(f'last rejected: {view.last_rejection}')
    if view.joint_names:
        lines.append(f'{"joint":<18}{"commanded":>10}{"measured":>10}   (deg)')
        for name, commanded, measured in zip(
            view.joint_names, view.commanded_rad, view.measured_rad, strict=False
        ):
            lines.append(f'{name:<18}{_degrees(commanded):>10}{_degrees(measured):>10}')
    return '\n'.join(lines)


def parse_joint_targets(items: Sequence[str]) -> tuple[list[str], list[float]]:
    """``['right_elbow=45', 'waist=-10']`` -> (names, radians).

    Raises:
        ValueError: naming the malformed item.
    """
    names, positions = [], []
    for item in items:
        name, separator, value = item.partition('=')
        if not separator or not name:
            raise ValueError(f'{item!r}: expected joint=degrees, e.g. right_elbow=45')
        try:
            degrees = float(value)
        except ValueError:
            raise ValueError(f'{item!r}: {value!r} is not a number of degrees') from None
        if not math.isfinite(degrees):
            raise ValueError(f'{item!r}: {value!r} is not a finite angle')
        names.append(name.strip())
        positions.append(math.radians(degrees))
    return names, positions
