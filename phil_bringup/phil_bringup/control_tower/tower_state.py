"""What the page shows, gathered from the graph (ROS-free): the latest joint positions
(measured and commanded), robot status and motor table (`frame`), and the hits, impacts and
matched strokes, numbered, so each page is sent those it has not had (`events_since`), however
many frames it skipped."""

from __future__ import annotations

import collections
import dataclasses
import math
import threading
from collections.abc import Sequence

from phil_bringup.control_tower.hit_errors import HitErrors

#: Hits, impacts and stroke errors kept for the pages (a page further behind loses the oldest).
MAX_EVENTS = 1000


class TowerState:
    """Thread-safe: ROS callbacks set it, the server's loop takes frames.

    Args:
        joint_names: URDF joint order; positions of other names are ignored.
    """

    def __init__(self, joint_names: Sequence[str]) -> None:
        self.joint_names = list(joint_names)
        self._index = {name: i for i, name in enumerate(self.joint_names)}
        self._lock = threading.Lock()
        self._measured = [math.nan] * len(self.joint_names)
        self._commanded: list[float] | None = None
        self._status: dict = {'state': 'STANDBY', 'faults': [], 'unresponsive': []}
        self._motors: list[dict] = []
        self._events: collections.deque[tuple[int, str, dict]] = collections.deque(
            maxlen=MAX_EVENTS
        )
        self._sequence = 0
        self._matcher = HitErrors()

    def _positions(self, target: list[float], names: Sequence[str], values: Sequence[float]):
        for name, value in zip(names, values, strict=False):
            index = self._index.get(name)
            if index is not None:
                target[index] = float(value)

    def set_measured(self, names: Sequence[str], positions_rad: Sequence[float]) -> None:
        with self._lock:
            self._positions(self._measured, names, positions_rad)

    def set_commanded(self, names: Sequence[str], positions_rad: Sequence[float]) -> None:
        with self._lock:
            if self._commanded is None:
                self._commanded = [math.nan] * len(self.joint_names)
            self._positions(self._commanded, names, positions_rad)

    def set_status(self, status: dict) -> None:
        status = _json_safe(status)
        with self._lock:
            self._status = status

    def set_motors(self, motors: list[dict]) -> None:
        motors = _json_safe(motors)  # e.g. no temperature from an EPOS4: NaN
        with self._lock:
            self._motors = motors

    def hit(self, source: str, instrument: str, time_s: float) -> None:
        """A commanded hit (``source`` 'commanded') or a detected impact ('detected')."""
        with self._lock:
            self._add('hits', {'source': source, 'instrument': instrument, 'time_s': time_s})
            arrive = self._matcher.commanded if source == 'commanded' else self._matcher.detected
            error = arrive(instrument, time_s)
            if error is not None:
                self._add('errors', dataclasses.asdict(error))

    def _add(self, kind: str, event: dict) -> None:
        self._sequence += 1
        self._events.append((self._sequence, kind, event))

    def events_since(self, sequence: int) -> tuple[dict, int]:
        """The hits and errors (``{'hits': [...], 'errors': [...]}``) after ``sequence``, and
        the last number."""
        with self._lock:
            events = {'hits': [], 'errors': []}
            for number, kind, event in self._events:
                if number > sequence:
                    events[kind].append(event)
            return events, self._sequence

    def frame(self, now_s: float) -> dict:
        """The state now (JSON-ready; NaN as None), without the events (`events_since`)."""
        with self._lock:
            return {
                'type': 'state',
                'time_s': now_s,
                'joints': {
                    'names': self.joint_names,
                    'measured_rad': _json_safe(self._measured),
                    'commanded_rad': _json_safe(self._commanded),
                },
                'status': self._status,
                'motors': self._motors,
            }


def _json_safe(value):
    """``value`` with every non-finite float as None (JSON has no NaN)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _json_safe(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(item) for item in value]
    return value
