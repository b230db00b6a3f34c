"""The bus loop's pacing in-process, on a stepping clock: what an overrun does to the next
slots, which ticks serve commands, publish the snapshot and collect garbage.

The controller is the real one, unconfigured (its tick drains no bus); a hook after each of its
ticks makes that tick take as long as the test says by moving the clock on.
"""

from __future__ import annotations

import contextlib
import gc
import math
import multiprocessing

import pytest

from phil_description.core import default_robot_model
from phil_hardware.core.bus_controller import BusController, controller_config_from_model
from phil_hardware.core.bus_controller.config import CycleConfig
from phil_hardware.core.realtime import RealtimeConfig, RealtimeReport
from phil_hardware.rt import BusLoopConfig
from phil_hardware.rt.loop import EXIT_TERMINATED, BusLoop, quiet_phase
from phil_hardware.rt.process import snapshot_layout
from phil_hardware.rt.shm import StateExchange
from phil_hardware.rt.snapshot import decode_snapshot

pytestmark = pytest.mark.timeout(60)
TICK_S = 0.001


class SteppingClock:
    """Monotonic clock that moves 1 us per reading (so a spin ends) and on :meth:`advance`."""

    def __init__(self) -> None:
        self.now_s = 1000.0

    def __call__(self) -> float:
        self.now_s += 1e-6
        return self.now_s

    def advance(self, seconds: float) -> None:
        self.now_s += seconds


class _TickedBy:
    """The controller, with ``tick`` replaced (a compiled controller's methods cannot be)."""

    def __init__(self, controller: BusController, tick) -> None:
        self._controller = controller
        self.tick = tick

    def __getattr__(self, name: str):
        return getattr(self._controller, name)


class LoopRig:
    """A BusLoop on a stepping clock; ``work_s[i]`` is how long tick ``i`` (1-based) takes."""

    def __init__(
        self,
        ticks: int,
        work_s: dict[int, float] | None = None,
        default_work_s: float = 0.0001,
        send_during: dict[int, tuple] | None = None,
        estop_word=None,
        **config,
    ) -> None:
        self.clock = SteppingClock()
        controller_config = controller_config_from_model(default_robot_model(sim=True))
        self.config = BusLoopConfig(
            controller_config,
            RealtimeConfig(sched_priority=0),
            trace_capacity=ticks + 10,
            **config,
        )
        self.controller = BusController(controller_config, lambda: None)
        self.exchange = StateExchange(snapshot_layout(self.config))
        self.node_end, loop_end = multiprocessing.Pipe(duplex=True)
        self.loop = BusLoop(
            self.config,
            self.controller,
            self.exchange,
            loop_end,
            RealtimeReport(),
            clock=self.clock,
            estop_word=estop_word,
        )
        self.loop_end = loop_end
        self.ticks = ticks
        self.work_s = work_s or {}
        self.default_work_s = default_work_s
        self.send_during = send_during or {}  # tick -> command the node sends while it runs
        self.replies: list[object] = []  # what the node end read after the run
        self.commands_seen: list[int] = []  # commands handled before each tick
        self.published_seen: list[int] = []  # snapshots published before each tick
        self.snapshot = None  # the last one the loop published (after run)
        tick = self.controller.tick

        def timed_tick(now: float) -> None:
            tick(now)
            index = self.controller.tick_index
            self.commands_seen.append(self.loop.commands_handled)
            self.published_seen.append(self.loop.writer.publish_count)
            if index in self.send_during:
                self.node_end.send(self.send_during[index])
            self.clock.advance(self.work_s.get(index, self.default_work_s))
            if index == self.ticks:
                self.loop.request_terminate()

        self.loop.controller = _TickedBy(self.controller, timed_tick)

    def run(self) -> list[float]:
        """Run to the end; returns the trace (lateness of each slot, skipped slots added)."""
        try:
            assert self.loop.run() == EXIT_TERMINATED
            while self.node_end.poll(0):
                self.replies.append(self.node_end.recv())
            layout, names = snapshot_layout(self.config), self.controller.config.joint_names
            self.snapshot = decode_snapshot(layout, names, *self.exchange.read())
            return [float(v) for v in self.exchange.trace[: self.loop.trace_count]]
        finally:
            self.node_end.close()
            self.loop_end.close()
            self.exchange.close()


def test_a_slot_that_began_less_than_a_period_ago_runs_at_once_and_lost_slots_are_skipped():
    rig = LoopRig(12, work_s={4: 0.0013, 8: 0.0025})
    trace = rig.run()
    # Tick 4 ends 0.3 ms into slot 5: slot 5 starts at once, 0.3 ms late, nothing skipped.
    assert trace[4] == pytest.approx(0.0003, abs=2e-5)
    # Tick 8 ends 1.5 ms after slot 9 began: slot 9 is skipped, slot 10 runs 0.5 ms late.
    assert trace[8] == pytest.approx(0.0015, abs=2e-5)
    punctual = [i for i in range(len(trace)) if i not in (4, 8)]
    assert max(trace[i] for i in punctual) < 2e-5
    assert rig.loop.overruns == 2
    assert rig.loop.missed_ticks == 1


def test_commands_wait_for_spare_time_but_no_longer_than_the_limit():
    busy = LoopRig(
        12,
        default_work_s=0.0008,
        spare_reserve_s=0.0004,
        command_max_wait_ticks=3,
        send_during={1: (1, 'ping', None)},
    )
    busy.run()
    # Each tick left 0.2 ms: the ping waited after ticks 1-3, after the fourth it was taken.
    assert busy.commands_seen[:5] == [0, 0, 0, 0, 1]

    roomy = LoopRig(
        6, default_work_s=0.0001, spare_reserve_s=0.0004, send_during={1: (1, 'ping', None)}
    )
    roomy.run()
    assert roomy.commands_seen[:2] == [0, 1]  # taken right after the tick it arrived in


def test_a_command_that_arrives_while_the_loop_waits_is_taken_before_the_next_tick():
    rig = LoopRig(4)
    rig.node_end.send((1, 'ping', None))  # the loop is waiting for its first tick
    rig.run()
    assert rig.commands_seen[0] == 1


class CountingWord:
    """An ESTOP word: a count that anyone adds to."""

    def __init__(self) -> None:
        self.value = 0

    def count(self) -> int:
        return self.value


def test_a_reset_clears_the_estops_asked_before_it_and_keeps_one_asked_after():
    # ESTOP (the word moves), then at once the RESET asked with that count: the loop takes
    # the command before its first tick looks at the word. The ESTOP is latched, then reset.
    word = CountingWord()
    rig = LoopRig(4, estop_word=word)
    word.value += 1
    rig.node_end.send((1, 'reset', word.value))
    rig.run()
    assert rig.replies == [(1, True, 'reset', [])]
    assert not rig.controller.safety.estop_latched
    # The snapshot counts the granted RESET, and says when: the latch came and went between
    # two snapshots.
    assert not rig.snapshot.estop and rig.snapshot.resets_granted == 1
    assert rig.snapshot.reset_granted_s <= rig.snapshot.time_s
    # An ESTOP after the RESET was asked: the RESET is refused and the ESTOP holds.
    word = CountingWord()
    rig = LoopRig(4, estop_word=word)
    rig.node_end.send((1, 'reset', word.value))
    word.value += 1
    rig.run()
    reason = 'an emergency stop came after the RESET was asked'
    assert rig.replies == [(1, False, reason, [reason])]
    assert rig.controller.safety.estop_latched
    assert rig.snapshot.estop and rig.snapshot.resets_granted == 0
    assert math.isnan(rig.snapshot.reset_granted_s)


def test_the_loop_answers_each_command_through_the_pipe_in_order():
    rig = LoopRig(6)
    rig.node_end.send((7, 'ping', None))
    rig.node_end.send((8, 'no such command', None))
    rig.run()
    assert rig.replies == [
        (7, True, 'pong', 'unconfigured'),
        (8, False, "unknown command 'no such command'", None),
    ]


def test_snapshots_are_published_on_ticks_without_tmotor_or_dynamixel_traffic():
    rig = LoopRig(21)
    rig.run()
    # published_seen[i] is the count before tick i + 1 ran: it grows after ticks 1, 6, 11, ...
    grew_after = [
        i
        for i in range(1, len(rig.published_seen))
        if rig.published_seen[i] > rig.published_seen[i - 1]
    ]
    assert grew_after == [1, 6, 11, 16]
    cycle = rig.config.controller.cycle
    assert all(
        tick % cycle.slow_divider not in (*cycle.tmotor_phases, cycle.dxl_phase)
        for tick in grew_after
    )


def test_a_due_snapshot_waits_for_spare_time_but_no_longer_than_the_limit():
    rig = LoopRig(12, default_work_s=0.0008, spare_reserve_s=0.0004, command_max_wait_ticks=3)
    rig.run()
    # Due after tick 1; each tick left 0.2 ms: written after the fourth tick.
    assert rig.published_seen[:6] == [1, 1, 1, 1, 2, 2]


def test_the_snapshot_is_written_after_the_tick_work_is_timed():
    rig = LoopRig(21, default_work_s=0.0001, stats_window_ticks=20)
    publish = rig.loop.writer.publish

    def slow_publish(*args) -> None:
        publish(*args)
        rig.clock.advance(0.0003)

    rig.loop.writer.publish = slow_publish
    rig.run()
    assert rig.loop.writer.publish_count >= 5
    # The ticks' work is 0.1 ms plus a few clock readings: the 0.3 ms writes are not in it.
    assert rig.loop.stats.work_max_s == pytest.approx(0.0001, abs=3e-5)
    assert rig.loop.overruns == 0


def test_the_quiet_phase_avoids_both_slow_phases_whenever_one_exists():
    cycle = CycleConfig(slow_divider=5, tmotor_phases=(0, 3), dxl_phase=2)
    assert quiet_phase(cycle, 5) == 1
    assert quiet_phase(cycle, 10) == 1
    assert quiet_phase(CycleConfig(slow_divider=5, tmotor_phases=(1, 2), dxl_phase=0), 5) == 3
    assert quiet_phase(cycle, 2) == 0  # every phase meets a busy tick sooner or later


@contextlib.contextmanager
def collections_recorded():
    """Automatic collection off, as in the loop process (RealtimeConfig.manual_gc); yields
    the generation of every collection that runs."""
    collected: list[int] = []

    def record(phase: str, info: dict) -> None:
        if phase == 'start':
            collected.append(info['generation'])

    was_enabled = gc.isenabled()
    gc.disable()
    gc.callbacks.append(record)
    try:
        yield collected
    finally:
        gc.callbacks.remove(record)
        if was_enabled:
            gc.enable()


def test_garbage_is_collected_in_spare_time_youngest_generation_mostly():
    with collections_recorded() as collected:
        LoopRig(41, gc_every_ticks=2).run()
    assert collected == ([0] * 9 + [1]) * 2  # ticks 2, 4, ... 40


def test_no_collection_lands_in_a_tick_without_spare_time():
    with collections_recorded() as collected:
        LoopRig(20, default_work_s=0.0009, gc_every_ticks=2).run()
    assert collected == []


def test_spare_time_settings_are_validated():
    controller_config = controller_config_from_model(default_robot_model(sim=True))
    with pytest.raises(ValueError, match='spare_reserve_s'):
        BusLoopConfig(controller_config, spare_reserve_s=0.001)
    with pytest.raises(ValueError, match='command_max_wait_ticks'):
        BusLoopConfig(controller_config, command_max_wait_ticks=-1)
    with pytest.raises(ValueError, match='gc_every_ticks'):
        BusLoopConfig(controller_config, gc_every_ticks=0)
