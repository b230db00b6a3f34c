"""The graph key: which messages come from Phil's own command path.

DDS has no notion of who sent a message: any process that joins the ROS domain may publish on
``/hardware/trajectory_chunks`` or call ``/hardware/request``. The nodes of one graph share a
secret, the graph key (environment variable ``PHIL_GRAPH_KEY``, made fresh by the launcher and
``robot.launch.py`` at every start), and sign what may move or un-latch the robot: trajectory
chunks, the planner's requests to the hardware, its action goals to the trajectory generator and
the score player (in the goal id), and the graph shutdown. A receiver drops what carries no
valid signature and says so.

A signature is a truncated HMAC-SHA256 of the message's bytes, so it never reveals the key and
does not fit another message. This keeps foreign nodes (a stray ``ros2 topic pub``, another
launch file, a tool on the same domain) from moving the robot past the state machine. It is not
network security: the graph binds to loopback only, and SROS2 is the way to authenticate and
encrypt a graph open to a network (README, "Network access and security").
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import time
from collections.abc import Mapping

GRAPH_KEY_ENV = 'PHIL_GRAPH_KEY'
MIN_KEY_CHARS = 16
SIGNATURE_BYTES = 16
GOAL_NONCE_BYTES = 8
GOAL_ID_BYTES = 16


class GraphKeyError(RuntimeError):
    """No usable graph key; the message says how to provide one."""


class GraphKey:
    """Signs and checks messages of one graph.

    Args:
        secret: The key text (at least ``MIN_KEY_CHARS`` characters).

    Raises:
        GraphKeyError: The key is too short.
    """

    def __init__(self, secret: str) -> None:
        if len(secret) < MIN_KEY_CHARS:
            raise GraphKeyError(
                f'{GRAPH_KEY_ENV} must have at least {MIN_KEY_CHARS} characters, got {len(secret)}'
            )
        self._secret = secret.encode()
        self._last_goal_ns = 0

    @staticmethod
    def generate() -> str:
        """A fresh random key text."""
        return secrets.token_hex(16)

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] = os.environ) -> GraphKey:
        """The key the graph's launcher set.

        Raises:
            GraphKeyError: ``PHIL_GRAPH_KEY`` is not set (or too short).
        """
        secret = environ.get(GRAPH_KEY_ENV, '')
        if not secret:
            raise GraphKeyError(
                f'{GRAPH_KEY_ENV} is not set: start the graph with `make run`, the launcher '
                '(python -m phil_bringup.launcher) or robot.launch.py, which make one; to run '
                f'nodes by hand, export the same {GRAPH_KEY_ENV} (e.g. `openssl rand -hex 16`) in '
                'every shell that starts a Phil node'
            )
        return cls(secret)

    @property
    def tag(self) -> str:
        """A short public name of this graph (derived from the secret, revealing nothing of
        it): what the graph's machine-local resources are named by."""
        return self.sign(b'phil graph tag')[:12]

    def sign(self, data: bytes) -> str:
        """The signature of ``data`` (hex)."""
        return hmac.new(self._secret, data, hashlib.sha256).digest()[:SIGNATURE_BYTES].hex()

    def verify(self, data: bytes, signature: str) -> bool:
        """True when ``signature`` is this key's signature of ``data``."""
        return hmac.compare_digest(self.sign(data), signature)

    def goal_id(self) -> bytes:
        """A 16-byte action goal id that says it was made with this key, and when: its nonce is
        the time it was made (CLOCK_REALTIME, ns; one process never makes two alike) and the
        rest its signature. Goals carry no other field a server could check without changing
        the public action types; a server drops a goal decided before a latch by that time."""
        made_ns = max(time.time_ns(), self._last_goal_ns + 1)
        self._last_goal_ns = made_ns
        nonce = made_ns.to_bytes(GOAL_NONCE_BYTES, 'big')
        return nonce + self._goal_tag(nonce)

    @staticmethod
    def goal_made_ns(goal_id: bytes) -> int:
        """When a goal id of :meth:`goal_id` was made (CLOCK_REALTIME, ns); check it with
        :meth:`owns_goal_id` first."""
        return int.from_bytes(bytes(goal_id)[:GOAL_NONCE_BYTES], 'big')

    def owns_goal_id(self, goal_id: bytes) -> bool:
        """True when ``goal_id`` came from :meth:`goal_id` with this key."""
        goal_id = bytes(goal_id)
        if len(goal_id) != GOAL_ID_BYTES:
            return False
        nonce = goal_id[:GOAL_NONCE_BYTES]
        return hmac.compare_digest(goal_id[GOAL_NONCE_BYTES:], self._goal_tag(nonce))

    def _goal_tag(self, nonce: bytes) -> bytes:
        digest = hmac.new(self._secret, b'goal:' + nonce, hashlib.sha256).digest()
        return digest[: GOAL_ID_BYTES - GOAL_NONCE_BYTES]


#: How far a signed request's stamp may be from the receiver's clock (both CLOCK_REALTIME on one
#: machine; the margin covers a busy machine's delivery delays).
REQUEST_STAMP_TOLERANCE_S = 5.0
_REMEMBERED_NONCES = 1024


class ReplayGuard:
    """Refuses a signed request whose stamp is far from now or whose nonce was seen before, so a
    request copied off the wire cannot be sent again."""

    def __init__(self, tolerance_s: float = REQUEST_STAMP_TOLERANCE_S) -> None:
        self._tolerance_ns = int(tolerance_s * 1e9)
        self._seen: dict[str, None] = {}

    def check(self, stamp_ns: int, nonce: str, now_ns: int) -> str:
        """'' when the request is fresh (and remember its nonce), else why it is refused."""
        if abs(now_ns - stamp_ns) > self._tolerance_ns:
            offset_s = (now_ns - stamp_ns) * 1e-9
            return (
                f'request stamp is {offset_s:+.1f} s off this clock (at most '
                f'{self._tolerance_ns * 1e-9:g} s)'
            )
        if not nonce or nonce in self._seen:
            return 'request nonce is empty or was used before (a replayed request)'
        self._seen[nonce] = None
        if len(self._seen) > _REMEMBERED_NONCES:
            del self._seen[next(iter(self._seen))]
        return ''
