"""The bus loop: absolute-deadline pacing of :meth:`BusController.tick`, commands from the
node, the state snapshot, tick statistics.

Per tick: wait for the deadline minus a spin margin, spin to the deadline, look at the ESTOP
word (any process of the graph can add to it) and, while active, at the node's heartbeat in the
shared block (silent for ``node_timeout_s``: a PROCESS_DIED fault latches), run the controller
tick with the actual time as the send time. Then the spare time before the next deadline serves
what may wait a tick or two: at most ``commands_per_tick`` commands from the pipe, every
``snapshot_every_ticks`` ticks the snapshot (due on a tick without TMotor or Dynamixel traffic),
the tick statistics, the garbage collection. Each waits for a tick with ``spare_reserve_s``
left, a command or the snapshot at most ``command_max_wait_ticks`` ticks. Tick work ends when
the tick's frames are out: the snapshot (0.07-0.09 ms with cold caches) made every fifth tick
the longest. A chunk costs ~0.35 ms to take in with cold caches and a collection 0.2-10 ms at
whatever allocation triggers it, so neither may land in a busy tick. The wait itself watches the
pipe: a command that arrives while ``spare_reserve_s`` is left is taken at once, so a chunk is
sampled from the next tick on.

A tick that ends after the next deadline is an overrun: the next tick starts at once if its
slot is less than a period ago, and slots wholly missed are skipped (counted), never caught up
in a burst. Nothing in the tick logs: errors are counted and latched as faults; text reaches
the node through the snapshot.
"""

from __future__ import annotations

import gc
import math
import os
import time
from collections.abc import Callable
from typing import Any

from phil_description.core.liveness import STOPPED, process_state
from phil_hardware.core.bus_controller import BusController
from phil_hardware.core.bus_controller.config import CycleConfig
from phil_hardware.core.bus_controller.state import Lifecycle
from phil_hardware.core.faults import FaultCode
from phil_hardware.core.realtime import RealtimeReport, sleep_until

from .command_wire import CommandReader
from .config import BusLoopConfig
from .loop_commands import LoopCommands
from .shm import StateExchange
from .snapshot import SnapshotWriter
from .tick_stats import TickStats

# Exit codes besides 0 (a 'shutdown' command): the loop stopped the motors and closed the buses
# on its own.
EXIT_NODE_GONE = 2
EXIT_TERMINATED = 3
OLDER_GENERATION_EVERY = 10  # every tenth collection also takes generation 1
NODE_CHECK_EVERY_TICKS = 100  # the node's process state (/proc), in spare time
ESTOP_ROUTES_WINDOW_S = 0.2  # ESTOP word changes this close together are one ESTOP


def quiet_phase(cycle: CycleConfig, every: int) -> int:
    """A tick phase (modulo ``every``) that never carries TMotor or Dynamixel traffic, or 0.

    The snapshot is due after it: the spare time after a TMotor or Dynamixel tick is the
    shortest, and a snapshot that waited there for room would come late.
    """
    divider = cycle.slow_divider
    busy = {*cycle.tmotor_phases, cycle.dxl_phase}
    for phase in range(every):
        if all((phase + k * every) % divider not in busy for k in range(divider)):
            return phase
    return 0


class BusLoop(LoopCommands):
    """Runs one controller at a fixed period until told to stop or the node goes away; the
    commands from the node are handled by :class:`~.loop_commands.LoopCommands`."""

    def __init__(
        self,
        config: BusLoopConfig,
        controller: BusController,
        exchange: StateExchange,
        conn: Any,
        report: RealtimeReport,
        clock: Callable[[], float] = time.monotonic,
        after_command: Callable[[], None] | None = None,
        estop_word: Any = None,
    ) -> None:
        """Bind everything the loop needs.

        Args:
            config: Loop configuration.
            controller: The bus controller (unconfigured).
            exchange: Shared block (attached).
            conn: Duplex ``multiprocessing.connection.Connection`` to the node.
            report: What real-time treatment was applied.
            clock: Monotonic clock [s].
            after_command: Called after every lifecycle command (re-freezes the GC).
            estop_word: The ESTOP word (``count()``); a change of its count latches ESTOP.
                None: no ESTOP word (only the ``estop`` command).
        """
        self.config = config
        self.controller = controller
        self.exchange = exchange
        self.conn = conn
        self.report = report
        self._report_text = report.to_dict()  # fixed at start-up; built once, not per publish
        self.clock = clock
        self.after_command = after_command
        self.writer = SnapshotWriter(exchange, controller, tuple(config.controller.can_buses))
        self.stats = TickStats(config.stats_window_ticks)
        self.overruns = 0
        self.missed_ticks = 0
        self.loop_errors = 0
        self.commands_handled = 0
        self.resets_granted = 0  # RESETs that cleared every latch
        self.reset_granted_s = math.nan  # when the latest of them was (robot monotonic, s)
        self.trace_count = 0
        self.last_error = ''
        self.exit_code = 0
        self._init_watches(estop_word)
        self._stopping = False
        self._terminate_requested = False
        self._resync = False
        self._last_publish = -math.inf
        self._period = config.controller.cycle.tick_s
        self._publish_period = self._period * config.snapshot_every_ticks
        self._publish_phase = quiet_phase(config.controller.cycle, config.snapshot_every_ticks)
        self._trace = exchange.trace
        self._init_spare_time_work()
        controller.pump_hook = self._pump

    def _init_watches(self, estop_word: Any) -> None:
        """What the ESTOP word and the node's heartbeat were last seen at: nothing new yet."""
        self._estop_word = estop_word
        self._estop_seen = estop_word.count() if estop_word is not None else 0
        self._estop_seen_s = math.nan
        self._node_beats = self.exchange.node_heartbeats()
        self._node_seen_s = self.clock()
        self._node_silent = False
        self._node_pid = os.getppid()  # the hardware node that spawned this process
        self._ticks_since_node_check = 0

    def _init_spare_time_work(self) -> None:
        """The command pipe's reader and the counters of the work done in spare time."""
        self._reader = CommandReader(self.conn.fileno())
        self._command_wait_ticks = 0
        self._publish_due = False
        self._publish_wait_ticks = 0
        self._collect_gc = self.config.realtime.manual_gc
        self._ticks_since_gc = 0
        self._collections = 0

    # -- main loop ---------------------------------------------------------------------------

    def run(self) -> int:
        """Loop until a shutdown command or the pipe closes; returns the exit code."""
        clock = self.clock
        period = self._period
        spin = self.config.realtime.spin_s
        every = self.config.snapshot_every_ticks
        publish_phase = self._publish_phase
        controller = self.controller
        trace = self._trace
        capacity = len(trace)
        self.publish(clock())
        deadline = clock() + period
        skipped_s = 0.0  # slots an overrun skipped, counted in the next trace sample
        while not self._stopping:
            deadline = self._take_commands_while_idle(deadline, spin)
            if self._stopping:
                break
            start = sleep_until(deadline, spin, clock)
            lateness = start - deadline
            if capacity:
                # Lateness against the slot this tick should have had: the trace shows a
                # skipped slot as a late tick, not as a punctual one on a shifted grid.
                trace[self.trace_count % capacity] = lateness + skipped_s
                self.trace_count += 1
            skipped_s = 0.0
            if self._terminate_requested:
                self._leave_safe(EXIT_TERMINATED, 'after SIGTERM')
                break
            try:
                self._check_estop()
                self._check_node(start)
                controller.tick(start)
            except Exception as error:  # the loop must outlive any bug in one tick
                self._loop_error(error, start)
            if controller.tick_index % every == publish_phase:
                self._publish_due = True
            deadline += period
            self.stats.add(lateness, clock() - start)
            self._spare_time_work(deadline, start)
            if self._resync:
                # A lifecycle command ran inside this tick: start a fresh grid, not overruns.
                self._resync = False
                deadline = clock() + period
                continue
            late = clock() - deadline
            if late > 0.0:
                self.overruns += 1
                # The next slot runs at once if it began less than a period ago; the slots
                # that ended while this tick ran are skipped.
                missed = int(late / period)
                self.missed_ticks += missed
                deadline += missed * period
                skipped_s = missed * period
        self.publish(clock())
        self._reader.close()
        return self.exit_code

    def _take_commands_while_idle(self, deadline: float, spin: float) -> float:
        """Until ``deadline - spin``, wait on the command pipe instead of sleeping, and take
        what arrives while ``spare_reserve_s`` is left. Returns the deadline of the next tick
        (a fresh one after a lifecycle command)."""
        clock = self.clock
        reserve = self.config.spare_reserve_s
        reader = self._reader
        while not self._stopping:
            remaining = deadline - clock() - spin
            if remaining <= 0.0 or not reader.wait_readable(remaining):
                break
            if deadline - clock() < reserve:
                break  # taken in the spare time after the tick
            self._command_wait_ticks = 0
            self._handle_commands()
            if self._resync:
                self._resync = False
                deadline = clock() + self._period
        return deadline

    def _spare_time_work(self, next_deadline: float, tick_start: float) -> None:
        """Commands, the snapshot when due, statistics, garbage collection: each when the
        time before ``next_deadline`` allows it (commands and the snapshot at the latest after
        ``command_max_wait_ticks`` ticks). The snapshot shows the state at ``tick_start``."""
        reserve = self.config.spare_reserve_s
        max_wait = self.config.command_max_wait_ticks
        roomy = next_deadline - self.clock() >= reserve
        if roomy or self._command_wait_ticks >= max_wait:
            self._command_wait_ticks = 0
            self._handle_commands()
            roomy = next_deadline - self.clock() >= reserve
        else:
            self._command_wait_ticks += 1
        if self._publish_due:
            if roomy or self._publish_wait_ticks >= max_wait:
                self._publish_due = False
                self._publish_wait_ticks = 0
                self.publish(tick_start)
                roomy = next_deadline - self.clock() >= reserve
            else:
                self._publish_wait_ticks += 1
        if self.stats.pending and roomy:
            self.stats.summarize()
            roomy = next_deadline - self.clock() >= reserve
        self._ticks_since_node_check += 1
        if self._ticks_since_node_check >= NODE_CHECK_EVERY_TICKS and roomy:
            self._ticks_since_node_check = 0
            self._check_node_process()
            roomy = next_deadline - self.clock() >= reserve
        if self._collect_gc:
            self._ticks_since_gc += 1
            if self._ticks_since_gc >= self.config.gc_every_ticks and roomy:
                self._ticks_since_gc = 0
                self._collections += 1
                # Young objects only: a full collection walks everything not frozen. The
                # lifecycle commands collect fully and refreeze.
                gc.collect(1 if self._collections % OLDER_GENERATION_EVERY == 0 else 0)

    def publish(self, now: float) -> None:
        """Write the snapshot."""
        self._last_publish = now
        stats = self.stats
        self.writer.publish(
            now,
            {
                'realtime': self.report.realtime,
                'tick_p50_s': stats.p50_s,
                'tick_p99_s': stats.p99_s,
                'tick_max_s': stats.max_s,
                'tick_window': stats.window,
                'work_p99_s': stats.work_p99_s,
                'work_max_s': stats.work_max_s,
                'overruns': self.overruns,
                'missed_ticks': self.missed_ticks,
                'loop_errors': self.loop_errors,
                'commands_handled': self.commands_handled,
                'resets_granted': self.resets_granted,
                'reset_granted_s': self.reset_granted_s,
                'trace_count': self.trace_count,
                'estop_seen': self._estop_seen,
                'estop_seen_s': self._estop_seen_s,
            },
            {'realtime': self._report_text, 'last_error': self.last_error},
        )

    def _pump(self) -> None:
        # Called while a lifecycle sequence waits: keep the node informed, honour ESTOP.
        now = self.clock()
        self._check_estop()
        if now - self._last_publish >= self._publish_period:
            self.publish(now)

    def _check_estop(self) -> None:
        word = self._estop_word
        if word is None:
            return
        requests = word.count()
        if requests != self._estop_seen:
            now = self.clock()
            # One ESTOP comes by several routes (the TCP bridge, then the planner): the latch
            # time is the first one's.
            if not now - self._estop_seen_s < ESTOP_ROUTES_WINDOW_S:
                self._estop_seen_s = now
            self._estop_seen = requests
            self.controller.estop('emergency stop (ESTOP word)')

    def _check_node(self, now: float) -> None:
        beats = self.exchange.node_heartbeats()
        if beats != self._node_beats:
            self._node_beats, self._node_seen_s, self._node_silent = beats, now, False
            return
        silent_s = now - self._node_seen_s
        timeout = self.config.node_timeout_s
        if timeout and silent_s > timeout:
            self._node_down(
                f'hardware node stopped responding (no heartbeat for {silent_s:.2f} s: it hangs)'
            )

    def _check_node_process(self) -> None:
        """The node's process stopped (SIGSTOP): hold at once (a dead one closes the pipe)."""
        if self.config.node_timeout_s and process_state(self._node_pid) == STOPPED:
            self._node_down(
                f'hardware node is stopped (its process {self._node_pid} does not run)'
            )

    def _node_down(self, why: str) -> None:
        if not self._node_silent and self.controller.lifecycle is Lifecycle.ACTIVE:
            self._node_silent = True
            self.controller.fault(f'{why}; the bus loop holds the robot')

    def _loop_error(self, error: Exception, now: float) -> None:
        self.loop_errors += 1
        self.last_error = f'{type(error).__name__}: {error}'
        safety = self.controller.safety
        if (
            safety.latch(FaultCode.UNKNOWN, '', f'bus loop error: {self.last_error}', now)
            is not None
        ):
            self.controller.enter_hold()

    # -- stopping ----------------------------------------------------------------------------

    def request_terminate(self) -> None:
        """Stop after leaving the motors safe, at the next tick (safe in a signal handler)."""
        self._terminate_requested = True

    def _node_gone(self) -> None:
        # The node died or closed the pipe: leave the motors safe, then exit.
        self._leave_safe(EXIT_NODE_GONE, 'after the node left')

    def _leave_safe(self, exit_code: int, why: str) -> None:
        if not self._stopping:
            self._stopping = True
            self.exit_code = exit_code
            try:
                self.controller.shutdown()
            except Exception as error:  # finishing the exit matters more
                self.last_error = f'shutdown {why}: {error}'
