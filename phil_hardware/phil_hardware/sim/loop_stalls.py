"""Gaps of the simulator's device loop, and where the time went.

While the device loop does not come round, every simulated device is silent, which no real
drive would be: a feedback timeout then is the simulator's or the machine's, never a drive's.
:class:`LoopStalls` counts the gaps and says for each how much of it the loop's own work took
(the thread's CPU time: the simulator fell behind), how much its other threads took (the loop
waited for Python's lock), whether the thread was waiting for a CPU (its run delay, from the
kernel's schedstat), the hypervisor had taken the CPU (steal), or none of these: the machine
did not run the process at all: the thread slept past the end of its wait (at most one loop
period) without waiting for a CPU. It is not always a pause of the whole virtual machine: in
one such stall of 1166 ms under load, the hardware's bus loop on the other CPU missed no more
ticks than in any other second. Most likely the host did not run the virtual CPU the thread
slept on (steal is not counted for a virtual CPU the host leaves halted); that is inferred,
not seen.
"""

from __future__ import annotations

import logging
import math
import time

from phil_hardware.core.realtime import run_delay_ms, steal_ms

_LOG = logging.getLogger('phil_hardware.sim.robot')
#: A gap between two loop iterations longer than this is a stall [s].
STALL_REPORT_S = 0.1
#: How often the thread's run delay and the steal are read [s].
SAMPLE_PERIOD_S = 1.0


class LoopStalls:
    """Counts the device loop's stalls and reports each (call :meth:`iteration` from the
    loop's thread only).

    Attributes:
        count: Gaps longer than :data:`STALL_REPORT_S`.
        longest_s: The longest gap [s].
    """

    def __init__(self) -> None:
        self.count = 0
        self.longest_s = 0.0
        self._sampled_at_s = -math.inf
        self._sample: tuple[float | None, float | None] = (None, None)
        # The loop thread's and the whole process's CPU time at the last iteration [s].
        self._cpu_s: tuple[float, float] | None = None

    def iteration(self, now_s: float, gap_s: float) -> None:
        """One loop iteration at ``now_s``, ``gap_s`` after the previous one [s]."""
        before, self._cpu_s = self._cpu_s, (time.thread_time(), time.process_time())
        if gap_s > STALL_REPORT_S:
            self.count += 1
            self.longest_s = max(self.longest_s, gap_s)
            _LOG.warning(
                'device loop stalled for %.0f ms (%s): every simulated device was silent '
                'meanwhile, as no real drive would be; %s',
                gap_s * 1e3,
                'its own share unknown' if before is None else _whose(gap_s, before, self._cpu_s),
                self._where_the_time_went(now_s),
            )
        if now_s - self._sampled_at_s >= SAMPLE_PERIOD_S:
            self._sampled_at_s, self._sample = now_s, (run_delay_ms(), steal_ms())

    def _where_the_time_went(self, now_s: float) -> str:
        waited_before, stolen_before = self._sample
        waited, stolen = run_delay_ms(), steal_ms()
        parts = []
        if waited is not None and waited_before is not None:
            parts.append(f'this thread waited {waited - waited_before:.0f} ms for a CPU')
        if stolen is not None and stolen_before is not None:
            parts.append(f'the hypervisor took {stolen - stolen_before:.0f} ms of all CPUs')
        if not parts:
            return 'where the time went is unknown here'
        # Sampled at the first iteration already: a stall comes later, so the window is finite.
        window_ms = (now_s - self._sampled_at_s) * 1e3
        return f'in the last {window_ms:.0f} ms {" and ".join(parts)}'


def _whose(gap_s: float, before: tuple[float, float], after: tuple[float, float]) -> str:
    """Whose work took the gap: the loop's own, the process's other threads (the loop waits
    for Python's lock meanwhile), or neither (the machine did not run it). ``before`` and
    ``after``: the loop thread's and the process's CPU time [s]."""
    own_s = after[0] - before[0]
    others_s = after[1] - before[1] - own_s
    if own_s > gap_s / 2:
        return f'its own work took {own_s * 1e3:.0f} ms of it: the simulator fell behind'
    if others_s > gap_s / 2:
        return (
            f"the simulator's other threads took {others_s * 1e3:.0f} ms of it, holding "
            "Python's lock: the simulator fell behind"
        )
    return (
        f'the machine did not run it; its own work took {own_s * 1e3:.0f} ms, the '
        f"simulator's other threads {others_s * 1e3:.0f} ms"
    )
