"""A TCP client that behaves exactly like upstream's reference client and the brain: one write
per command, no acknowledgements (the default mode), no retries, and it reads nothing but the
GET_STATUS replies, with one ``recv`` each and a split on ``|``. Tests of what such clients
see must use this, never the project's retrying helpers."""

from __future__ import annotations

import math
import random
import socket
import time
from collections.abc import Callable, Sequence


class ReferenceClient:
    """One connection to the robot's TCP port; ``gaps_s``: the pause after each command, drawn
    from this range like a person (or the brain) typing."""

    def __init__(self, port: int, gaps_s: tuple[float, float] = (0.1, 0.5)) -> None:
        self._socket = socket.create_connection(('127.0.0.1', port), timeout=30.0)
        self._gaps_s = gaps_s
        self.states: list[str] = []  # every state GET_STATUS reported, changes only

    def send(self, line: str) -> None:
        """One command in one write; nothing is read back."""
        self._socket.sendall(line.encode() + b'\n')
        time.sleep(random.uniform(*self._gaps_s))

    def status(self) -> list[str]:
        """GET_STATUS: one write, one ``recv``, split on ``|``."""
        self._socket.sendall(b'GET_STATUS\n')
        fields = self._socket.recv(4096).decode().strip().split('|')
        if (
            fields[0] == 'STATUS'
            and len(fields) > 1
            and (not self.states or self.states[-1] != fields[1])
        ):
            self.states.append(fields[1])
        return fields

    def wait_status(self, condition: Callable[[list[str]], bool], timeout_s: float) -> list[str]:
        """Ask GET_STATUS every 0.2 s until ``condition(fields)`` holds or ``timeout_s`` passes;
        the last reply either way."""
        deadline = time.monotonic() + timeout_s
        fields = self.status()
        while not condition(fields) and time.monotonic() < deadline:
            time.sleep(0.2)
            fields = self.status()
        return fields

    def wait_state(self, state: str, timeout_s: float) -> list[str]:
        return self.wait_status(lambda fields: fields[1] == state, timeout_s)

    def close(self) -> None:
        self._socket.close()


def angles_deg(fields: Sequence[str], count: int) -> list[float]:
    """The joint angles of a GET_STATUS reply (degrees, joint order); NaN when absent."""
    values = fields[2 : 2 + count]
    if len(values) < count:
        return [math.nan] * count
    return [float(value) for value in values]
