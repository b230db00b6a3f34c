"""MotionPlanner: the last commanded state, and motions planned from it so they join seamlessly.

The planner owns the commanded trajectory: everything queued for the hardware, from the motion
playing now to the end of the last accepted one. A new request starts where the queued motion
ends (or at ``earliest_start_s`` if that is later; the joints hold in between), so consecutive
motions join without a jump, and a request accepted while motion is queued waits its turn.
Chunks from other nodes (the score player) are checked for continuity against the same state,
and ``halt_at`` stops from the commanded sample at the halt time.

Not thread-safe: the owner (the node) serialises calls.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from phil_control.core.motion.chunking import chunk_to_trajectory
from phil_control.core.motion.halt import DEFAULT_HALT_DECELERATION_RAD_S2, HaltPlan, plan_halt
from phil_control.core.motion.primitives import build_trajectory, waypoints
from phil_control.core.motion.requests import MotionDefaults, MotionRequest
from phil_control.core.motion.trajectory import Trajectory
from phil_control.core.motion.validation import (
    JointTable,
    Rejection,
    RejectReason,
    check_chunk,
    check_segment_speed,
)
from phil_description.core.trajectory import Chunk

# Below this a commanded velocity counts as rest, rad/s.
_REST_VELOCITY_RAD_S = 1e-9
# Joins the planner makes itself (sampled at the same time from the same segment).
_INTERNAL_JOIN_TOLERANCE = 1e-7


@dataclass(frozen=True, eq=False)
class CommandedState:
    """The commanded joint state at a time.

    Attributes:
        positions_rad: (J,) positions, rad.
        velocities_rad_s: (J,) velocities, rad/s.
        time_s: When this state is commanded, s.
    """

    positions_rad: np.ndarray
    velocities_rad_s: np.ndarray
    time_s: float


@dataclass(frozen=True, eq=False)
class PlannedMotion:
    """A planned request.

    Attributes:
        request: What was asked.
        trajectory: What to send, from its first to its last sample; usually just the motion,
            preceded by a stop when the queued motion ended moving.
        motion_start_s: When the requested motion itself starts, s.
    """

    request: MotionRequest
    trajectory: Trajectory
    motion_start_s: float

    @property
    def end_s(self) -> float:
        """When the motion ends (at rest), s."""
        return self.trajectory.end_s


@dataclass(frozen=True)
class ContinuityTolerance:
    """How closely an incoming chunk must continue the commanded state.

    Attributes:
        position_rad: Largest position step at the chunk start, rad.
        velocity_rad_s: Largest velocity step at the chunk start, rad/s.
        time_s: Largest overlap with queued motion treated as none (stamp rounding), s.
    """

    position_rad: float = 1e-3
    velocity_rad_s: float = 0.05
    time_s: float = 1e-6


class MotionPlanner:
    """Plans motion requests and keeps the commanded trajectory.

    Args:
        model: A ``phil_description`` ``RobotModel`` (joint names, hard and velocity limits,
            poses); its ``init`` pose is the initial state unless ``initial_positions_rad`` is
            given.
        initial_positions_rad: Optional (J,) initial commanded positions, rad.
        initial_time_s: Time of the initial state, s.
        defaults: Default durations and profiles.
        halt_deceleration_rad_s2: Deceleration bound for halts, scalar or (J,), rad/s^2.
        tolerance: Continuity tolerances for incoming chunks.
        table: Joint table overriding the model's (tests).
        poses: Pose table overriding the model's (tests).
    """

    def __init__(
        self,
        model=None,
        *,
        initial_positions_rad: ArrayLike | None = None,
        initial_time_s: float = 0.0,
        defaults: MotionDefaults | None = None,
        halt_deceleration_rad_s2: ArrayLike = DEFAULT_HALT_DECELERATION_RAD_S2,
        tolerance: ContinuityTolerance | None = None,
        table: JointTable | None = None,
        poses: Mapping[str, np.ndarray] | None = None,
    ) -> None:
        self.table = table if table is not None else JointTable.from_model(model)
        self.poses = dict(poses if poses is not None else model.poses)
        self.defaults = defaults or MotionDefaults()
        self.tolerance = tolerance or ContinuityTolerance()
        self._deceleration = np.asarray(halt_deceleration_rad_s2, dtype=float)
        start = initial_positions_rad
        if start is None:
            start = self.poses['init']
        self._trajectory: Trajectory | None = None
        self._end = self._rest(start, initial_time_s)
        self._commanded = False

    @property
    def joint_names(self) -> tuple[str, ...]:
        """Joint names of every vector."""
        return self.table.names

    @property
    def state(self) -> CommandedState:
        """The last commanded state: the end of the queued motion and when it is reached."""
        return self._end

    @property
    def has_commanded(self) -> bool:
        """True once any motion or chunk was accepted."""
        return self._commanded

    def set_initial_state(self, positions_rad: ArrayLike, time_s: float) -> bool:
        """Replace the initial state (e.g. by a measurement) while nothing was commanded.

        Returns:
            False (and changes nothing) once a motion was commanded or a value is not finite.
        """
        positions = np.asarray(positions_rad, dtype=float)
        if self._commanded or positions.shape != (len(self.joint_names),):
            return False
        if not (np.isfinite(positions).all() and math.isfinite(time_s)):
            return False
        self._end = self._rest(positions, time_s)
        return True

    def forget(self, positions_rad: ArrayLike, time_s: float) -> None:
        """Drop every commanded motion and rest at ``positions_rad`` from ``time_s``, as if
        nothing had been commanded: measurements (:meth:`set_initial_state`) replace the state
        again until the next motion. For a latched hardware, which drops its queue and holds
        where the joints are measured."""
        self._trajectory = None
        self._end = self._rest(positions_rad, time_s)
        self._commanded = False

    def sample(self, times_s: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """Commanded positions (M, J) and velocities (M, J) at absolute times (M,).

        After the queued motion the joints hold the last commanded positions at rest.
        """
        times = np.atleast_1d(np.asarray(times_s, dtype=float))
        if self._trajectory is None:
            positions = np.tile(self._end.positions_rad, (times.shape[0], 1))
            return positions, np.zeros_like(positions)
        positions, velocities = self._trajectory.sample(times)
        after = times > self._end.time_s + self.tolerance.time_s
        positions[after] = self._end.positions_rad
        velocities[after] = 0.0
        return positions, velocities

    def plan(self, request: MotionRequest, earliest_start_s: float) -> PlannedMotion | Rejection:
        """Validate and plan a request from the last commanded state, without committing it.

        Args:
            request: The request.
            earliest_start_s: Do not start before this time (e.g. now + publish lead), s.

        Returns:
            The planned motion, or why it cannot run (unknown name, non-finite value, bad
            duration, target outside the hard limits, peak speed above a velocity limit).
        """
        steps = waypoints(request, self.table, self.poses, self.defaults)
        if isinstance(steps, Rejection):
            return steps
        end = self._end
        prefix = None
        base_positions, start = end.positions_rad, max(end.time_s, earliest_start_s)
        # Queued motion that ends moving gets a stop first, unless that end is already past by
        # the earliest start: the bus loop holds at rest after its last chunk by then.
        moving = np.max(np.abs(end.velocities_rad_s)) > _REST_VELOCITY_RAD_S
        if moving and end.time_s >= earliest_start_s:
            prefix = self._halt_from(end.positions_rad, end.velocities_rad_s, end.time_s)
            base_positions = prefix.trajectory.end_state()[0]
            start = max(prefix.trajectory.end_s, earliest_start_s)
        motion = build_trajectory(self.joint_names, base_positions, start, steps)
        for segment, step in zip(motion.segments, steps, strict=True):
            problem = check_segment_speed(self.table, segment, step.label)
            if problem is not None:
                return problem
        if prefix is not None:
            motion = prefix.trajectory.then(motion, allow_gap=True)
        return PlannedMotion(request, motion, start)

    def commit(self, motion: PlannedMotion) -> None:
        """Queue a planned motion (plan and commit with no other change in between).

        Raises:
            ValueError: If the state changed since ``plan`` (the motion no longer joins).
        """
        trajectory = motion.trajectory
        positions, _ = trajectory.start_state()
        jump = float(np.max(np.abs(positions - self._end.positions_rad)))
        if trajectory.start_s < self._end.time_s - self.tolerance.time_s or jump > 1e-9:
            raise ValueError(
                f'stale plan: it starts at {trajectory.start_s} s with a {jump:.3g} rad step, '
                f'the commanded state is at {self._end.time_s} s'
            )
        self._append(trajectory, _INTERNAL_JOIN_TOLERANCE, _INTERNAL_JOIN_TOLERANCE)

    def submit(self, request: MotionRequest, earliest_start_s: float) -> PlannedMotion | Rejection:
        """``plan`` and, if it succeeds, ``commit``."""
        motion = self.plan(request, earliest_start_s)
        if isinstance(motion, PlannedMotion):
            self.commit(motion)
        return motion

    def accept_chunk(self, chunk: Chunk, now_s: float) -> Trajectory | Rejection:
        """Validate a chunk from another node and queue it.

        Besides ``check_chunk``: the chunk may not start before ``now_s``; without ``replace`` it
        may not start before the end of the queued motion; its first point must equal the
        commanded state at its start (``ContinuityTolerance``). With ``replace`` the queued
        motion from its start on is dropped. Joints the chunk does not name hold.

        Returns:
            The commanded trajectory of the chunk over all joints, or the rejection.
        """
        problem = check_chunk(self.table, chunk) or self._timing_problem(chunk, now_s)
        if problem is not None:
            return problem
        positions, velocities = (values[0] for values in self.sample(chunk.start_s))
        problem = self._continuity_problem(chunk, positions, velocities)
        if problem is not None:
            return problem
        trajectory = chunk_to_trajectory(chunk, self.joint_names, positions)
        tolerance = self.tolerance
        try:
            self._append(
                trajectory, tolerance.position_rad, tolerance.velocity_rad_s, truncate=True
            )
        except ValueError as error:  # defensive: the checks above make the join valid
            return Rejection(RejectReason.DISCONTINUOUS, str(error))
        return trajectory

    def halt_at(self, time_s: float) -> HaltPlan:
        """Drop queued motion after ``time_s`` and stop smoothly from the commanded sample there.

        Returns:
            The stop, starting at ``time_s``; send it with ``replace`` set.
        """
        positions, velocities = (values[0] for values in self.sample(time_s))
        halt = self._halt_from(positions, velocities, time_s)
        self._append(halt.trajectory, _INTERNAL_JOIN_TOLERANCE, _INTERNAL_JOIN_TOLERANCE, True)
        return halt

    def prune(self, before_s: float) -> None:
        """Forget segments of commanded motion that ended before ``before_s`` (bounded memory).

        Cheap when there is nothing to drop, so it can run on every timer tick.
        """
        trajectory = self._trajectory
        if trajectory is None or trajectory.segments[0].end_s >= before_s:
            return
        kept = [segment for segment in trajectory.segments if segment.end_s >= before_s]
        self._trajectory = Trajectory(trajectory.joint_names, kept) if kept else None

    def _timing_problem(self, chunk: Chunk, now_s: float) -> Rejection | None:
        """LATE when the chunk starts before ``now_s``; OVERLAP when it starts before the queued
        motion ends and does not replace it."""
        tolerance = self.tolerance.time_s
        if chunk.start_s < now_s - tolerance:
            return Rejection(
                RejectReason.LATE,
                f'chunk starts at {chunk.start_s:.6f} s, '
                f'{now_s - chunk.start_s:.6f} s in the past',
            )
        if not chunk.replace and chunk.start_s < self._end.time_s - tolerance:
            return Rejection(
                RejectReason.OVERLAP,
                f'chunk starts at {chunk.start_s:.6f} s, before the queued motion ends at '
                f'{self._end.time_s:.6f} s; start later or set replace',
            )
        return None

    def _continuity_problem(
        self, chunk: Chunk, positions: np.ndarray, velocities: np.ndarray
    ) -> Rejection | None:
        """DISCONTINUOUS, naming the joint with the largest step, when the chunk's first point
        is further than ``ContinuityTolerance`` from the commanded state (``positions``,
        ``velocities``: every joint at the chunk start)."""
        tolerance = self.tolerance
        columns = [self.joint_names.index(name) for name in chunk.joint_names]
        checks = (
            ('position', chunk.positions_rad[0], positions, tolerance.position_rad, 'rad'),
            ('velocity', chunk.velocities_rad_s[0], velocities, tolerance.velocity_rad_s, 'rad/s'),
        )
        for label, first, commanded, limit, unit in checks:
            reference = commanded[columns]
            steps = np.abs(np.asarray(first, dtype=float) - reference)
            worst = int(np.argmax(steps))
            if steps[worst] > limit:
                name = chunk.joint_names[worst]
                return Rejection(
                    RejectReason.DISCONTINUOUS,
                    f'{name} {label} at the chunk start is {first[worst]:.6f} {unit}, the '
                    f'commanded {label} is {reference[worst]:.6f} {unit} (tolerance {limit:g})',
                    name,
                )
        return None

    def _halt_from(self, positions: np.ndarray, velocities: np.ndarray, time_s: float) -> HaltPlan:
        return plan_halt(
            self.joint_names,
            positions,
            velocities,
            time_s,
            self._deceleration,
            self.table.lower_rad,
            self.table.upper_rad,
        )

    def _append(
        self,
        trajectory: Trajectory,
        position_tolerance: float,
        velocity_tolerance: float,
        truncate: bool = False,
    ) -> None:
        """Queue ``trajectory`` (dropping queued motion after its start if ``truncate``).

        Raises:
            ValueError: If it does not join; nothing is changed then.
        """
        base = self._trajectory
        if base is not None and truncate:
            base = base.until(trajectory.start_s)
        if base is not None:
            base = base.then(
                trajectory,
                allow_gap=True,
                position_tolerance_rad=position_tolerance,
                velocity_tolerance_rad_s=velocity_tolerance,
                time_tolerance_s=self.tolerance.time_s,
            )
        self._trajectory = trajectory if base is None else base
        positions, velocities = trajectory.end_state()
        self._end = CommandedState(positions.copy(), velocities.copy(), trajectory.end_s)
        self._commanded = True

    def _rest(self, positions: ArrayLike, time_s: float) -> CommandedState:
        vector = np.array(positions, dtype=float)
        return CommandedState(vector, np.zeros_like(vector), float(time_s))
