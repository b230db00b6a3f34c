"""Which nodes of the graph are alive (pure; the caller passes the time and the process probe).

Every node sends a heartbeat ten times a second with its process id. A watcher on the same
machine (the same boot and pid namespace, ``process_space()``) looks at that process itself
on every check: one that exited or is stopped (SIGSTOP) is down at once. That is exact, and a
busy machine cannot fake it: on the 2-core development VM, healthy nodes' heartbeats came up to
1.1 s apart while a song played (a process of the command path holding the interpreter lock
was preempted by the others at the same real-time priority), so a short silence proves nothing.
Silence counts after ``timeout_s``: a node that runs but no longer sends (a hung executor), or
one on another machine.

A watched node counts from its first heartbeat on, or from the start when it is listed in
``required`` (a node the graph cannot do without, silent since start-up). Silence counts only
while the watcher hears the graph: when no other node's heartbeat has arrived for half the
timeout either, it is the watcher's own reception that stalls, not every node dying at once;
such a silence counts only once it is ``BACKSTOP_FACTOR`` times the timeout.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass

#: Heartbeat silence after which a running node counts as hung (a dead or stopped one is seen
#: at once). Healthy nodes' heartbeats came up to 1.1 s apart on the busy 2-core VM.
DEFAULT_LIVENESS_TIMEOUT_S = 3.0
#: A silence while the watcher hears nobody counts after this many timeouts.
BACKSTOP_FACTOR = 3.0
RUNNING, STOPPED, GONE = 'running', 'stopped', 'gone'


def process_space() -> str:
    """Where a pid means the same process: this boot of this machine and this pid namespace."""
    try:
        with open('/proc/sys/kernel/random/boot_id') as boot:
            boot_id = boot.read().strip()
        namespace = os.stat('/proc/self/ns/pid').st_ino
    except OSError:  # no /proc (not Linux): pids are never compared
        return ''
    return f'{boot_id}/{namespace}'


def process_state(pid: int) -> str:
    """``RUNNING``, ``STOPPED`` (SIGSTOP, a debugger) or ``GONE`` (exited, a zombie too)."""
    try:
        with open(f'/proc/{pid}/stat', 'rb') as stat:
            data = stat.read()
    except OSError:
        return GONE
    state = data[data.rindex(b')') + 2 :][:1]
    if state in (b'T', b't'):
        return STOPPED
    if state in (b'Z', b'X', b'x'):
        return GONE
    return RUNNING


@dataclass(frozen=True)
class NodeDown:
    """A watched node that is dead, stopped or silent.

    Attributes:
        node: Its fully qualified name.
        silent_s: How long it has been silent [s].
        last_seen_s: Clock time of its last heartbeat (-inf: never seen) [s].
        process: ``GONE`` or ``STOPPED`` when its process was seen so, else ''.
        pid: Its process id (0: unknown).
    """

    node: str
    silent_s: float
    last_seen_s: float
    process: str = ''
    pid: int = 0

    @property
    def reason(self) -> str:
        """A sentence for a fault, a log line or a reply."""
        name = self.node.lstrip('/')
        if self.process == GONE:
            return f'{name} died (its process {self.pid} is gone)'
        if self.process == STOPPED:
            return f'{name} is stopped (its process {self.pid} does not run)'
        if not math.isfinite(self.last_seen_s):
            return f'{name} is not running (no heartbeat since start-up)'
        return (
            f'{name} stopped responding (no heartbeat for {self.silent_s:.2f} s: it hangs '
            'or cannot be reached)'
        )


def node_name(name: str) -> str:
    """The fully qualified form of a node name ('score_player' -> '/score_player')."""
    return name if name.startswith('/') else f'/{name}'


class LivenessMonitor:
    """Heartbeat bookkeeping for a set of nodes. Not thread-safe: call it under one lock.

    Args:
        watched: Nodes whose life matters (names with or without the leading '/').
        timeout_s: Silence after which a node is down [s].
        now_s: Clock time of the start; a ``required`` node is down ``timeout_s`` after it.
        required: Watched nodes that must appear at all (the others are watched from their
            first heartbeat on).
        own: The watcher's own name: its own heartbeats do not show that it hears the graph.
        space: The watcher's ``process_space()``: heartbeats from there have their process
            looked at ('' = never).
        probe: ``process_state`` (tests give their own).
    """

    def __init__(
        self,
        watched: Iterable[str],
        timeout_s: float,
        now_s: float,
        required: Iterable[str] = (),
        own: str = '',
        space: str = '',
        probe: Callable[[int], str] = process_state,
    ) -> None:
        if not (math.isfinite(timeout_s) and timeout_s > 0.0):
            raise ValueError(f'liveness timeout_s must be positive, got {timeout_s!r}')
        self.timeout_s = timeout_s
        self._watched = {node_name(name) for name in watched}
        self._required = {node_name(name) for name in required} & self._watched
        self._start_s = now_s
        self._own = node_name(own) if own else ''
        self._space = space
        self._probe = probe
        self._heard_s = now_s  # the last heartbeat of any other node
        self._last_s: dict[str, float] = {}
        self._pids: dict[str, int] = {}  # watched nodes whose process can be looked at
        self._states: dict[str, str] = {}  # their process states at the last check
        self._down: set[str] = set()

    @property
    def watched(self) -> frozenset[str]:
        """The watched nodes."""
        return frozenset(self._watched)

    def beat(self, node: str, now_s: float, pid: int = 0, space: str = '') -> bool:
        """Record a heartbeat; True when ``node`` was down and is back."""
        node = node_name(node)
        self._last_s[node] = now_s
        if node != self._own:
            self._heard_s = max(self._heard_s, now_s)
        if node in self._watched and pid and space and space == self._space:
            self._pids[node] = pid
        if node in self._down and self._probe_process(node) in ('', RUNNING):
            self._down.discard(node)
            return True
        return False

    def check(self, now_s: float) -> list[NodeDown]:
        """Look at the processes again; the watched nodes that went down since the last
        check."""
        for node in self._pids:
            self._probe_process(node)
        newly = [down for down in self.down(now_s) if down.node not in self._down]
        self._down.update(down.node for down in newly)
        return newly

    def down(self, now_s: float) -> list[NodeDown]:
        """Every watched node that is down now (processes as the last check saw them)."""
        deaf = now_s - self._heard_s > 0.5 * self.timeout_s
        limit_s = self.timeout_s * (BACKSTOP_FACTOR if deaf else 1.0)
        found = []
        for node in sorted(self._watched):
            last = self._last_s.get(node)
            silent_s = now_s - (self._start_s if last is None else last)
            seen = -math.inf if last is None else last
            process = self._states.get(node, '')
            if process in (GONE, STOPPED):
                found.append(NodeDown(node, silent_s, seen, process, self._pids[node]))
            elif (last is not None or node in self._required) and silent_s > limit_s:
                found.append(NodeDown(node, silent_s, seen))
        return found

    def alive(self, node: str, now_s: float) -> bool:
        """True unless the watched ``node`` is down (an unwatched node counts as alive)."""
        node = node_name(node)
        return all(down.node != node for down in self.down(now_s))

    def last_seen_s(self, node: str) -> float:
        """Clock time of the node's last heartbeat (-inf: never)."""
        return self._last_s.get(node_name(node), -math.inf)

    def _probe_process(self, node: str) -> str:
        pid = self._pids.get(node)
        state = '' if pid is None else self._probe(pid)
        self._states[node] = state
        return state
