"""Real-time helpers for the bus-loop process: SCHED_FIFO, CPU affinity, mlockall, frozen GC,
and absolute-deadline sleeping.

Every helper degrades instead of failing: without privileges the loop runs best-effort and the
report says ``realtime: False`` with the reason, so the caller can warn once.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

MCL_CURRENT = 1
MCL_FUTURE = 2
SCHED_FIFO_MAX_PRIORITY = 99


@dataclass(frozen=True)
class RealtimeConfig:
    """How the bus-loop process asks for real-time treatment.

    Attributes:
        sched_priority: SCHED_FIFO priority 1..99, or 0 for the normal scheduler. Upstream's
            send thread used 40.
        cpu_affinity: CPUs the loop may run on (e.g. ``(1,)``), empty for all.
        lock_memory: mlockall(MCL_CURRENT | MCL_FUTURE) so no page fault stalls a tick.
        freeze_gc: ``gc.freeze()`` after start-up so collections never walk the start-up
            objects.
        manual_gc: Switch automatic garbage collection off; the bus loop collects young
            objects in its spare time instead. An automatic collection runs at whatever
            allocation crosses its threshold, inside a tick: 0.2 ms for the youngest
            generation, up to 10 ms for the oldest.
        spin_s: Busy-wait this long before each deadline instead of sleeping [s]; covers the
            wake-up latency of the sleep. Measured with SCHED_FIFO on the 2-core VMs
            (``bench_rt_loop --modes floor``): 50 us keep the lateness p99 near 13 us for 4 %
            of a core; 200 us cost 19 % for a p99 under 1 us, which no drive can tell apart.
    """

    sched_priority: int = 40
    cpu_affinity: tuple[int, ...] = ()
    lock_memory: bool = True
    freeze_gc: bool = True
    manual_gc: bool = True
    spin_s: float = 0.00005

    def __post_init__(self) -> None:
        """Validate once."""
        if not 0 <= self.sched_priority <= SCHED_FIFO_MAX_PRIORITY:
            raise ValueError(f'sched_priority must be 0..99, got {self.sched_priority}')
        if any(cpu < 0 for cpu in self.cpu_affinity):
            raise ValueError(f'cpu_affinity must list CPU numbers, got {self.cpu_affinity}')
        if not 0.0 <= self.spin_s <= 0.01:
            raise ValueError(f'spin_s must be in [0, 0.01] s, got {self.spin_s}')


@dataclass
class RealtimeReport:
    """What was actually applied.

    Attributes:
        realtime: SCHED_FIFO is in effect.
        priority: The SCHED_FIFO priority, 0 if none.
        cpu_affinity: CPUs the process may run on after the call.
        memory_locked: mlockall succeeded.
        gc_frozen: gc.freeze ran.
        gc_manual: Automatic garbage collection is off.
        warnings: Why something was not applied (empty when everything worked).
    """

    realtime: bool = False
    priority: int = 0
    cpu_affinity: tuple[int, ...] = ()
    memory_locked: bool = False
    gc_frozen: bool = False
    gc_manual: bool = False
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        """Plain JSON-able form."""
        return {
            'realtime': self.realtime,
            'priority': self.priority,
            'cpu_affinity': list(self.cpu_affinity),
            'memory_locked': self.memory_locked,
            'gc_frozen': self.gc_frozen,
            'gc_manual': self.gc_manual,
            'warnings': list(self.warnings),
        }


def set_fifo_priority(priority: int) -> str | None:
    """Switch the calling thread to SCHED_FIFO; returns why not, or None on success."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
    except (PermissionError, OSError) as error:
        return (
            f'SCHED_FIFO priority {priority} refused ({error.strerror or error}); running '
            'best-effort. Grant CAP_SYS_NICE or an rtprio limit to get real time'
        )
    return None


def set_time_sharing() -> None:
    """Switch the calling thread to the normal scheduler (always allowed): a loop asked for
    no real time must not keep a real-time policy inherited from its parent (the hardware
    node may run SCHED_RR)."""
    os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))


def set_cpu_affinity(cpus: tuple[int, ...]) -> str | None:
    """Pin the process to ``cpus``; returns why not, or None on success."""
    try:
        os.sched_setaffinity(0, set(cpus))
    except (OSError, ValueError) as error:
        return f'CPU affinity {list(cpus)} refused ({error}); running on all CPUs'
    return None


def lock_memory() -> str | None:
    """mlockall(MCL_CURRENT | MCL_FUTURE); returns why not, or None on success."""
    path = ctypes.util.find_library('c')
    try:
        libc = ctypes.CDLL(path, use_errno=True)
    except OSError as error:
        return f'mlockall unavailable ({error})'
    if libc.mlockall(MCL_CURRENT | MCL_FUTURE) != 0:
        errno = ctypes.get_errno()
        return (
            f'mlockall failed ({os.strerror(errno)}); page faults may delay ticks. Raise '
            'the memlock limit (ulimit -l) to lock memory'
        )
    return None


def apply_realtime(config: RealtimeConfig) -> RealtimeReport:
    """Apply ``config`` to the calling process/thread; never raises for missing privileges."""
    report = RealtimeReport()
    if config.cpu_affinity:
        problem = set_cpu_affinity(config.cpu_affinity)
        if problem:
            report.warnings.append(problem)
    try:
        report.cpu_affinity = tuple(sorted(os.sched_getaffinity(0)))
    except OSError:
        report.cpu_affinity = ()
    if config.lock_memory:
        problem = lock_memory()
        report.memory_locked = problem is None
        if problem:
            report.warnings.append(problem)
    if config.sched_priority > 0:
        problem = set_fifo_priority(config.sched_priority)
        report.realtime = problem is None
        report.priority = config.sched_priority if problem is None else 0
        if problem:
            report.warnings.append(problem)
    else:
        set_time_sharing()
        report.warnings.append('SCHED_FIFO not requested (sched_priority 0); best-effort')
    if config.freeze_gc:
        gc.collect()
        gc.freeze()
        report.gc_frozen = True
    if config.manual_gc:
        gc.disable()
        report.gc_manual = True
    return report


def sleep_until(
    deadline_s: float, spin_s: float, clock: Callable[[], float] = time.monotonic
) -> float:
    """Sleep until ``deadline_s - spin_s``, then spin until the deadline.

    Python's ``time.sleep`` uses ``clock_nanosleep`` on CLOCK_MONOTONIC on Linux; the spin
    covers its wake-up latency, so the caller starts within microseconds of the deadline when
    the process runs with SCHED_FIFO.

    Args:
        deadline_s: Absolute deadline on ``clock`` [s].
        spin_s: Busy-wait margin [s].
        clock: Monotonic clock.

    Returns:
        The time at return (>= deadline).
    """
    remaining = deadline_s - clock() - spin_s
    if remaining > 0.0:
        time.sleep(remaining)
    now = clock()
    while now < deadline_s:
        now = clock()
    return now


def steal_ms() -> float | None:
    """CPU time the hypervisor took from this VM so far, all CPUs [ms] (/proc/stat, 10 ms
    resolution), or None where there is no such count. Benchmarks report it beside timing
    figures: a stolen vCPU stalls any code on it."""
    try:
        with open('/proc/stat') as stat:
            fields = stat.readline().split()
        return int(fields[8]) * 1000.0 / os.sysconf('SC_CLK_TCK')
    except (OSError, IndexError, ValueError):
        return None


def run_delay_ms() -> float | None:
    """Time the calling thread has waited on a run queue so far [ms] (its schedstat), or None
    where there is no such count."""
    try:
        with open('/proc/thread-self/schedstat') as schedstat:
            return int(schedstat.read().split()[1]) / 1e6
    except (OSError, IndexError, ValueError):
        return None


def steal_during(before: float | None) -> float | None:
    """Steal time since ``before`` (a ``steal_ms()`` reading) [ms]."""
    after = steal_ms()
    return None if before is None or after is None else round(after - before, 1)
