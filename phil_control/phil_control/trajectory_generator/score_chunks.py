"""The score player's chunks on ``~/chunks``: checked (the graph key's signature, the
hardware's latch, continuity with the queued motion), forwarded to the hardware and queued; a
refused one is named on ``~/rejected_chunks`` so the score player can start again (a first
chunk that came too late, or that no longer joins the commanded state) or end its play. A
chunk that continues a refused one (it starts where that one ends and replaces nothing) is
refused too: it could pass the continuity check only by chance (e.g. a motion that starts at
rest), and would play a part of a start that the score player is about to send again."""

from __future__ import annotations

import math

from phil_control.conversions import msg_to_chunk
from phil_control.core.motion import Rejection, RejectReason
from phil_msgs.msg import ChunkRejection, TrajectoryChunk
from phil_ros.graph_safety import signed_by


class ScoreChunks:
    """The ``~/chunks`` side of the `TrajectoryGenerator` node (a mixin: it uses the node's
    lock, planner, chunk queue and publishers)."""

    def _on_chunk(self, msg: TrajectoryChunk) -> None:
        if not signed_by(self._key, msg):
            self.get_logger().error(
                f'chunk {msg.sequence} on ~/chunks refused: not signed with the graph key '
                "(only the score player's chunks are forwarded)",
                throttle_duration_sec=2.0,
            )
            return
        chunk = msg_to_chunk(msg, self._timebase)
        with self._lock:
            problem = self._problem(chunk)
            self._refused_end_s = math.nan
            if problem is None:
                # Keep the hardware's arrival order = time order: queued chunks go out first.
                self._flush_pending(chunk.start_s if chunk.replace else math.inf)
                if chunk.replace:
                    self._abort_moving_after(chunk.start_s, 'replaced by a chunk on ~/chunks')
                self._chunk_pub.publish(msg)
                self._note_sent(chunk)
                self._publish_state()
            elif not isinstance(chunk, Rejection):
                self._refused_end_s = chunk.start_s + float(chunk.times_from_start_s[-1])
        if problem is not None:
            self.get_logger().warning(f'chunk {msg.sequence} from ~/chunks rejected: {problem}')
            self._rejected_pub.publish(
                ChunkRejection(
                    start=msg.trajectory.header.stamp,
                    sequence=msg.sequence,
                    code=problem.reason.name,
                    reason=str(problem),
                )
            )

    def _problem(self, chunk) -> Rejection | None:
        """Why ``chunk`` (or the Rejection of its message) cannot be taken (None: it can; lock
        held). Taken, it joins the planner's commanded motion."""
        if isinstance(chunk, Rejection):
            return chunk
        if not chunk.replace and abs(chunk.start_s - self._refused_end_s) <= 1e-6:
            return Rejection(RejectReason.DISCONTINUOUS, 'it continues a refused chunk')
        if self._latched:
            # A score chunk still in flight when the latch came: taken, it would make the
            # commanded state end where that motion ends, and the next motion after RESET
            # would start there instead of at the measured pose.
            return Rejection(RejectReason.HARDWARE_LATCHED, self._latched)
        result = self._planner.accept_chunk(chunk, self._now_s())
        return result if isinstance(result, Rejection) else None
