"""Where the score player learns that the motion stopped before its goal ended: a chunk the
trajectory generator refused, the hardware's latch (ESTOP or a fault, stamped), a node of the
motion path gone silent. Only what reached the motors counts: the goal ends with the reason and
no hit after the stop is reported.

Two refusals of a goal's first chunk do not end it; nothing of that start moved the robot (the
trajectory generator refuses every chunk that continues a refused one), so the goal starts
again, and the log and the goal's result say why:

* LATE: the chunk reached the trajectory generator after its start (the machine was too busy
  to deliver it within the session's margin). The goal starts later by as much.
* DISCONTINUOUS, when a newer commanded state came after the one the start was planned from:
  while nothing is commanded it follows the measured pose, which moves while the joints settle
  on the hardware's hold (just after a RESET). The goal starts again from the newest state.

A goal starts again at most ``MAX_STARTS_AGAIN`` times."""

from __future__ import annotations

from phil_control.conversions import last_reset_ns, latch_barrier_ns
from phil_control.core.motion import RejectReason
from phil_control.score_player import conversions as convert
from phil_description.core.graph_key import GraphKey
from phil_description.core.liveness import NodeDown
from phil_msgs.action import Hit, Play
from phil_msgs.msg import ChunkRejection, HardwareStatus

# The nodes a play's motion goes through after this one: down, nothing more is played.
_MOTION_NODES = ('/trajectory_generator', '/hardware')
MAX_STARTS_AGAIN = 3


class MotionStops:
    """The motion-stop side of the `ScorePlayer` node (a mixin: it uses the node's lock,
    session, goal slot, audio and hit reporting)."""

    def _on_rejected(self, msg: ChunkRejection) -> None:
        """The trajectory generator refused one of our chunks: nothing after it joins what
        the robot does, so the goal ends here (the robot holds where the accepted motion
        ends) instead of playing on unheard; or, for a first chunk that came too late or no
        longer joined the commanded state, the goal starts again."""
        with self._lock:
            goal = self._goal
            if goal is None or msg.sequence < goal.first_sequence:
                return  # a chunk of a start that was started again
            why = self._why_start_again(goal, msg)
            if why:
                self._start_again(goal, why)
                return
            self._goal = None
            reason = (
                f'the trajectory generator refused chunk {msg.sequence}: {msg.reason}; the '
                'robot holds where the accepted motion ends'
            )
            self.get_logger().error(f'{goal.kind} aborted: {reason}')
            self.audio.stop()
            self.session.discard()
            result_type = Play.Result if goal.kind == 'play' else Hit.Result
            goal.finish('abort', result_type(success=False, reason=reason))

    def _why_start_again(self, goal, msg: ChunkRejection) -> str:
        """Why ``goal`` starts again after the refusal ``msg`` ('' when it ends; lock held)."""
        if msg.sequence != goal.first_sequence or goal.starts_again >= MAX_STARTS_AGAIN:
            return ''
        if msg.code == RejectReason.LATE.name:
            return (
                'its first chunk reached the trajectory generator after its start (a busy machine)'
            )
        if msg.code == RejectReason.DISCONTINUOUS.name and self._state is not goal.from_state:
            return (
                'the commanded state moved on after the one its first start was planned from '
                '(the joints settling on the hold)'
            )
        return ''

    def _start_again(self, goal, why: str) -> None:
        """Start ``goal`` again from the newest commanded state, as much later as its first
        start is past already (lock held)."""
        late_s = max(0.0, self._now_s() - goal.start_s)
        goal.starts_again += 1
        self.session.discard()
        chunks = self._begin(goal.begin, delay_s=late_s)
        self._go(goal, chunks)
        goal.note = f'started again{f" {late_s:.3f} s late" if late_s else ""}: {why}'
        self.get_logger().warning(f'{goal.kind} {goal.note}')

    def _on_hardware(self, msg: HardwareStatus) -> None:
        """The hardware latched: nothing after the latch was played. A latch can also come and
        go between two statuses that reach us (they keep depth 1; ESTOP and at once RESET):
        the count of granted RESETs says so, and nothing after the status before it was played.
        That holds for a goal made before the RESET; one made after it (the status came late)
        was not dropped and plays on. A goal made before a latch this status shows or counts
        is refused from now on."""
        with self._lock:
            before, self._hardware_seen = self._hardware_seen, msg
            self._latch_barrier_ns = max(self._latch_barrier_ns, latch_barrier_ns(msg))
            goal = self._goal
            if (
                goal is not None
                and before is not None
                and msg.resets_granted > before.resets_granted
                and GraphKey.goal_made_ns(goal.handle.goal_id.uuid) < last_reset_ns(msg)
            ):
                self._motion_stopped(
                    self._timebase.from_stamp(before.header.stamp),
                    'the hardware latched and a RESET cleared it',
                )
        if not (msg.estop or msg.faults):
            return
        stamps = [
            self._timebase.from_stamp(fault.stamp)
            for fault in msg.faults
            if fault.stamp.sec or fault.stamp.nanosec
        ]
        reason = msg.faults[0].reason if msg.faults else 'emergency stop'
        with self._lock:
            self._motion_stopped(
                min(stamps, default=self._now_s()), f'the hardware latched: {reason}'
            )

    def _on_node_down(self, down: NodeDown) -> None:
        """A node the motion goes through stopped: nothing after its last heartbeat counts."""
        if down.node not in _MOTION_NODES:
            return
        with self._lock:
            self._motion_stopped(self._now_s() - down.silent_s, down.reason)

    def _motion_stopped(self, stop_s: float, reason: str) -> None:
        """End the running goal at ``stop_s`` (session time): report the hits up to it, none
        after; a play keeps a resume point (lock held)."""
        goal, self._goal = self._goal, None
        if goal is None:
            return
        self._report(goal, self.session.due_hits(stop_s))
        result_type = Play.Result if goal.kind == 'play' else Hit.Result
        result = (
            convert.play_result(goal.hits, self.session.wall_time_at)
            if goal.kind == 'play'
            else result_type()
        )
        point = self.session.halted(stop_s)
        if point is not None:
            result.resume_valid, result.resume_bar = True, point.bar
        self.audio.stop()
        result.success, result.reason = False, reason
        goal.finish('abort', result)
        self.get_logger().error(f'{goal.kind} ended: {reason}; {len(goal.hits)} hits played')
