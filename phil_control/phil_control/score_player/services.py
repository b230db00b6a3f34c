"""The score player's services ``~/pause``, ``~/stop`` (Trigger) and ``~/speed`` (SetSpeed):
they answer at once (accepted, reason, state / speed in effect), the motion follows."""

from __future__ import annotations

from phil_control.core.score import SpeedError, normalize_speed
from phil_control.score_player.goals import Goal
from phil_msgs.msg import RobotStatus
from phil_msgs.srv import SetSpeed, Trigger


class PlayServices:
    """The services of the `ScorePlayer` node (a mixin: it uses the node's lock, session and
    goal slot)."""

    def _create_services(self, group) -> None:
        self.create_service(Trigger, '~/pause', self._on_pause, callback_group=group)
        self.create_service(Trigger, '~/stop', self._on_stop, callback_group=group)
        self.create_service(SetSpeed, '~/speed', self._on_speed, callback_group=group)

    def _playing(self, response) -> Goal | None:
        """The play goal whose DRUM END is not queued yet (lock held); else None, and the
        refusal written into ``response``."""
        goal = self._goal
        if goal is None or goal.kind != 'play' or self.session.end_time_s is not None:
            response.accepted, response.reason = False, 'no score is playing (or it is ending)'
            return None
        response.accepted = True
        return goal

    def _state_name(self) -> str:
        return RobotStatus.STATE_PLAYING if self._goal is not None else RobotStatus.STATE_IDLE

    def _on_pause(self, _request, response):
        with self._lock:
            goal = self._playing(response)
            if goal is not None and goal.paused:
                response.accepted, response.reason = False, f'already {goal.ending}'
            elif goal is not None:
                point, chunks = self.session.pause(self._now_s())
                if point is None:
                    self._publish(chunks)
                    response.reason = 'no bar start left to pause at; the score plays to its end'
                else:
                    self._end_early(goal, chunks, f'paused; resume from bar {point.bar}', True)
            response.state = self._state_name()
        return response

    def _on_stop(self, _request, response):
        with self._lock:
            goal = self._playing(response)
            if goal is not None:  # a stop clears the resume point
                self._end_early(goal, self.session.stop(self._now_s()), 'stopped by ~/stop')
            response.state = self._state_name()
        return response

    def _on_speed(self, request, response):
        with self._lock:
            goal = self._playing(response)
            try:
                speed = normalize_speed(request.speed, clamp=False)
            except SpeedError as error:
                response.accepted, response.reason = False, str(error)
            else:
                if goal is not None:
                    self._publish(self.session.set_speed(speed, self._now_s()))
            response.speed = self.session.speed if goal is not None else 1.0
        return response
