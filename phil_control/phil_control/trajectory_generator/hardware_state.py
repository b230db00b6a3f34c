"""What the trajectory generator follows of the hardware: its latch (``hardware/status``: ESTOP
or a fault ends every goal, drops the queued chunks and starts the commanded state over from
the measured pose) and the measured positions (``hardware/motor_states``: the initial state
until the first motion is commanded)."""

from __future__ import annotations

import math

from phil_control.conversions import measured_positions
from phil_msgs.msg import HardwareStatus, MotorStates


class HardwareState:
    """The hardware side of the `TrajectoryGenerator` node (a mixin: it uses the node's lock,
    planner, goal list and chunk queue)."""

    def _on_hardware(self, msg: HardwareStatus) -> None:
        """Follow the hardware latch: on it, end every goal, drop queued chunks and start the
        commanded state over from the measured pose. A latch that came and went between two
        statuses that reach us (they keep depth 1; ESTOP and at once RESET) counts too, the
        count of granted RESETs says so; but only for motion that went out before the status
        that counts the RESET: what went out after it (this status came late) was not
        dropped."""
        reason = ''
        if msg.estop or msg.faults:
            reason = msg.faults[0].reason if msg.faults else 'emergency stop'
        with self._lock:
            unseen = (
                msg.resets_granted > self._resets_granted
                and not self._latched
                and self._moving_since_s < self._timebase.from_stamp(msg.header.stamp)
            )
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
            self._moving_since_s, self._sent_until_s = math.inf, -math.inf
            positions, _ = self._planner.sample(now)
            self._planner.forget(
                self._measured if self._measured is not None else positions[0], now
            )
            self._publish_state()
        self.get_logger().warning(
            f'hardware latched ({reason}): goals ended, queued motion '
            'dropped; the commanded state follows the measured pose'
        )

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
