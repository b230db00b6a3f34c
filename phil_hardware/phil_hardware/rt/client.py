"""Node-side handle of the bus-loop process.

Blocking behaviour (what an rclpy callback may call):

* :meth:`BusLoopClient.start` blocks until the child is ready (typically 1-3 s: interpreter
  start and imports; at most ``start_timeout_s``). Call it from ``on_configure``/start-up, not
  from a timer.
* :meth:`BusLoopClient.stop` blocks until the child exited (at most ``timeout_s``).
* Every other call returns at once (< 1 ms): commands are written without waiting (see
  :mod:`.command_wire`) and return a :class:`concurrent.futures.Future` resolving to a
  :class:`CommandResult`; use ``add_done_callback``, never ``result()`` inside a callback.
  Lifecycle futures resolve after the sequence (configure ~0.5-2 s, activate ~0.5-1 s); chunks
  within a tick or two.
* :meth:`BusLoopClient.snapshot` copies the shared block (~0.1 ms) and never waits for the loop.
* :meth:`BusLoopClient.estop` also adds to the ESTOP word the loop checks every tick, so the
  ESTOP acts within ~1 ms even while a lifecycle command runs.
* :meth:`BusLoopClient.beat` counts the node's heartbeat in the shared block; while the drives
  are active, a node silent for ``node_timeout_s`` makes the loop latch a fault and hold.
"""

from __future__ import annotations

import contextlib
import itertools
import multiprocessing
import os
import pickle
import queue
import secrets
import threading
from concurrent.futures import Future
from dataclasses import dataclass, replace
from typing import Any

from phil_description.core.estop_word import EstopWord
from phil_description.core.trajectory import Chunk
from phil_hardware.core.safety import Fault, FaultCode

from . import process
from .command_wire import CommandWire
from .config import BusLoopConfig
from .shm import StateExchange
from .snapshot import BusSnapshot, decode_snapshot

SEND_QUEUE_SIZE = 256
SPAWN_SETTLE_TIMEOUT_S = 5.0  # a spawn takes tens of ms


class BusLoopError(RuntimeError):
    """The bus-loop process is not running (or could not start); the message says why."""


@dataclass(frozen=True)
class CommandResult:
    """Outcome of one command.

    Attributes:
        ok: The command succeeded (a chunk was queued, a reset cleared everything, ...).
        detail: Human-readable outcome or the reason for a failure.
        value: Command-specific value (queued chunks, remaining reset reasons, missing joints).
    """

    ok: bool
    detail: str
    value: Any = None


class BusLoopClient:
    """Starts, commands and reads the bus-loop process. Thread-safe."""

    def __init__(self, config: BusLoopConfig) -> None:
        """Prepare (nothing starts until :meth:`start`)."""
        self.config = config
        self.joint_names = config.controller.joint_names
        self._layout = process.snapshot_layout(config)
        self._exchange: StateExchange | None = None
        self._process: multiprocessing.process.BaseProcess | None = None
        self._conn = None
        self._ids = itertools.count(1)
        self._pending: dict[int, Future] = {}
        self._lock = threading.Lock()
        self._wire: CommandWire | None = None
        self._threads: list[threading.Thread] = []
        self._last: BusSnapshot | None = None
        self._dead_reason = ''
        self._estop_word: EstopWord | None = None
        self.realtime_report: dict = {}

    # -- process ---------------------------------------------------------------------------

    def start(self) -> BusLoopClient:
        """Spawn the process and wait until it is ready. Blocks up to ``start_timeout_s``.

        Raises:
            BusLoopError: The child did not come up (its exit code is in the message).
        """
        if self._process is not None:
            return self
        context = multiprocessing.get_context('spawn')
        child = None
        try:
            if self.config.estop_word:
                self._estop_word = EstopWord.attach(self.config.estop_word)
            else:  # nobody else needs to reach this loop's ESTOP: a word of its own
                self._estop_word = EstopWord.create(
                    f'phil_estop_private_{os.getpid()}_{secrets.token_hex(4)}'
                )
                self.config = replace(self.config, estop_word=self._estop_word.path.name)
            self._exchange = StateExchange(self._layout)
            self._conn, child = context.Pipe(duplex=True)
            self._process = context.Process(
                target=process.run,
                name='phil-bus-loop',
                args=(self.config, child, self._exchange.name),
                daemon=True,
            )
            report = self._spawn_and_wait_ready(child)
        except BaseException:
            # Ctrl-C (or a failed start), wherever it lands, must not leave a half-started
            # child behind, nor a shared-memory block with live views that cannot be closed.
            if child is not None:
                child.close()
            self._abort_start()
            raise
        self.realtime_report = report
        self._wire = CommandWire(self._conn.fileno(), self._fail, SEND_QUEUE_SIZE)
        thread = threading.Thread(
            target=self._receive_loop, name='phil-bus-loop-receiver', daemon=True
        )
        thread.start()
        self._threads.append(thread)
        return self

    def _spawn_and_wait_ready(self, child) -> dict:
        self._spawn(child)
        parent = self._conn
        if not parent.poll(self.config.start_timeout_s):
            raise BusLoopError(
                f'bus loop did not start within {self.config.start_timeout_s} s '
                f'(exit code {self._process.exitcode})'
            )
        try:
            tag, report = parent.recv()
        except (EOFError, OSError) as error:
            self._process.join(2.0)
            raise BusLoopError(
                f'bus loop exited during start-up (exit code {self._process.exitcode})'
            ) from error
        if tag != 'ready':
            raise BusLoopError(f'unexpected start-up message {tag!r}')
        return report

    def _spawn(self, child) -> None:
        # The spawn runs in a helper thread: a KeyboardInterrupt (raised only in the main
        # thread) then cannot cut it between starting the child and handing it its arguments,
        # which would leave a child we cannot name and that dies with a traceback.
        failures: list[BaseException] = []
        done = threading.Event()

        def spawn() -> None:
            try:
                self._process.start()
            except Exception as error:  # reported to the caller below
                failures.append(error)
            finally:
                done.set()

        try:
            threading.Thread(target=spawn, name='phil-bus-loop-spawn').start()
            done.wait()
        except BaseException:
            # Let a spawn in flight finish so its child can be stopped, then pass it on. (If
            # the interrupt came before the thread existed, nothing was spawned: wait bounded.)
            done.wait(SPAWN_SETTLE_TIMEOUT_S)
            raise
        finally:
            child.close()
        if failures:
            raise BusLoopError(f'bus loop process could not be spawned: {failures[0]}')

    def _abort_start(self) -> None:
        if (
            self._process is not None
            and self._process.pid is not None
            and self._process.is_alive()
        ):
            self._process.kill()
            self._process.join(2.0)
        if self._conn is not None:
            self._conn.close()
        if self._exchange is not None:
            self._exchange.close()
            self._exchange = None
        self._close_estop_word()

    def _close_estop_word(self) -> None:
        if self._estop_word is not None:
            self._estop_word.close()
            self._estop_word = None

    @property
    def alive(self) -> bool:
        """True while the child process runs."""
        return self._process is not None and self._process.is_alive()

    @property
    def exitcode(self) -> int | None:
        """The child's exit code once it ended."""
        return None if self._process is None else self._process.exitcode

    @property
    def pid(self) -> int | None:
        """The child's process id."""
        return None if self._process is None else self._process.pid

    def stop(self, timeout_s: float = 10.0) -> int | None:
        """Orderly shutdown (deactivate, close buses) and wait for the exit. Blocks up to
        ``timeout_s``; kills the child if it does not exit in time.

        Interrupted (a second Ctrl-C), it still closes the pipe, which makes the loop leave the
        motors safe and exit on its own, and the shared block; then the interrupt goes on.

        Returns:
            The child's exit code (0 after an orderly shutdown).
        """
        if self._process is None:
            return None
        try:
            if self._process.is_alive():
                done = self._command('shutdown')
                # The join below decides; a failed or late reply changes nothing here.
                with contextlib.suppress(Exception):
                    done.result(timeout_s)
                self._process.join(timeout_s)
                if self._process.is_alive():
                    self._process.kill()
                    self._process.join(2.0)
        finally:
            if self._wire is not None:
                self._wire.close()
            for thread in self._threads:
                thread.join(2.0)
            if self._conn is not None:
                self._conn.close()
            if self._exchange is not None:
                self._exchange.close()
                self._exchange = None
            self._close_estop_word()
        return self._process.exitcode

    # -- commands (non-blocking) -----------------------------------------------------------

    def configure(self, zero_origins: bool = True) -> Future:
        """Open buses, discover motors, configure drives (no torque); with ``zero_origins``
        the TMotor origins are set at the (pinned) pose the robot is in."""
        return self._command('configure', zero_origins)

    def activate(self) -> Future:
        """Enable drives and servos, hold the current pose."""
        return self._command('activate')

    def deactivate(self) -> Future:
        """Stop cyclic sending, Maxon shutdown, servo torque off."""
        return self._command('deactivate')

    def send_chunk(self, chunk: Chunk) -> Future:
        """Queue a trajectory chunk; the result says whether the loop accepted it."""
        return self._command('chunk', chunk)

    def halt(self) -> Future:
        """Drop queued motion, hold the current target."""
        return self._command('halt')

    def estop(self, reason: str = 'emergency stop requested') -> Future:
        """Latch ESTOP now (the ESTOP word) and confirm through the pipe with ``reason``."""
        if self._estop_word is not None:
            self._estop_word.trigger()
        return self._command('estop', reason)

    def fault(self, reason: str) -> Future:
        """Latch a PROCESS_DIED fault named by ``reason`` (a node of the graph failed)."""
        return self._command('fault', reason)

    def beat(self) -> None:
        """Count one heartbeat of the node (never waits)."""
        exchange = self._exchange
        if exchange is not None:
            exchange.beat()

    def reset(self) -> Future:
        """Clear faults whose cause is gone; ``value`` lists the reasons of those that stay.
        An ESTOP asked after this call (through the ESTOP word) stays latched."""
        word = self._estop_word
        return self._command('reset', word.count() if word is not None else None)

    def _command(self, name: str, payload: object = None) -> Future:
        future: Future = Future()
        if not self.alive:
            future.set_exception(BusLoopError(self._dead_text()))
            return future
        request_id = next(self._ids)
        with self._lock:
            self._pending[request_id] = future
        try:
            self._wire.send(request_id, (request_id, name, payload))
        except queue.Full:
            self._fail(request_id, 'command queue full; the bus loop is not keeping up')
        except (OSError, ValueError, pickle.PicklingError) as error:
            self._fail(request_id, f'send to the bus loop failed: {error}')
        return future

    # -- state -----------------------------------------------------------------------------

    def snapshot(self) -> BusSnapshot | None:
        """The latest state (None before the first publish). After the child died, the last
        state with a PROCESS_DIED fault added."""
        exchange = self._exchange
        if exchange is not None:
            copied = exchange.read()
            if copied is not None:
                self._last = decode_snapshot(self._layout, self.joint_names, *copied)
        last = self._last
        if last is not None and self._process is not None and not self._process.is_alive():
            died = Fault(FaultCode.PROCESS_DIED, '', self._dead_text(), last.time_s)
            if died not in last.faults:
                last = replace(last, faults=(*last.faults, died))
        return last

    def trace(self) -> list[float]:
        """Per-tick lateness samples [s] kept in shared memory (benchmarks), oldest first."""
        exchange = self._exchange
        if exchange is None or not len(exchange.trace):
            return []
        snapshot = self.snapshot()
        count = snapshot.trace_count if snapshot else 0
        capacity = len(exchange.trace)
        samples = exchange.trace.copy()
        if count <= capacity:
            return samples[:count].tolist()
        start = count % capacity
        return [*samples[start:], *samples[:start]]

    # -- threads ---------------------------------------------------------------------------

    def _dead_text(self) -> str:
        if self._process is None:
            return 'bus loop not started'
        return self._dead_reason or f'bus loop process exited (code {self._process.exitcode})'

    def _receive_loop(self) -> None:
        while True:
            try:
                request_id, ok, detail, value = self._conn.recv()
            except (EOFError, OSError, TypeError, ValueError):
                break
            with self._lock:
                future = self._pending.pop(request_id, None)
            if future is not None and not future.done():
                future.set_result(CommandResult(bool(ok), str(detail), value))
        with self._lock:
            pending, self._pending = self._pending, {}
        if self._process is not None:
            self._process.join(1.0)
        for future in pending.values():
            if not future.done():
                future.set_exception(BusLoopError(self._dead_text()))

    def _fail(self, request_id: int, text: str) -> None:
        with self._lock:
            future = self._pending.pop(request_id, None)
        if future is not None and not future.done():
            future.set_exception(BusLoopError(text))
