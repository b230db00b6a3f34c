"""How a process knows that the process which started it, and whose death must end it, is gone.

The launcher asks the kernel for SIGINT in each child when it dies (``PR_SET_PDEATHSIG``), but
a SIGINT that lands while the child is still importing can be lost: Python reports the
KeyboardInterrupt as "Exception ignored" and goes on. The launcher repeats its SIGINT when it
stops the graph itself; killed, it repeats nothing. So it also names itself in the children's
environment, and a node compares its parent with that pid while it runs. A process that starts
a node of its own (the device simulator its ROS bridge) names itself the same way.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

PARENT_PID_ENV = 'PHIL_PARENT_PID'


def parent_gone_check(environ: Mapping[str, str] = os.environ) -> Callable[[], bool]:
    """A check that is true once the process named in ``environ`` is no longer this process's
    parent (it died; the process was handed to another). Always false for a process started
    without one (no pid, or not a number): by ROS launch or by hand."""
    try:
        parent_pid = int(environ.get(PARENT_PID_ENV, ''))
    except ValueError:
        return lambda: False
    return lambda: os.getppid() != parent_pid
