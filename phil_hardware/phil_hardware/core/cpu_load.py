"""CPU load and CPU time, for the benchmarks that measure the controller on a busy machine.

On the robot the controller shares its computer with speech recognition, a language model and
text-to-speech: :class:`CpuHog` stands for them (one busy-looping process per CPU at normal
priority, what a time-sharing neighbour does); :func:`cpu_seconds` reads what a process used.
"""

from __future__ import annotations

import os
import subprocess
import sys


class CpuHog:
    """``count`` busy-looping processes at normal priority while the context is open
    (``count`` 0: none); ``processes`` while it is open."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.processes: list[subprocess.Popen] = []

    def __enter__(self) -> CpuHog:
        self.processes = [
            subprocess.Popen([sys.executable, '-c', 'while True: pass']) for _ in range(self.count)
        ]
        return self

    def __exit__(self, *exc_info) -> None:
        for process in self.processes:
            process.kill()
            process.wait()
        self.processes = []


def stat_fields(pid: int) -> list[str]:
    """A live process's /proc stat fields after its name: field 3 (state) is index 0."""
    with open(f'/proc/{pid}/stat') as stat:
        return stat.read().rpartition(')')[2].split()


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) a live process has used so far [s] (Linux /proc)."""
    fields = stat_fields(pid)
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')
