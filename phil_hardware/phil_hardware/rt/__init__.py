"""The real-time bus loop in its own process (docs/design.md, "The bus loop lives outside rclpy").

The hardware node creates a :class:`BusLoopClient` and calls ``start()``; the child process
runs :class:`BusLoop` around a :class:`~phil_hardware.core.bus_controller.BusController` with
SCHED_FIFO, CPU affinity, mlockall and a frozen, manually paced GC when permitted. Commands
travel through a pipe and are taken in the spare time after a tick; the state comes back
through a seqlocked shared-memory snapshot at >= 100 Hz.
"""

from .client import BusLoopClient, BusLoopError, CommandResult
from .config import BusLoopConfig
from .snapshot import BusCounters, BusSnapshot

__all__ = [
    'BusCounters',
    'BusLoopClient',
    'BusLoopConfig',
    'BusLoopError',
    'BusSnapshot',
    'CommandResult',
]
