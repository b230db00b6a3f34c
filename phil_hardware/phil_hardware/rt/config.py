"""Configuration of the bus-loop process (picklable; sent whole to the child process)."""

from __future__ import annotations

from dataclasses import dataclass, field

from phil_hardware.core.bus_controller.config import ControllerConfig
from phil_hardware.core.realtime import RealtimeConfig


@dataclass(frozen=True)
class BusLoopConfig:
    """Everything the bus-loop process needs.

    Attributes:
        controller: Joints, buses, safety, sequence timing, cadence.
        realtime: SCHED_FIFO priority, CPU affinity, mlockall, GC freeze, spin margin.
        snapshot_every_ticks: Publish the state snapshot every this many ticks (5 -> 200 Hz).
        stats_window_ticks: Tick-lateness percentiles are computed over windows this long.
        trace_capacity: Ticks of per-tick lateness kept in shared memory for benchmarks
            (0 = none).
        commands_per_tick: Commands taken from the pipe per tick at most (bounds tick work).
        spare_reserve_s: Commands, the snapshot, statistics and garbage collection run after
            a tick only when at least this long is left before the next deadline [s] (a chunk
            takes ~0.35 ms in with cold caches).
        command_max_wait_ticks: Ticks a command or a due snapshot waits for spare time at
            most; then it is taken anyway.
        gc_every_ticks: With ``realtime.manual_gc``, the young objects are collected this
            often (in spare time).
        start_timeout_s: How long :meth:`BusLoopClient.start` waits for the child [s].
        estop_word: Name of the ESTOP word (``phil_description.core.estop_word``) the loop
            watches; '' = the client makes a private one.
        node_timeout_s: While active, the node must count its heartbeat in the shared block at
            least this often; a longer silence (it hangs) latches a PROCESS_DIED fault and the
            robot holds, and so does its process being stopped (looked at every 0.1 s; a dead
            node closes the pipe) [s]. 0 = not watched (the hardware node always sets it; a
            bare client, as in tests, may not beat).
    """

    controller: ControllerConfig
    realtime: RealtimeConfig = field(default_factory=RealtimeConfig)
    snapshot_every_ticks: int = 5
    stats_window_ticks: int = 1000
    trace_capacity: int = 0
    commands_per_tick: int = 4
    spare_reserve_s: float = 0.0004
    command_max_wait_ticks: int = 5
    gc_every_ticks: int = 1000
    start_timeout_s: float = 20.0
    estop_word: str = ''
    node_timeout_s: float = 0.0

    def __post_init__(self) -> None:
        """Validate once."""
        for name in (
            'snapshot_every_ticks',
            'stats_window_ticks',
            'commands_per_tick',
            'gc_every_ticks',
        ):
            if getattr(self, name) < 1:
                raise ValueError(f'{name} must be >= 1, got {getattr(self, name)}')
        if not 0.0 <= self.node_timeout_s < 60.0:
            raise ValueError(f'node_timeout_s must be in [0, 60) s, got {self.node_timeout_s}')
        if self.trace_capacity < 0 or self.start_timeout_s <= 0:
            raise ValueError('trace_capacity must be >= 0 and start_timeout_s > 0')
        tick_s = self.controller.cycle.tick_s
        if not 0.0 <= self.spare_reserve_s < tick_s:
            raise ValueError(
                f'spare_reserve_s must be in [0, {tick_s}) s (the tick), got '
                f'{self.spare_reserve_s}'
            )
        if self.command_max_wait_ticks < 0:
            raise ValueError(
                f'command_max_wait_ticks must be >= 0, got {self.command_max_wait_ticks}'
            )
        rate_hz = 1.0 / (self.controller.cycle.tick_s * self.snapshot_every_ticks)
        if rate_hz < 100.0:
            raise ValueError(
                f'snapshot rate {rate_hz:.0f} Hz is below 100 Hz; lower snapshot_every_ticks'
            )
