"""How a process the launcher started knows that the launcher is gone.

The launcher asks the kernel for SIGINT in each child when it dies (``PR_SET_PDEATHSIG``), but
a SIGINT that lands while the child is still importing can be lost: Python reports the
KeyboardInterrupt as "Exception ignored" and goes on. The launcher repeats its SIGINT when it
stops the graph itself; killed, it repeats nothing. So it also leaves its pid in the children's
environment, and a node checks its parent against it while it runs.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

LAUNCHER_PID_ENV = 'PHIL_LAUNCHER_PID'


def launcher_gone_check(environ: Mapping[str, str] = os.environ) -> Callable[[], bool]:
    """A check that is true once the launcher named in ``environ`` is no longer this process's
    parent (it died; the process was handed to another). Always false for a process the
    launcher did not start (no pid, or not a number)."""
    try:
        launcher_pid = int(environ.get(LAUNCHER_PID_ENV, ''))
    except ValueError:
        return lambda: False
    return lambda: os.getppid() != launcher_pid
