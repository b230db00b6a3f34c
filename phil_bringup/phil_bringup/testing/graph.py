"""Run the whole Phil graph (launcher + device simulators) as real processes for a test, and
talk to it like the brain: TCP lines in acknowledged mode. Every run gets its own ROS domain,
multicast groups (ff11::, interface-local), PTY path and TCP port, so runs never collide."""

from __future__ import annotations

import math
import os
import random
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from phil_bringup.demo import BrainConnection
from phil_hardware.core.cpu_load import stat_fields

STARTUP_TIMEOUT_S = 90.0
# The launcher's lines naming processes that failed: "[phil] a, b did not exit within ...",
# "[phil] a exited with code 1", "[phil] a died ...", "[phil] a did not stop; killing it".
_TROUBLE_LINE = re.compile(
    r'\[phil\] ([\w, ]+?) (?:did not exit|exited with code|died|did not stop)'
)


def _like_a_background_job() -> None:
    """A shell starts background jobs with SIGINT ignored; the launcher must still stop on
    Ctrl-C then (CI runners start test suites that way)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def wait_until(condition, timeout_s: float, poll_s: float = 0.05) -> bool:
    """Poll ``condition`` until it holds (True) or ``timeout_s`` passes (its last value)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(poll_s)
    return bool(condition())


def last_bar(hits_path: Path) -> int:
    """The highest bar in a run's ``hits.csv`` so far (0 before the first hit is logged)."""
    from phil_bringup.plots import runlog

    try:
        hits = runlog.load_hits(hits_path)
    except (OSError, runlog.RunLogError):
        return 0
    return int(hits.bar.max()) if len(hits) else 0


def run_phil(*args: object, timeout_s: float = 120.0) -> subprocess.CompletedProcess:
    """The ``phil`` command with ``args`` (each made text), as a user runs it: its exit code,
    output and errors."""
    return subprocess.run(
        [sys.executable, '-m', 'phil_bringup.cli.main', *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )


def free_tcp_port() -> int:
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


class RunningGraph:
    """The launcher in a subprocess; `line()` sends one protocol line and returns the reply.
    As a context manager it starts the graph and always stops it."""

    def __init__(self, run_dir: Path, launcher_args: tuple[str, ...] = ()) -> None:
        self.run_dir = run_dir
        self.launcher_args = tuple(launcher_args)
        self.log_dir = run_dir / 'logs'
        suffix = random.randint(0x100, 0xFFF)
        self.channel_base = f'ff11::7068:{suffix:x}:0'
        self.channels = [f'ff11::7068:{suffix:x}:{index}' for index in range(4)]
        self.dxl_port = str(run_dir / 'ttyDXL')
        self.tcp_port = free_tcp_port()
        self.env = dict(
            os.environ, ROS_DOMAIN_ID=str(random.randint(1, 100)), PYTHONUNBUFFERED='1'
        )
        self.output: list[str] = []
        self.process: subprocess.Popen | None = None
        self.brain: BrainConnection | None = None
        self._views: list[BusLoopView] = []

    def bus_loop(self) -> BusLoopView:
        """A view of the hardware's bus loop (closed when the graph stops)."""
        view = BusLoopView(self.pid_of('hardware'))
        self._views.append(view)
        return view

    def __enter__(self) -> RunningGraph:
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()

    def start(self) -> RunningGraph:
        """Launch and wait until the robot answers GET_STATUS over TCP; a graph that does not
        come up is stopped (a caller that raises next must not leave processes behind)."""
        try:
            return self._start()
        except BaseException:
            self.stop()
            raise

    def _start(self) -> RunningGraph:
        self.launch()
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError('launcher exited during start-up:\n' + self.text())
            try:
                self._connect()
                if self.line('GET_STATUS').startswith('STATUS|STANDBY'):
                    return self
            except OSError:
                time.sleep(0.5)
        raise RuntimeError('the graph did not answer GET_STATUS in time:\n' + self.text())

    def launch(self) -> RunningGraph:
        """Start the launcher; returns at once."""
        self.process = subprocess.Popen(
            [
                sys.executable,
                '-m',
                'phil_bringup.launcher',
                '--log-dir',
                str(self.log_dir),
                '--tcp-port',
                str(self.tcp_port),
                '--sim-channel-base',
                self.channel_base,
                '--sim-dxl-port',
                self.dxl_port,
                # The page on any free port (a test passes its own): never a clash with a
                # graph running beside the tests.
                *(() if '--tower-port' in self.launcher_args else ('--tower-port', '0')),
                *self.launcher_args,
            ],
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
            preexec_fn=_like_a_background_job,
        )
        threading.Thread(target=self._collect, daemon=True).start()
        return self

    def wait_for_output(self, text: str, timeout_s: float) -> bool:
        """Wait until the launcher printed ``text``."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if any(text in line for line in self.output):
                return True
            time.sleep(0.05)
        return False

    def _collect(self) -> None:
        for text in self.process.stdout:
            self.output.append(text)

    def text(self) -> str:
        return ''.join(self.output[-200:])

    def story(self, lines: int = 30, also: tuple[str, ...] = ()) -> str:
        """`text` and the last ``lines`` of the logs of the command path and the simulated
        drives under it (and of the processes named in ``also``): what a failed assertion
        should show, since CI keeps no log folder. The logs of the processes the launcher
        named as failing (one that did not exit, died or exited with an error: its stacks or
        its traceback) come first and longer, where a shortened report still shows them."""
        text = self.text()
        troubled = tuple(
            dict.fromkeys(
                name for names in re.findall(_TROUBLE_LINE, text) for name in names.split(', ')
            )
        )
        shown = (
            'behavior_planner',
            'score_player',
            'trajectory_generator',
            'hardware',
            'device_simulator',
        )
        parts = [text]
        for name in dict.fromkeys(troubled + shown + also):
            path = self.log_dir / f'{name}.log'
            if path.is_file():
                count = 4 * lines if name in troubled else lines
                tail = path.read_text(errors='replace').splitlines()[-count:]
                parts.append(f'--- {name}.log\n' + '\n'.join(tail))
        return '\n'.join(parts)

    def _connect(self) -> None:
        if self.brain is None:
            self.brain = BrainConnection(self.tcp_port, timeout_s=0.0)

    def try_connect(self) -> bool:
        """Connect (acknowledged mode) unless connected; False while the port is closed."""
        try:
            self._connect()
        except OSError:
            return False
        return True

    def reconnect(self) -> None:
        """A new brain connection (the last one was closed or evicted)."""
        if self.brain is not None:
            self.brain.close()
        self.brain = None
        self._connect()

    def line(self, text: str) -> str:
        """Send one protocol line; the acknowledged-mode reply."""
        return self.brain.send(text)

    def start_robot(self) -> None:
        """START, then READY at once, as the brain sends them, both accepted (asserted; READY
        waits in the planner for START's first trajectory)."""
        assert self.line('START') == 'OK|START', self.text()
        assert self.line('READY') == 'OK|READY', self.text()

    def status(self) -> list[str]:
        return self.line('GET_STATUS').split('|')

    def wait_state(self, state: str, timeout_s: float) -> list[str]:
        reached = self.brain.wait_state({state}, timeout_s)
        assert reached == state, f'state {reached}, expected {state}\n{self.text()}'
        return self.status()

    def plays_then_quits(self, play_id: str, moved) -> None:
        """Assert: ``PLAY|play_id`` plays (PLAYING, ``moved()`` within 20 s), ``PLAY_CTRL|stop``
        ends it (IDLE), and after ``QUIT`` every process exits with 0."""
        assert self.line(f'PLAY|{play_id}') == 'OK|PLAY'
        assert self.brain.wait_state({'PLAYING'}, 10.0) == 'PLAYING', self.text()
        assert wait_until(moved, 20.0), self.text()
        assert self.line('PLAY_CTRL|stop') == 'OK|PLAY_CTRL'
        assert self.brain.wait_state({'IDLE'}, 30.0) == 'IDLE', self.text()
        assert self.line('QUIT') == 'OK|QUIT'
        assert self.wait_exit(90.0) == 0, self.story()

    def wait_exit(self, timeout_s: float) -> int:
        try:
            return self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise AssertionError('the graph did not exit:\n' + self.story()) from None

    def interrupt(self, timeout_s: float) -> int:
        """Ctrl-C the launcher like a person would; its exit code (output if it hangs)."""
        self.process.send_signal(signal.SIGINT)
        return self.wait_exit(timeout_s)

    def started_pids(self) -> list[int]:
        """The processes the launcher reported starting."""
        return [int(match) for match in re.findall(r'\(pid (\d+)\)', ''.join(self.output))]

    def pid_of(self, name: str) -> int:
        """The process id of node (or process) ``name``, as the launcher reported it."""
        found = re.search(rf' as {re.escape(name)} \(pid (\d+)\)', ''.join(self.output))
        if found is None:
            raise KeyError(f'the launcher reported no process {name!r}')
        return int(found.group(1))

    def stop(self) -> None:
        while self._views:
            self._views.pop().close()
        if self.brain is not None:
            self.brain.close()
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


class FrameCapture:
    """CAN frames on the graph's simulated buses: (time, id, data, extended), in arrival order.

    The time is the frame's receive time here (monotonic s), or with ``send_times`` the
    CLOCK_MONOTONIC send time the controller's and the simulator's frames carry: a wire time
    that does not depend on how soon this process gets to the frame. ``buses`` limits the
    capture to those bus indices (default all).
    """

    def __init__(
        self, channels: list[str], send_times: bool = False, buses: list[int] | None = None
    ) -> None:
        from phil_description.core import CanBusParams
        from phil_hardware.core.transport.can_bus import CanTransport, open_can_bus

        self.frames: list[tuple[float, int, bytes, bool]] = []
        self._send_times = send_times
        chosen = range(len(channels)) if buses is None else buses
        self._buses = [
            CanTransport(
                f'can{index}',
                open_can_bus(CanBusParams(f'can{index}', 'udp_multicast', channels[index], 10**6)),
            )
            for index in chosen
        ]
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._listen, args=(bus,), daemon=True) for bus in self._buses
        ]
        for thread in self._threads:
            thread.start()

    def _listen(self, transport) -> None:
        descriptor = transport.fileno()
        received: list = []
        sent_at: list[float] = []
        while not self._stop.is_set():
            if not select.select([descriptor], [], [], 0.1)[0]:
                continue
            received.clear()
            sent_at.clear()
            transport.drain(received, 256, sent_at)
            now = time.monotonic()
            for frame, sent_s in zip(received, sent_at, strict=True):
                stamp = sent_s if self._send_times and math.isfinite(sent_s) else now
                self.frames.append((stamp, frame.arbitration_id, frame.data, frame.is_extended_id))

    def close(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=2.0)
        for bus in self._buses:
            bus.close()


def niceness_of(pid: int) -> int:
    """A live process's niceness (Linux /proc)."""
    return int(stat_fields(pid)[16])


class BusLoopView:
    """The hardware's bus loop as its shared block shows it, read from outside the graph (no
    node in between: it works while every node is dead or stopped). The block is the one the
    hardware node with ``hardware_pid`` made (``phil_bus_loop_<pid>_...``)."""

    def __init__(self, hardware_pid: int) -> None:
        from phil_description.core import default_robot_model
        from phil_hardware.core.bus_controller import controller_config_from_model
        from phil_hardware.rt import BusLoopConfig
        from phil_hardware.rt.process import snapshot_layout

        config = BusLoopConfig(controller_config_from_model(default_robot_model(sim=True)))
        self._layout = snapshot_layout(config)
        self._names = config.controller.joint_names
        self._prefix = f'phil_bus_loop_{hardware_pid}_'
        self._exchange = None

    def _attach(self):
        from multiprocessing import resource_tracker

        from phil_hardware.rt.shm import StateExchange

        names = [name for name in os.listdir('/dev/shm') if name.startswith(self._prefix)]
        if not names:
            return None
        exchange = StateExchange(self._layout, names[0], create=False)
        # Attaching registered the block with this process's resource tracker, which would
        # remove it (a live graph's block) when this process ends.
        resource_tracker.unregister(exchange.shm._name, 'shared_memory')
        return exchange

    def snapshot(self):
        """The loop's latest :class:`BusSnapshot` (None before it published one)."""
        from phil_hardware.rt.snapshot import decode_snapshot

        if self._exchange is None:
            self._exchange = self._attach()
        copied = self._exchange.read() if self._exchange is not None else None
        return None if copied is None else decode_snapshot(self._layout, self._names, *copied)

    def wait(self, predicate, timeout_s: float):
        """The first snapshot meeting ``predicate`` (polled every 1 ms); None after timeout."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            snapshot = self.snapshot()
            if snapshot is not None and predicate(snapshot):
                return snapshot
            time.sleep(0.001)
        return None

    def close(self) -> None:
        if self._exchange is not None:  # attached, not created: the block stays
            self._exchange.close()
            self._exchange = None
