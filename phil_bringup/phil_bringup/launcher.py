"""Run Phil's node set as separate processes without a ROS launch install.

Starts every node of :data:`phil_bringup.core.node_set.NODE_SET` (the same declaration
robot.launch.py uses) with its parameter file, prints where to connect, forwards Ctrl-C to
all of them and waits for a clean exit. If a required process dies, it names it and stops
the rest.

Usage: ``python -m phil_bringup.launcher [--real] [--log-dir DIR]``
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from phil_bringup.core.node_set import NodeSpec, nodes_for

STOP_TIMEOUT_S = 10.0


def package_prefix(package: str) -> Path:
    """Install prefix of a ROS package, via the ament index."""
    from ament_index_python.packages import get_package_prefix

    return Path(get_package_prefix(package))


def config_path(file_name: str) -> Path:
    from ament_index_python.packages import get_package_share_directory

    return Path(get_package_share_directory('phil_bringup')) / 'config' / file_name


def node_command(spec: NodeSpec, sim: bool) -> list[str]:
    """The command line ``ros2 run`` would build for ``spec``."""
    executable = package_prefix(spec.package) / 'lib' / spec.package / spec.executable
    command = [str(executable), *spec.arguments, '--ros-args', '-r', f'__node:={spec.name}']
    if spec.parameter_file:
        command += ['--params-file', str(config_path(spec.parameter_file))]
    return command + ['-p', f'sim:={"true" if sim else "false"}']


@dataclass
class Running:
    spec: NodeSpec
    process: subprocess.Popen


class Launcher:
    """Start, watch and stop the node processes."""

    def __init__(self, specs: list[NodeSpec], sim: bool, log_dir: Path | None) -> None:
        self._specs = specs
        self._sim = sim
        self._log_dir = log_dir
        self._running: list[Running] = []
        self._stopping = False

    def start(self) -> None:
        for spec in self._specs:
            output = None
            if self._log_dir is not None:
                self._log_dir.mkdir(parents=True, exist_ok=True)
                output = open(self._log_dir / f'{spec.name}.log', 'w')  # noqa: SIM115
            process = subprocess.Popen(node_command(spec, self._sim), stdout=output,
                                       stderr=subprocess.STDOUT if output else None)
            self._running.append(Running(spec, process))
            print(f'[phil] started {spec.package}/{spec.executable} as {spec.name} '
                  f'(pid {process.pid})', flush=True)

    def watch(self) -> int:
        """Block until Ctrl-C or a required process exits; return the exit status to use."""
        while not self._stopping:
            for running in self._running:
                code = running.process.poll()
                if code is not None and running.spec.required:
                    print(f'[phil] {running.spec.name} exited with code {code}; stopping the '
                          f'graph', file=sys.stderr, flush=True)
                    self.stop()
                    return code or 1
            time.sleep(0.2)
        return 0

    def stop(self) -> int:
        """SIGINT every process (reverse start order), then escalate after a timeout."""
        self._stopping = True
        for running in reversed(self._running):
            if running.process.poll() is None:
                running.process.send_signal(signal.SIGINT)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        worst = 0
        for running in self._running:
            try:
                code = running.process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                print(f'[phil] {running.spec.name} did not stop; killing it', file=sys.stderr)
                running.process.kill()
                code = running.process.wait()
            if code not in (0, -signal.SIGINT):
                worst = worst or code
        return worst


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--real', action='store_true',
                        help='drive the real robot (can0..3, /dev/ttyUSB0) instead of the '
                             'simulators')
    parser.add_argument('--log-dir', type=Path, default=None,
                        help='write each process output to DIR/<node>.log')
    args = parser.parse_args(argv)
    sim = not args.real
    launcher = Launcher(nodes_for(sim), sim, args.log_dir)
    print(f'[phil] robot: {"simulated" if sim else "REAL"}; ROS_DOMAIN_ID='
          f'{os.environ.get("ROS_DOMAIN_ID", "0")}; Ctrl-C stops everything', flush=True)
    launcher.start()
    signal.signal(signal.SIGTERM, lambda *_: launcher.stop())
    try:
        status = launcher.watch()
    except KeyboardInterrupt:
        status = 0
    status = launcher.stop() or status
    print('[phil] stopped', flush=True)
    return status


if __name__ == '__main__':
    sys.exit(main())
