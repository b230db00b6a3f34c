"""What every process the launcher starts does before it execs: ask for SIGINT when the
launcher dies, then take its niceness and real-time priority."""

from __future__ import annotations

import ctypes
import os
import signal

_PR_SET_PDEATHSIG = 1
try:  # resolved before any fork: the child only makes the call
    _prctl = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):  # not Linux: the launcher's own stop() still applies
    _prctl = None


def prepare_child(niceness: int, rt_priority: int) -> None:
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
            os.write(
                2,
                f'phil: niceness {niceness} refused ({error.strerror}); running at '
                'normal priority\n'.encode(),
            )
    if rt_priority:
        try:
            os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(rt_priority))
        except OSError as error:
            os.write(
                2,
                f'phil: SCHED_RR priority {rt_priority} refused ({error.strerror}); '
                f'running time-sharing\n'.encode(),
            )
