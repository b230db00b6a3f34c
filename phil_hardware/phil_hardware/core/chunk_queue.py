"""Trajectory chunk queue sampled by the bus loop at the actual send time (pure, no I/O).

A chunk is a slice of a joint trajectory with an absolute start time on the robot's monotonic
clock (s) and points at ``time_from_start`` (s) relative to it. The loop calls
:meth:`ChunkQueue.sample` with the time it is about to send, so a hit lands at its score time
and not on a control-period grid.

Rules:

* Chunks wait in the queue until their start time. The chunk that starts last at or before the
  sample time is the active one: a chunk that starts while another runs takes over at its start
  time (splice). ``replace`` also drops every queued chunk starting at or after its start.
* When a chunk takes over, the first segment runs from the target at that moment (position and
  velocity) to the chunk's first point, so splicing never jumps unless the chunk itself does.
* Between points: cubic Hermite when the chunk has velocities, else linear (the velocity
  output is then the segment slope, used as feed-forward).
* After its last point, and with an empty queue, the last target is held with zero velocity.
* Joints a chunk does not name keep their target (and control mode) from the takeover moment.
* An invalid chunk is rejected with a reason and counted; the queue never raises on sampling.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from phil_description.core.trajectory import Chunk, ChunkError, ControlMode, validate_chunk

DEFAULT_MAX_QUEUED_CHUNKS = 64


class _Prepared:
    """A validated chunk in robot joint indices, plus its takeover anchor.

    Times are plain floats (numpy scalars cost several times as much in every comparison and
    product), and each segment's polynomial coefficients are computed once, when sampling
    enters it: a 1 kHz loop samples the same segment many times.
    """

    __slots__ = (
        '_segment',
        '_segment_index',
        'anchor_pos',
        'anchor_time',
        'anchor_vel',
        'end',
        'indices',
        'modes',
        'order',
        'pos',
        'sequence',
        'start',
        'times',
        'vel',
        'zeros',
    )

    def __init__(self, chunk: Chunk, joint_index: Mapping[str, int], order: int):
        self.start = float(chunk.start_s)
        self.times = (chunk.start_s + chunk.times_from_start_s).tolist()
        self.end = self.times[-1]
        self.indices = np.array([joint_index[name] for name in chunk.joint_names], dtype=np.intp)
        self.pos = np.array(chunk.positions_rad, dtype=float)
        self.vel = None if chunk.velocities_rad_s is None else np.array(chunk.velocities_rad_s)
        modes = chunk.control_modes or (ControlMode.POSITION,) * len(chunk.joint_names)
        self.modes = np.array(modes, dtype=np.int8)
        self.sequence = chunk.sequence
        self.order = order
        self.zeros = np.zeros(len(self.indices))
        self.set_anchor(self.start, self.pos[0], self.zeros)

    def set_anchor(self, time_s: float, position: np.ndarray, velocity: np.ndarray) -> None:
        """Where the motion into the first point starts (the outgoing motion at takeover)."""
        self.anchor_time = time_s
        self.anchor_pos = position
        self.anchor_vel = velocity
        self._segment_index = -2  # none computed; -1 is the segment from the anchor
        self._segment: tuple = ()

    def evaluate(self, time_s: float) -> tuple[np.ndarray, np.ndarray]:
        """Position and velocity of this chunk's joints at ``time_s`` (>= anchor time).
        The arrays returned are new or read-only to the caller."""
        if time_s >= self.end:
            return self.pos[-1], self.zeros
        times = self.times
        index = -1 if time_s < times[0] else bisect.bisect_right(times, time_s) - 1
        if index != self._segment_index:
            self._segment = self._coefficients(index)
            self._segment_index = index
        t0, h, c0, c1, c2, c3 = self._segment
        if c1 is None:  # a segment of zero length: its end point
            return c0, c2
        s = min(max((time_s - t0) / h, 0.0), 1.0)
        if c2 is None:  # linear
            return c0 + s * c1, c3
        # Horner form of the cubic Hermite and of its derivative.
        return c0 + s * (c1 + s * (c2 + s * c3)), (c1 + s * (2.0 * c2 + s * 3.0 * c3)) / h

    def _coefficients(self, index: int) -> tuple:
        """(t0, h, c0, c1, c2, c3) of segment ``index`` (-1: from the anchor to point 0):
        cubic p(s) = c0 + c1 s + c2 s^2 + c3 s^3 with s = (t - t0) / h in [0, 1]; linear
        p(s) = c0 + c1 s with the slope c3; for a zero-length segment (end point, velocity)
        in c0 and c2."""
        vel = self.vel
        v0: np.ndarray | None
        v1: np.ndarray | None
        if index < 0:
            t0, t1, p0, v0 = self.anchor_time, self.times[0], self.anchor_pos, self.anchor_vel
            p1, v1 = self.pos[0], None if vel is None else vel[0]
        else:
            t0, t1, p0, p1 = (
                self.times[index],
                self.times[index + 1],
                self.pos[index],
                self.pos[index + 1],
            )
            v0, v1 = (None, None) if vel is None else (vel[index], vel[index + 1])
        h = t1 - t0
        if h <= 0.0:
            return t0, h, p1, None, self.zeros if v1 is None else v1, None
        if v1 is None:  # linear; the anchor velocity is ignored without chunk velocities
            return t0, h, p0, p1 - p0, None, (p1 - p0) / h
        hv0, hv1 = h * v0, h * v1
        return (
            t0,
            h,
            p0,
            hv0,
            3.0 * (p1 - p0) - 2.0 * hv0 - hv1,
            2.0 * (p0 - p1) + hv0 + hv1,
        )


class ChunkQueue:
    """Queued trajectory chunks for a fixed joint list, sampled at send time.

    Not thread-safe: the bus loop owns it. All times are robot monotonic seconds.

    Attributes:
        accepted / rejected: Chunks queued / refused by :meth:`push`.
        last_reject_reason: Why the last refused chunk was refused ('' if none).
        superseded: Queued chunks dropped because a later one started first or replaced them.
        active_sequence: Sequence number of the chunk being followed, -1 when holding.
    """

    def __init__(
        self,
        joint_names: Sequence[str],
        initial_positions_rad: Sequence[float],
        torque_joints: Iterable[str] = (),
        max_queued: int = DEFAULT_MAX_QUEUED_CHUNKS,
    ) -> None:
        """Create an empty queue holding ``initial_positions_rad``.

        Args:
            joint_names: Robot joints in index order.
            initial_positions_rad: Target held until the first chunk [rad].
            torque_joints: Joints allowed to use :attr:`ControlMode.TORQUE`.
            max_queued: Waiting chunks beyond which :meth:`push` refuses more.
        """
        self.joint_names = tuple(joint_names)
        self._index = {name: i for i, name in enumerate(self.joint_names)}
        self._torque_joints = frozenset(torque_joints)
        self._max_queued = max_queued
        count = len(self.joint_names)
        self._target = np.array(initial_positions_rad, dtype=float)
        if self._target.shape != (count,) or not np.isfinite(self._target).all():
            raise ChunkError(f'initial positions must be {count} finite values')
        self._velocity = np.zeros(count)
        self._modes = np.zeros(count, dtype=np.int8)
        self._hold = self._target.copy()
        self._active: _Prepared | None = None
        self._pending: list[_Prepared] = []
        self._order = 0
        self._last_time_s = -math.inf
        self.accepted = 0
        self.rejected = 0
        self.superseded = 0
        self.last_reject_reason = ''
        self.active_sequence = -1

    @property
    def queued(self) -> int:
        """Chunks waiting or running."""
        return len(self._pending) + (self._active is not None)

    @property
    def queue_end_s(self) -> float:
        """Robot time the queued motion ends; 0.0 when holding."""
        # Later chunks cut earlier ones at their start, so the one starting last decides.
        last = self._pending[-1] if self._pending else self._active
        return 0.0 if last is None else last.end

    @property
    def target_rad(self) -> np.ndarray:
        """Last sampled target (read-only view)."""
        view = self._target.view()
        view.flags.writeable = False
        return view

    def sample_view(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The arrays of the last :meth:`sample` (no new sampling; owned by the queue)."""
        return self._target, self._velocity, self._modes

    def push(self, chunk: object) -> str | None:
        """Validate and queue a chunk.

        Returns:
            None when queued, else the reason it was rejected (also counted).
        """
        problem = validate_chunk(chunk, self._index, self._torque_joints)
        reason = None if problem is None else problem.detail
        if reason is None and isinstance(chunk, Chunk) and chunk.end_s < self._last_time_s:
            reason = 'chunk ends before the current time'
        if reason is None and len(self._pending) >= self._max_queued:
            reason = f'queue full ({self._max_queued} chunks waiting)'
        if reason is not None:
            self.rejected += 1
            sequence = getattr(chunk, 'sequence', '?')
            self.last_reject_reason = f'chunk {sequence}: {reason}'
            return self.last_reject_reason
        assert isinstance(chunk, Chunk)  # validate_chunk rejects anything else
        prepared = _Prepared(chunk, self._index, self._order)
        self._order += 1
        if chunk.replace:
            kept = [c for c in self._pending if c.start < prepared.start]
            self.superseded += len(self._pending) - len(kept)
            self._pending = kept
        self._pending.append(prepared)
        self._pending.sort(key=lambda c: (c.start, c.order))
        self.accepted += 1
        return None

    def sample(self, time_s: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Target positions, velocities and control modes at ``time_s``.

        The returned arrays are owned by the queue and overwritten by the next call.

        Args:
            time_s: The send time on the robot monotonic clock [s].

        Returns:
            (positions [rad], velocities [rad/s], modes (:class:`ControlMode` values)).
        """
        pending = self._pending
        if pending and pending[0].start <= time_s:
            last = 0
            while last + 1 < len(pending) and pending[last + 1].start <= time_s:
                last += 1
            self.superseded += last
            self._take_over(pending[last], time_s)
            del pending[: last + 1]
        active = self._active
        if active is None:
            self._velocity[:] = 0.0
        else:
            self._target[:] = self._hold
            self._velocity[:] = 0.0
            position, velocity = active.evaluate(time_s)
            self._target[active.indices] = position
            self._velocity[active.indices] = velocity
            if time_s >= active.end:
                self._hold[active.indices] = active.pos[-1]
                self._active = None
                self.active_sequence = -1
        self._last_time_s = max(self._last_time_s, time_s)
        return self._target, self._velocity, self._modes

    def _take_over(self, chunk: _Prepared, time_s: float) -> None:
        # The anchor is the outgoing motion at the new chunk's start (or now, if it is late).
        anchor_time = min(max(chunk.start, self._last_time_s), time_s)
        anchor_pos = self._hold.copy() if self._active is not None else self._target.copy()
        anchor_vel = np.zeros(len(anchor_pos))
        if self._active is not None:
            position, velocity = self._active.evaluate(anchor_time)
            anchor_pos[self._active.indices] = position
            anchor_vel[self._active.indices] = velocity
        chunk.set_anchor(anchor_time, anchor_pos[chunk.indices], anchor_vel[chunk.indices])
        self._hold[:] = anchor_pos
        self._modes[chunk.indices] = chunk.modes
        self._active = chunk
        self.active_sequence = chunk.sequence

    def halt(self) -> int:
        """Drop all motion and hold the current sampled target.

        Returns:
            Number of chunks dropped.
        """
        return self.hold(self._target)

    def hold(
        self, positions_rad: Sequence[float] | np.ndarray, modes: Sequence[int] | None = None
    ) -> int:
        """Drop all motion and hold ``positions_rad`` (e.g. the measured pose after a fault).

        Non-finite entries keep the current target of that joint.

        Returns:
            Number of chunks dropped.
        """
        dropped = self.queued
        self._pending.clear()
        self._active = None
        self.active_sequence = -1
        positions = np.asarray(positions_rad, dtype=float)
        finite = np.isfinite(positions)
        self._target[finite] = positions[finite]
        self._hold[:] = self._target
        self._velocity[:] = 0.0
        if modes is not None:
            self._modes[:] = modes
        return dropped
