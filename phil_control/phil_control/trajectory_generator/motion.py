"""The trajectory generator's motion bookkeeping: the tick (goals that ended, feedback, the
queued chunks that are due), the chunk queue and what publishes it and the commanded state,
and halting (``~/halt``, a cancelled goal)."""

from __future__ import annotations

from phil_control.conversions import chunk_to_msg
from phil_control.core.motion import Chunk, chunk_trajectory
from phil_control.trajectory_generator import conversions as convert
from phil_ros.graph_safety import sign_message

# Commanded motion older than this is forgotten, s.
_HISTORY_S = 1.0


class MotionQueue:
    """The motion side of the `TrajectoryGenerator` node (a mixin: it uses the node's lock,
    planner, goal list, chunk queue, publishers and ticks)."""

    def _on_tick(self) -> None:
        with self._lock:
            now = self._now_s()
            cancelled = [
                g for g in self._goals if not g.cancelling and g.handle.is_cancel_requested
            ]
            if cancelled:
                halt_s, rest_s = self._halt(now)
                for goal in cancelled:
                    goal.cancelling, goal.end_s = True, rest_s
                self._abort_moving_after(halt_s, 'halted because another goal was cancelled')
            for goal in list(self._goals):
                if now >= goal.end_s:
                    if goal.cancelling:
                        self._resolve(goal, 'canceled', f'cancelled; at rest at t={now:.3f} s')
                    else:
                        self._resolve(goal, 'succeed', '')
                elif now >= goal.next_feedback_s:
                    goal.next_feedback_s = now + self.config.feedback_period_s
                    self._feedback(goal, now)
            self._publish_due(now)
            self._planner.prune(now - _HISTORY_S)
            if not self._goals and not self._pending:
                self._ticks.pause()

    def _publish_due(self, now: float) -> None:
        """Publish every queued chunk whose start is at most publish_lead_s away (lock held)."""
        horizon = now + self.config.publish_lead_s
        while self._pending and self._pending[0].start_s <= horizon:
            self._publish_chunk(self._pending.popleft())

    def _flush_pending(self, before_s: float) -> None:
        """Publish queued chunks that start before ``before_s`` now, drop the rest (lock held)."""
        while self._pending and self._pending[0].start_s < before_s:
            self._publish_chunk(self._pending.popleft())
        self._pending.clear()

    def _publish_chunk(self, chunk: Chunk) -> None:
        self._chunk_pub.publish(sign_message(self._key, chunk_to_msg(chunk, self._timebase)))
        self._note_sent(chunk)

    def _publish_state(self) -> None:
        self._state_pub.publish(
            convert.joint_state_msg(self.model.joint_names, self._planner.state, self._timebase)
        )

    def _halt(self, now: float) -> tuple[float, float]:
        """Stop from the commanded sample publish_lead_s ahead (lock held): (halt, rest) times."""
        halt_s = now + self.config.publish_lead_s
        plan = self._planner.halt_at(halt_s)
        self._flush_pending(halt_s)
        self._pending.extend(
            chunk_trajectory(plan.trajectory, self.config.chunking, replace_first=True)
        )
        self._publish_due(now)
        self._publish_state()
        self._ticks.resume()
        if plan.limited_by is not None:
            self.get_logger().warning(
                f'halt shortened to stop {plan.limited_by} at its limit '
                f'(deceleration up to {plan.deceleration_rad_s2.max():.1f} rad/s^2)'
            )
        return halt_s, plan.trajectory.end_s

    def _on_halt(self, _request, response):
        with self._lock:
            if self._latched:  # nothing moves: the hardware dropped its queue and holds
                response.accepted, response.reason = True, 'the hardware holds (latched)'
                return response
            halt_s, rest_s = self._halt(self._now_s())
            for goal in list(self._goals):
                if goal.cancelling:
                    self._resolve(goal, 'canceled', 'cancelled; halted by ~/halt')
            self._abort_moving_after(halt_s, 'halted by ~/halt')
        self.get_logger().info(f'halt: at rest at t={rest_s:.3f} s')
        response.accepted = True
        return response
