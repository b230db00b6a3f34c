"""Run Phil's node set as separate processes, without a ROS launch install.

Starts every process of :data:`phil_bringup.core.node_set.NODE_SET` (the declaration
robot.launch.py uses too) with its parameter file: against the simulated robot by default
(device simulators on IPv6 interface-local multicast CAN and a PTY), or ``--real``. Prints where
to connect, forwards Ctrl-C to every process and waits for a clean exit. QUIT ends the ROS
nodes; the launcher then stops the simulators and exits 0. If a process dies on its own, it
says which; the hardware keeps holding the last target (or, if the hardware node died, its
bus loop disables the drives).

DDS stays on loopback unless ``--network`` (see :mod:`phil_bringup.core.dds_scope`).

``--composed`` runs the command path's nodes in one process (``process`` in the node set).

Usage: ``python -m phil_bringup.launcher [--real] [--log-dir DIR] [--tcp-port N] [--demo ID]
[--network] [--composed]``
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import math
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from phil_bringup.child_setup import prepare_child
from phil_bringup.core.dds_scope import LOOPBACK_PROFILE, PROFILE_VARIABLES, DdsScope, dds_scope
from phil_bringup.core.node_set import NodeSpec, nodes_for, processes_for
from phil_bringup.launch_options import node_overrides, parse_arguments
from phil_bringup.process_commands import composed_command, config_path, node_command
from phil_description.core.capped_log import CappedTextLog
from phil_description.core.exit_status import CONFIG_ERROR_EXIT, STACK_DUMP_SIGNAL
from phil_description.core.graph_key import GRAPH_KEY_ENV, GraphKey
from phil_description.core.parent_process import PARENT_PID_ENV

STOP_TIMEOUT_S = 15.0
SIGINT_REPEAT_S = 5.0  # longer than any node needs to shut down cleanly
QUIT_TIMEOUT_S = 60.0  # QUIT drives to the shutdown pose first
# Once a node has ended on the graph shutdown, the others have this long to follow.
QUIT_EXIT_GRACE_S = 10.0
# A node asked for its stacks has this long to write them to its log before it is stopped.
STACK_DUMP_WAIT_S = 1.0
SIMULATOR_READY_TIMEOUT_S = 30.0
SIMULATOR_READY_LINE = 'device simulator ready'
OUTPUT_TAIL_LINES = 100  # a Python traceback of an interrupted import fits


@dataclass
class Running:
    spec: NodeSpec
    process: subprocess.Popen
    ready: threading.Event = field(default_factory=threading.Event)
    # The end of its output: how it ended (a KeyboardInterrupt report after Ctrl-C).
    tail: deque = field(default_factory=lambda: deque(maxlen=OUTPUT_TAIL_LINES))
    pump: threading.Thread | None = None


class Launcher:
    """Start, watch and stop the processes."""

    def __init__(
        self,
        specs: list[NodeSpec],
        sim: bool,
        log_dir: Path | None,
        overrides: dict[str, dict[str, str]] | None = None,
    ) -> None:
        self._specs = specs
        self._sim = sim
        self._log_dir = log_dir
        self._overrides = overrides or {}
        self._running: list[Running] = []
        self._stopping = False
        self._scratch: tempfile.TemporaryDirectory | None = None

    def start(self) -> None:
        if self._log_dir is not None:
            self._log_dir.mkdir(parents=True, exist_ok=True)
        for spec in self._specs:
            command = self._command(spec)
            process = subprocess.Popen(
                command,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                bufsize=1,
                start_new_session=True,
                preexec_fn=functools.partial(prepare_child, spec.niceness, spec.rt_priority),
            )
            running = Running(spec, process)
            # Rotated to <node>.log.1 past 20 MB: a chatty node cannot fill the disk.
            log = CappedTextLog(self._log_dir / f'{spec.name}.log') if self._log_dir else None
            running.pump = threading.Thread(target=self._pump, args=(running, log), daemon=True)
            running.pump.start()
            self._running.append(running)
            print(
                f'[phil] started {spec.package}/{spec.executable} as {spec.name} '
                f'(pid {process.pid})',
                flush=True,
            )
            if not spec.ros_node and not running.ready.wait(SIMULATOR_READY_TIMEOUT_S):
                raise RuntimeError(
                    f'{spec.name} did not report ready within {SIMULATOR_READY_TIMEOUT_S:.0f} s'
                )

    def _command(self, spec: NodeSpec) -> list[str]:
        if not spec.members:
            return node_command(spec, self._sim, self._log_dir, self._overrides.get(spec.name))
        # Beside the logs it is a record of the run; without them, a folder removed when the
        # launcher exits.
        if self._log_dir is None and self._scratch is None:
            self._scratch = tempfile.TemporaryDirectory(prefix='phil-launch-')
        parameters_dir = self._log_dir or Path(self._scratch.name)
        return composed_command(spec, self._sim, self._log_dir, self._overrides, parameters_dir)

    @staticmethod
    def _pump(running: Running, log: CappedTextLog | None) -> None:
        """Copy a process's output to its log (or the console), watching for readiness."""
        prefix = f'[{running.spec.name}] '
        for line in running.process.stdout:
            if line.strip():
                running.tail.append(line.strip())
            if SIMULATOR_READY_LINE in line or running.spec.ros_node:
                running.ready.set()
            if log is not None:
                log.write(line)
                log.flush()
            else:
                sys.stdout.write(prefix + line)
                sys.stdout.flush()
        if log is not None:
            log.close()

    def ros_nodes_finished(self) -> bool:
        """Every ROS node exited with 0 (the graph was QUIT)."""
        nodes = [r for r in self._running if r.spec.ros_node]
        return bool(nodes) and all(r.process.poll() == 0 for r in nodes)

    def _died_before_quit(self) -> list[str]:
        """Once every ROS node has exited: those that did not exit with 0 (died on their own,
        e.g. killed), as 'name (exit code N)'; [] while any still runs or all exited with 0."""
        nodes = [r for r in self._running if r.spec.ros_node]
        if not nodes or any(r.process.poll() is None for r in nodes):
            return []
        return [
            f'{r.spec.name} (exit code {r.process.poll()})' for r in nodes if r.process.poll() != 0
        ]

    def watch(self, timeout_s: float | None = None) -> int:
        """Block until Ctrl-C, QUIT (all ROS nodes done), a process dying or ``timeout_s``;
        return a status."""
        reported: set[str] = set()
        deadline = math.inf if timeout_s is None else time.monotonic() + timeout_s
        first_exit_s = None  # when the first node ended on the graph shutdown
        while not self._stopping:
            if time.monotonic() > deadline:
                print(
                    f'[phil] the nodes did not exit within {timeout_s:.0f} s after QUIT',
                    file=sys.stderr,
                    flush=True,
                )
                self._dump_stacks([r for r in self._running if r.spec.ros_node])
                return 1
            refused = next(
                (r for r in self._running if r.process.poll() == CONFIG_ERROR_EXIT), None
            )
            if refused is not None:
                self._report_refused_configuration(refused)
                return CONFIG_ERROR_EXIT
            if self.ros_nodes_finished():
                print('[phil] every node exited after QUIT', flush=True)
                return 0
            died = self._died_before_quit()
            if died:
                print(
                    f'[phil] every node has exited; {", ".join(died)} had died before',
                    file=sys.stderr,
                    flush=True,
                )
                return 1
            nodes = [r for r in self._running if r.spec.ros_node]
            if first_exit_s is None and any(r.process.poll() == 0 for r in nodes):
                first_exit_s = time.monotonic()
            elif first_exit_s is not None and time.monotonic() - first_exit_s > QUIT_EXIT_GRACE_S:
                lingering = [r for r in nodes if r.process.poll() is None]
                print(
                    f'[phil] {", ".join(r.spec.name for r in lingering)} did not exit within '
                    f'{QUIT_EXIT_GRACE_S:g} s of the graph shutdown; its stacks are in its log; '
                    f'stopping it',
                    file=sys.stderr,
                    flush=True,
                )
                self._dump_stacks(lingering)
                return 1
            for running in self._running:
                code = running.process.poll()
                if code not in (None, 0) and running.spec.name not in reported:
                    reported.add(running.spec.name)
                    print(
                        f'[phil] {running.spec.name} died (exit code {code}); the robot holds '
                        f'its last target. Ctrl-C stops everything.',
                        file=sys.stderr,
                        flush=True,
                    )
            if reported and all(r.process.poll() is not None for r in self._running):
                return 1
            time.sleep(0.2)
        return 0

    @staticmethod
    def _dump_stacks(nodes: list[Running]) -> None:
        """Have each of ``nodes`` still running print its threads' stacks to its log (every
        node registers ``STACK_DUMP_SIGNAL``; ``node_runner``): where it hung."""
        alive = [r for r in nodes if r.process.poll() is None]
        for running in alive:
            with contextlib.suppress(ProcessLookupError):
                running.process.send_signal(STACK_DUMP_SIGNAL)
        if alive:
            time.sleep(STACK_DUMP_WAIT_S)  # its output pump copies the dump to the log

    def _report_refused_configuration(self, running: Running) -> None:
        """A node refused its configuration while it was built: say which, with its parameter
        file and its one line; the caller stops the graph (before any torque)."""
        if running.pump is not None:
            running.pump.join(1.0)  # its last line
        line = running.tail[-1] if running.tail else 'see its log'
        spec, in_process = running.spec, ''
        # A composed process names the node that refused it: 'tcp_bridge: configuration ...'.
        for member in running.spec.members:
            if line.startswith(f'{member.name}: '):
                spec, line = member, line.removeprefix(f'{member.name}: ')
                in_process = f' in {running.spec.name}'
        parameter_file = spec.parameter_file_for(self._sim)
        where = (
            f" (parameters: {config_path(parameter_file)} and the launcher's overrides)"
            if parameter_file
            else ''
        )
        print(
            f'[phil] {spec.name}{where}{in_process}: {line}; stopping the graph',
            file=sys.stderr,
            flush=True,
        )

    def stop(self) -> int:
        """SIGINT every process (reverse start order), repeated every few seconds (a process
        still importing can lose the first one), then SIGKILL after a timeout."""
        self._stopping = True
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while True:
            alive = [r for r in reversed(self._running) if r.process.poll() is None]
            for running in alive:
                running.process.send_signal(signal.SIGINT)
            pause_until = min(deadline, time.monotonic() + SIGINT_REPEAT_S)
            while time.monotonic() < pause_until and any(r.process.poll() is None for r in alive):
                time.sleep(0.05)
            if not alive or time.monotonic() >= deadline:
                break
        worst = 0
        for running in self._running:
            try:
                code = running.process.wait(timeout=0.1)
            except subprocess.TimeoutExpired:
                print(f'[phil] {running.spec.name} did not stop; killing it', file=sys.stderr)
                os.killpg(running.process.pid, signal.SIGKILL)
                code = running.process.wait()
            # Ctrl-C while the interpreter or an import is still starting ends the process with
            # code 1 and a report that names KeyboardInterrupt (as the last line, in an
            # "Exception ignored in" report, or as the cause of an ImportError): stopped, not
            # failed.
            if running.pump is not None:
                running.pump.join(1.0)  # its last lines
            interrupted = any(
                line.partition(':')[0] == 'KeyboardInterrupt' for line in running.tail
            )
            if code not in (0, -signal.SIGINT) and not interrupted:
                print(
                    f'[phil] {running.spec.name} exited with code {code}',
                    file=sys.stderr,
                    flush=True,
                )
                worst = 1  # a signal's negative code would become 256 - N as our own status
        return worst


def _terminate(*_: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = parse_arguments(argv)
    sim = not args.real
    try:
        options = ('gen1',) if args.gen1 else ()
        nodes = {spec.name for spec in nodes_for(sim, options) if spec.ros_node}
        overrides = node_overrides(args, nodes)
    except ValueError as error:
        print(f'[phil] {error}', file=sys.stderr)
        return 2
    # The nodes of this graph share one key, fresh for every start (or the one the user set to
    # run further nodes by hand): it tells the graph's own messages from foreign ones.
    os.environ.setdefault(GRAPH_KEY_ENV, GraphKey.generate())
    # A node that lost the SIGINT of our death while it was starting still sees we are gone.
    os.environ[PARENT_PID_ENV] = str(os.getpid())
    dds = _scope_dds(args.network)
    if dds is None:
        return 1
    if args.bringup_can and _bring_up_can() != 0:
        print('[phil] the CAN interfaces are not ready (above); not starting', file=sys.stderr)
        return 1
    launcher = Launcher(processes_for(sim, args.composed, options), sim, args.log_dir, overrides)
    print(
        f'[phil] robot: {"simulated" if sim else "REAL"}; ROS_DOMAIN_ID='
        f'{os.environ.get("ROS_DOMAIN_ID", "0")}; brain TCP {args.tcp_address}:'
        f'{args.tcp_port}; {dds.summary}; logs: {args.log_dir or "console"}',
        flush=True,
    )
    if dds.warning:
        print(f'[phil] {dds.warning}', file=sys.stderr, flush=True)
    signal.signal(signal.SIGTERM, _terminate)
    # A shell starting us in the background leaves SIGINT ignored, which would make Ctrl-C
    # forwarding (and the nodes' own SIGINT) dead: always take it.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    status = _run(launcher, args)
    stopped = launcher.stop()
    status = status or stopped  # why the graph ended first (a refused configuration: 78)
    print('[phil] stopped', flush=True)
    return status


def _bring_up_can() -> int:
    """``phil bringup-can`` before the graph starts (``--bringup-can``)."""
    from phil_bringup.cli import bringup_can

    print('[phil] bringing the CAN interfaces up (phil bringup-can)', flush=True)
    return bringup_can.bringup_can(bringup_can.default_arguments())


def _scope_dds(network: bool) -> DdsScope | None:
    """Give every process the DDS transports (loopback only unless ``network``); None, said,
    when a profile file the environment names is not there."""
    dds = dds_scope(os.environ, str(config_path(LOOPBACK_PROFILE)), network)
    dds.apply(os.environ)
    missing = [
        f'{name}={os.environ[name]}'
        for name in PROFILE_VARIABLES
        if os.environ.get(name) and not Path(os.environ[name]).is_file()
    ]
    if missing:
        # Fast DDS would ignore it and fall back to its built-in transports: every interface.
        print(
            f'[phil] DDS profile file not found: {", ".join(missing)} (the loopback one: run '
            f'tools/setup.sh); not starting a graph that could be reachable from the network',
            file=sys.stderr,
        )
        return None
    return dds


def _run(launcher: Launcher, args: argparse.Namespace) -> int:
    """Start the graph and watch it (or play the demo) until it ends or Ctrl-C; the status."""
    status = 0
    try:
        launcher.start()
        print(
            f'[phil] ready: `phil status`, `phil send "START"` or connect to TCP '
            f'{args.tcp_port}{f" (Gen-1 brain: {args.gen1_port})" if args.gen1 else ""}; '
            + (
                f'the control tower: http://{args.tcp_address}:{args.tower_port}/ ; '
                if args.tower_port
                else 'the control tower: on the port its log names; '
            )
            + 'Ctrl-C stops everything',
            flush=True,
        )
        if args.demo:
            from phil_bringup.demo import run_demo

            status = run_demo(args.demo, args.tcp_port, args.log_dir)
            status = launcher.watch(timeout_s=QUIT_TIMEOUT_S) or status
        else:
            status = launcher.watch()
    except KeyboardInterrupt:
        pass
    except (RuntimeError, OSError) as error:  # a process that never got ready; demo's TCP
        print(f'[phil] {error}', file=sys.stderr)
        status = 1
    return status


if __name__ == '__main__':
    sys.exit(main())
