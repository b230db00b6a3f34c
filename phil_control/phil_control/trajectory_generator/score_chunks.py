"""The score player's chunks on ``~/chunks``: checked (the graph key's signature, the
hardware's latch, continuity with the queued motion), forwarded to the hardware and queued; a
refused one is named on ``~/rejected_chunks`` so the score player can end its play."""

from __future__ import annotations

import math

from std_msgs.msg import String

from phil_control.conversions import msg_to_chunk
from phil_control.core.motion import Rejection, RejectReason
from phil_msgs.msg import TrajectoryChunk
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
            if self._latched:
                # A score chunk still in flight when the latch came: taken, it would make the
                # commanded state end where that motion ends, and the next motion after RESET
                # would start there instead of at the measured pose.
                chunk = Rejection(RejectReason.HARDWARE_LATCHED, self._latched)
            elif not isinstance(chunk, Rejection):
                result = self._planner.accept_chunk(chunk, self._now_s())
                chunk = result if isinstance(result, Rejection) else chunk
            if isinstance(chunk, Rejection):
                problem = chunk
            else:
                problem = None
                # Keep the hardware's arrival order = time order: queued chunks go out first.
                self._flush_pending(chunk.start_s if chunk.replace else math.inf)
                if chunk.replace:
                    self._abort_moving_after(chunk.start_s, 'replaced by a chunk on ~/chunks')
                self._chunk_pub.publish(msg)
                self._publish_state()
        if problem is not None:
            self.get_logger().warning(f'chunk {msg.sequence} from ~/chunks rejected: {problem}')
            self._rejected_pub.publish(String(data=f'chunk {msg.sequence}: {problem}'))
