"""What the trajectory generator follows of the hardware: its latch (``hardware/status``: ESTOP
or a fault ends every goal, drops the queued chunks and starts the commanded state over from
the measured pose) and the measured positions (``hardware/motor_states``: the initial state
until the first motion is commanded)."""

from __future__ import annotations

from phil_control.conversions import (
    last_reset_ns,
    last_reset_s,
    latch_barrier_ns,
    measured_positions,
)
from phil_control.core.motion import Chunk
from phil_description.core.graph_key import GraphKey
from phil_msgs.msg import HardwareStatus, MotorStates

# Chunks remembered as sent (0.02 to 0.5 s each): far more than go out between two statuses.
SENT_CHUNKS_KEPT = 256


class HardwareState:
    """The hardware side of the `TrajectoryGenerator` node (a mixin: it uses the node's lock,
    planner, goal list and chunk queue)."""

    def _on_hardware(self, msg: HardwareStatus) -> None:
        """Follow the hardware latch: on it, end every goal, drop queued chunks and start the
        commanded state over from the measured pose. A latch that came and went between two
        statuses that reach us (they keep depth 1; ESTOP and at once RESET) counts too, the
        count of granted RESETs says so, when motion went out before that RESET and ran past
        the status before, or a goal running was made before it: what went out after it (this
        status came late) was not dropped. A goal made before a latch this status shows or
        counts is refused from now on."""
        reason = ''
        if msg.estop or msg.faults:
            reason = msg.faults[0].reason if msg.faults else 'emergency stop'
        with self._lock:
            self._latch_barrier_ns = max(self._latch_barrier_ns, latch_barrier_ns(msg))
            unseen = (
                msg.resets_granted > self._resets_granted
                and not self._latched
                and (
                    self._sent_into_latch(last_reset_s(msg, self._timebase, self._now_s()))
                    or self._goal_made_before(last_reset_ns(msg))
                )
            )
            # Not after now: a status on another clock must not hide what went out before it.
            self._status_s = min(self._timebase.from_stamp(msg.header.stamp), self._now_s())
            self._resets_granted = msg.resets_granted
            latched_now = (reason and not self._latched) or unseen
            self._latched = reason
            if not latched_now:
                return
            reason = reason or 'a latch that a RESET cleared'
            now = self._now_s()
            for goal in list(self._goals):
                self._resolve(goal, 'abort', f'the hardware latched: {reason}')
            self._pending.clear()
            self._sent.clear()
            positions, _ = self._planner.sample(now)
            self._planner.forget(
                self._measured if self._measured is not None else positions[0], now
            )
            self._publish_state()
        self.get_logger().warning(
            f'hardware latched ({reason}): goals ended, queued motion '
            'dropped; the commanded state follows the measured pose'
        )

    def _note_sent(self, chunk: Chunk) -> None:
        """Remember that ``chunk`` went to the hardware now (lock held)."""
        self._sent.append((self._now_s(), chunk.start_s + float(chunk.times_from_start_s[-1])))

    def _sent_into_latch(self, reset_s: float) -> bool:
        """Whether a chunk went out before ``reset_s`` and ran past the last status (which
        showed no latch): the latch, between the two, dropped it (lock held)."""
        return any(sent_s < reset_s and end_s > self._status_s for sent_s, end_s in self._sent)

    def _goal_made_before(self, time_ns: int) -> bool:
        """Whether a running goal was made before ``time_ns`` (CLOCK_REALTIME; lock held)."""
        return any(GraphKey.goal_made_ns(g.handle.goal_id.uuid) < time_ns for g in self._goals)

    def _on_motor_states(self, msg: MotorStates) -> None:
        with self._lock:
            state = self._planner.state
            positions = measured_positions(msg, self.model.joint_names, state.positions_rad)
            self._measured = positions
            if self._planner.has_commanded:
                return
            moved = abs(positions - state.positions_rad).max(initial=0.0) > 1e-4
            if self._planner.set_initial_state(positions, self._now_s()) and moved:
                self._publish_state()
