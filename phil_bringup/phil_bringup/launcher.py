"""Run Phil's node set as separate processes, without a ROS launch install.

Starts every process of :data:`phil_bringup.core.node_set.NODE_SET` (the declaration
robot.launch.py uses too) with its parameter file: against the simulated robot by default
(device simulators on IPv6 interface-local multicast CAN and a PTY), or ``--real``. Prints where
to connect, forwards Ctrl-C to every process and waits for a clean exit. QUIT ends the ROS
nodes; the launcher then stops the simulators and exits 0. If a process dies on its own, it
says which; the hardware keeps holding the last target (or, if the hardware node died, its
bus loop disables the drives).

Usage: ``python -m phil_bringup.launcher [--real] [--log-dir DIR] [--tcp-port N] [--demo ID]``
"""

from __future__ import annotations

import argparse
import ctypes
import functools
import math
import os
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from phil_bringup.core.node_set import NodeSpec, nodes_for

STOP_TIMEOUT_S = 15.0
SIGINT_REPEAT_S = 5.0  # longer than any node needs to shut down cleanly
QUIT_TIMEOUT_S = 60.0  # QUIT drives to the shutdown pose first
# Once a node has ended on the graph shutdown, the others have this long to follow.
QUIT_EXIT_GRACE_S = 30.0
SIMULATOR_READY_TIMEOUT_S = 30.0
SIMULATOR_READY_LINE = 'device simulator ready'
OUTPUT_TAIL_LINES = 100  # a Python traceback of an interrupted import fits
_PR_SET_PDEATHSIG = 1
try:  # resolved before any fork: the child only makes the call
    _prctl = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):  # not Linux: the launcher's own stop() still applies
    _prctl = None


def _prepare_child(niceness: int, rt_priority: int) -> None:
    """In a child before exec: get SIGINT (a clean stop) if the launcher dies, even by
    SIGKILL, so no node or simulator outlives it holding the buses; then take the niceness and
    the SCHED_RR priority (refused: say so on the child's output and run time-sharing at the
    niceness, or at the normal priority)."""
    if _prctl is not None:
        _prctl(_PR_SET_PDEATHSIG, int(signal.SIGINT))
    if niceness:
        try:
            os.setpriority(os.PRIO_PROCESS, 0, niceness)
        except OSError as error:
            os.write(2, f'phil: niceness {niceness} refused ({error.strerror}); running at '
                        'normal priority\n'.encode())
    if rt_priority:
        try:
            os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(rt_priority))
        except OSError as error:
            os.write(2, f'phil: SCHED_RR priority {rt_priority} refused ({error.strerror}); '
                        f'running time-sharing\n'.encode())


def package_prefix(package: str) -> Path:
    """Install prefix of a ROS package, via the ament index."""
    from ament_index_python.packages import get_package_prefix

    return Path(get_package_prefix(package))


def config_path(file_name: str) -> Path:
    from ament_index_python.packages import get_package_share_directory

    return Path(get_package_share_directory('phil_bringup')) / 'config' / file_name


def node_command(spec: NodeSpec, sim: bool, log_dir: Path | None = None,
                 overrides: dict[str, str] | None = None) -> list[str]:
    """The command line ``ros2 run`` would build for ``spec``; for a plain process the
    ``overrides`` are its ``--option value`` pairs."""
    executable = package_prefix(spec.package) / 'lib' / spec.package / spec.executable
    command = [str(executable), *spec.arguments]
    if not spec.ros_node:
        if spec.executable == 'device_simulator' and log_dir is not None:
            # Detected impacts go to the run folder (the plots and benchmarks read them).
            command += ['--impacts-jsonl', str(log_dir / 'impacts.jsonl')]
        for option, value in (overrides or {}).items():
            command += [f'--{option}', value]
        return command
    command += ['--ros-args', '-r', f'__node:={spec.name}']
    parameter_file = spec.parameter_file_for(sim)
    if parameter_file:
        command += ['--params-file', str(config_path(parameter_file))]
    parameters = {'sim': 'true' if sim else 'false', **(overrides or {})}
    if log_dir is not None:
        parameters['log_dir'] = str(log_dir)
    for name, value in parameters.items():
        command += ['-p', f'{name}:={value}']
    return command


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

    def __init__(self, specs: list[NodeSpec], sim: bool, log_dir: Path | None,
                 overrides: dict[str, dict[str, str]] | None = None) -> None:
        self._specs = specs
        self._sim = sim
        self._log_dir = log_dir
        self._overrides = overrides or {}
        self._running: list[Running] = []
        self._stopping = False

    def start(self) -> None:
        if self._log_dir is not None:
            self._log_dir.mkdir(parents=True, exist_ok=True)
        for spec in self._specs:
            command = node_command(spec, self._sim, self._log_dir, self._overrides.get(spec.name))
            process = subprocess.Popen(command, stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT, text=True, bufsize=1,
                                       start_new_session=True,
                                       preexec_fn=functools.partial(_prepare_child,
                                                                    spec.niceness,
                                                                    spec.rt_priority))
            running = Running(spec, process)
            log = (self._log_dir / f'{spec.name}.log').open('w') if self._log_dir else None
            running.pump = threading.Thread(target=self._pump, args=(running, log), daemon=True)
            running.pump.start()
            self._running.append(running)
            print(f'[phil] started {spec.package}/{spec.executable} as {spec.name} '
                  f'(pid {process.pid})', flush=True)
            if not spec.ros_node and not running.ready.wait(SIMULATOR_READY_TIMEOUT_S):
                raise RuntimeError(f'{spec.name} did not report ready within '
                                   f'{SIMULATOR_READY_TIMEOUT_S:.0f} s')

    @staticmethod
    def _pump(running: Running, log: IO[str] | None) -> None:
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

    def watch(self, timeout_s: float | None = None) -> int:
        """Block until Ctrl-C, QUIT (all ROS nodes done), a process dying or ``timeout_s``;
        return a status."""
        reported: set[str] = set()
        deadline = math.inf if timeout_s is None else time.monotonic() + timeout_s
        first_exit_s = None  # when the first node ended on the graph shutdown
        while not self._stopping:
            if time.monotonic() > deadline:
                print(f'[phil] the nodes did not exit within {timeout_s:.0f} s after QUIT',
                      file=sys.stderr, flush=True)
                return 1
            if self.ros_nodes_finished():
                print('[phil] every node exited after QUIT', flush=True)
                return 0
            nodes = [r for r in self._running if r.spec.ros_node]
            if first_exit_s is None and any(r.process.poll() == 0 for r in nodes):
                first_exit_s = time.monotonic()
            elif first_exit_s is not None and \
                    time.monotonic() - first_exit_s > QUIT_EXIT_GRACE_S:
                lingering = ', '.join(r.spec.name for r in nodes if r.process.poll() is None)
                print(f'[phil] {lingering} did not exit within {QUIT_EXIT_GRACE_S:g} s of the '
                      f'graph shutdown; stopping it', file=sys.stderr, flush=True)
                return 1
            for running in self._running:
                code = running.process.poll()
                if code not in (None, 0) and running.spec.name not in reported:
                    reported.add(running.spec.name)
                    print(f'[phil] {running.spec.name} died (exit code {code}); the robot holds '
                          f'its last target. Ctrl-C stops everything.', file=sys.stderr,
                          flush=True)
            if reported and all(r.process.poll() is not None for r in self._running):
                return 1
            time.sleep(0.2)
        return 0

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
            while time.monotonic() < pause_until and any(r.process.poll() is None
                                                          for r in alive):
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
            interrupted = any(line.partition(':')[0] == 'KeyboardInterrupt'
                              for line in running.tail)
            if code not in (0, -signal.SIGINT) and not interrupted:
                print(f'[phil] {running.spec.name} exited with code {code}', file=sys.stderr,
                      flush=True)
                worst = worst or code
        return worst


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--real', action='store_true',
                        help='drive the real robot (can0..3, /dev/ttyUSB0) instead of the '
                             'simulators')
    parser.add_argument('--log-dir', type=Path, default=None,
                        help='run folder for process output and CSV logs')
    parser.add_argument('--tcp-port', type=int, default=1951, help='TCP port for the brain')
    parser.add_argument('--tcp-address', default='127.0.0.1', help='TCP address to bind')
    parser.add_argument('--sim-channel-base', metavar='GROUP', default='',
                        help='simulated CAN buses on GROUP+0..3 (ff11:: only) instead of the '
                             "URDF's, so several graphs can run on one machine")
    parser.add_argument('--sim-dxl-port', metavar='PATH', default='',
                        help='PTY link of the simulated Dynamixel bus instead of the URDF path')
    parser.add_argument('--demo', metavar='SCORE', default=None,
                        help='play SCORE end to end (START, READY, PLAY, QUIT), then exit')
    return parser.parse_args(argv)


def _terminate(*_: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = parse_arguments(argv)
    sim = not args.real
    overrides = {'tcp_bridge': {'port': str(args.tcp_port), 'address': args.tcp_address},
                 'hardware': {}, 'device_simulator': {}}
    if args.sim_channel_base:
        overrides['hardware']['can_channel_base'] = args.sim_channel_base
        overrides['device_simulator']['can-channel-base'] = args.sim_channel_base
    if args.sim_dxl_port:
        overrides['hardware']['dxl_port'] = args.sim_dxl_port
        overrides['device_simulator']['dxl-port'] = args.sim_dxl_port
    launcher = Launcher(nodes_for(sim), sim, args.log_dir, overrides)
    print(f'[phil] robot: {"simulated" if sim else "REAL"}; ROS_DOMAIN_ID='
          f'{os.environ.get("ROS_DOMAIN_ID", "0")}; brain TCP {args.tcp_address}:'
          f'{args.tcp_port}; logs: {args.log_dir or "console"}', flush=True)
    signal.signal(signal.SIGTERM, _terminate)
    # A shell starting us in the background leaves SIGINT ignored, which would make Ctrl-C
    # forwarding (and the nodes' own SIGINT) dead: always take it.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    status = 0
    try:
        launcher.start()
        print(f'[phil] ready: `phil status`, `phil send "START"` or connect to TCP '
              f'{args.tcp_port}; Ctrl-C stops everything', flush=True)
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
    status = launcher.stop() or status
    print('[phil] stopped', flush=True)
    return status


if __name__ == '__main__':
    sys.exit(main())
