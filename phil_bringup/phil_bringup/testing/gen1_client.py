"""A client of the Gen-1 port that behaves as the Gen-1 brain is described to (FACTS 9.2):
connect to 127.0.0.1:<port> with a 5 s connect timeout, retrying every 3 s; a reader thread
splits the stream on newlines, ``json.loads`` each line and merges it into one state (an angle
changes only by more than 0.2 deg, angles are not taken while the robot plays); every command
is one write of its text and a newline, never retried, never answered. Motion is refused
unless the lock key is out, the robot is fixed and it neither plays nor is in error."""

from __future__ import annotations

import json
import socket
import threading
import time

CONNECT_TIMEOUT_S = 5.0
RETRY_S = 3.0
ANGLE_DEADBAND_DEG = 0.2
PLAY, ERROR = 2, 6
MOTION = ('move:', 'gesture:', 'look:', 'p:', 'r', 'h')


class Gen1Brain:
    """The brain's side of one session."""

    def __init__(self, port: int, host: str = '127.0.0.1') -> None:
        self.address = (host, port)
        self.state: dict = {'current_angles': {}}
        self.lines = 0
        self.bad_lines: list[str] = []
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None

    def connect(self, give_up_s: float) -> None:
        """Connect as the brain does (5 s timeout, again every 3 s), at most ``give_up_s``."""
        deadline = time.monotonic() + give_up_s
        while True:
            try:
                self._sock = socket.create_connection(self.address, timeout=CONNECT_TIMEOUT_S)
                break
            except OSError:
                if time.monotonic() + RETRY_S > deadline:
                    raise
                time.sleep(RETRY_S)
        self._sock.settimeout(None)
        threading.Thread(target=self._read, daemon=True).start()

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()

    def _read(self) -> None:
        buffer = b''
        while True:
            try:
                data = self._sock.recv(4096)
            except OSError:
                return
            if not data:
                return
            buffer += data
            *lines, buffer = buffer.split(b'\n')
            for line in lines:
                try:
                    update = json.loads(line)
                except ValueError:
                    self.bad_lines.append(line.decode(errors='replace'))
                    continue
                self._merge(update)

    def _merge(self, update: dict) -> None:
        with self._lock:
            self.lines += 1
            angles = update.pop('current_angles', {})
            self.state.update(update)
            if update.get('state') == PLAY:
                return
            known = self.state['current_angles']
            for joint, value in angles.items():
                if abs(value - known.get(joint, float('inf'))) > ANGLE_DEADBAND_DEG:
                    known[joint] = value

    def snapshot(self) -> dict:
        with self._lock:
            return json.loads(json.dumps(self.state))

    def motion_allowed(self) -> bool:
        state = self.snapshot()
        return (
            bool(state.get('is_lock_key_removed'))
            and bool(state.get('is_fixed'))
            and state.get('state') not in (PLAY, ERROR)
        )

    def send(self, command: str) -> bool:
        """Send ``command`` as the brain's executor does; False when it refused to (motion
        while motion is not allowed). ``r`` is sent before the robot is fixed: it fixes it."""
        if command.startswith(MOTION) and command != 'r' and not self.motion_allowed():
            return False
        self._sock.sendall(command.encode() + b'\n')
        return True

    def wait(self, condition, timeout_s: float, poll_s: float = 0.05) -> dict:
        """Wait until ``condition(state)`` holds; the state (AssertionError with it if not)."""
        deadline = time.monotonic() + timeout_s
        while True:
            state = self.snapshot()
            if condition(state):
                return state
            if time.monotonic() > deadline:
                raise AssertionError(f'Gen-1 state never matched: {state}')
            time.sleep(poll_s)
