"""The score player's timer: it generates the due windows, reports the hits whose instant is
``HIT_CONFIRM_S`` past, sends feedback and ends the goal (its result) once DRUM END is done."""

from __future__ import annotations

import time

from phil_control.core.play import ScheduledHit
from phil_control.score_player import conversions as convert
from phil_control.score_player.goals import Goal
from phil_msgs.action import Hit

# A hit is reported once it is this far in the past: by then a latch, or a node of the motion
# path that died or was stopped, would be known (a check every 0.1 s, the status at once).
HIT_CONFIRM_S = 0.5


class PlayTicks:
    """The timer side of the `ScorePlayer` node (a mixin: it uses the node's lock, session,
    goal slot, ticks, audio, hit publisher and hit log)."""

    def _on_tick(self) -> None:
        """`_tick`; an exception ends the running goal with the reason, not the node."""
        try:
            self._tick()
        except Exception as error:  # no input may take the node down
            with self._lock:
                kind = self._goal.kind if self._goal is not None else 'goal'
                self.get_logger().error(f'{kind} aborted: {self._end_on_error(error)}')

    def _tick(self) -> None:
        with self._lock:
            goal = self._goal
            if goal is None:
                self._ticks.pause()  # resumed by the next play or HIT
                return
            now = self._now_s()
            if goal.handle.is_cancel_requested and not goal.cancelling:
                goal.cancelling = True
                self._end_early(goal, self.session.stop(now), 'cancelled')
            self._publish(self.session.poll(now))
            aborted = self.session.aborted
            if aborted is not None and not goal.abort_logged:
                goal.abort_logged = True
                self.audio.stop()
                self.get_logger().error(f'{aborted}; going to ready')
            self._report(goal, self.session.due_hits(now - HIT_CONFIRM_S))
            finished = self.session.finished(now)
            # The last feedback always goes out, so a client's progress ends where the play did
            # even when the timer was starved between bars.
            if finished or now >= goal.next_feedback_s:
                goal.next_feedback_s = now + self.config.feedback_period_s
                goal.handle.publish_feedback(
                    convert.play_feedback(self.session.progress(now))
                    if goal.kind == 'play'
                    else convert.hit_feedback(now, goal.start_s, self.session.end_time_s)
                )
            if finished:
                self._finish(goal)

    def _finish(self, goal: Goal) -> None:
        """Store the goal's outcome and release its execute callback (lock held)."""
        self._report(goal, self.session.due_hits(self._now_s()))  # DRUM END is done
        aborted = self.session.aborted
        reason = str(aborted) if aborted is not None else goal.ending
        kind = 'canceled' if goal.cancelling else 'abort' if reason else 'succeed'
        if goal.kind == 'play':
            result = convert.play_result(goal.hits, self.session.wall_time_at)
            point = self.session.resume_point
            if goal.paused and point is not None:
                result.resume_valid, result.resume_bar = True, point.bar
        else:
            result = Hit.Result(impact_time=self._timebase.stamp(goal.impact_s))
        result.success, result.reason = kind == 'succeed', reason or goal.note
        self._goal = None
        goal.finish(kind, result)
        self.get_logger().info(f'{goal.kind} ended: {reason or "done"}, {len(goal.hits)} hits')

    def _end_early(self, goal: Goal, chunks, reason: str, paused: bool = False) -> None:
        self._publish(chunks)
        self.audio.stop()
        goal.ending, goal.paused = reason, paused

    def _report(self, goal: Goal, due: list[ScheduledHit]) -> None:
        """Publish and log hits whose instant has passed (lock held)."""
        if not due:
            return
        goal.hits.extend(due)
        for hit in due:
            self._hit_pub.publish(convert.hit_event_msg(hit, self._timebase))
        if self._hit_log is not None:
            now_ns = self._clock_ns()
            self._hit_log.write(now_ns, due, self._timebase, time.monotonic_ns() - now_ns)
