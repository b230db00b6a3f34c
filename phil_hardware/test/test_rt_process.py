"""The bus loop in its own process against the simulator over udp_multicast (unique ff11::
groups per test) and a PTY: start, configure, activate, chunk, snapshots, ESTOP, reset, stop."""

from __future__ import annotations

import _thread
import gc
import math
import os
import random
import signal
import subprocess
import sys
import threading
import time
from dataclasses import replace
from multiprocessing import resource_tracker

import numpy as np
import pytest

from phil_description.core import CanBusParams, default_robot_model
from phil_description.core.trajectory import Chunk
from phil_hardware.core.bus_controller import controller_config_from_model
from phil_hardware.core.realtime import RealtimeConfig
from phil_hardware.core.safety import FaultCode, SafetyConfig
from phil_hardware.core.transport import open_can_bus
from phil_hardware.rt import BusLoopClient, BusLoopConfig, BusLoopError
from phil_hardware.rt.loop import EXIT_NODE_GONE, EXIT_TERMINATED
from phil_hardware.rt.shm import SHARED_BLOCK_PREFIX
from phil_hardware.sim import PtyPort, SimulatedRobot
from phil_hardware.sim.cia402 import torque_on

pytestmark = pytest.mark.timeout(90)
DEG = math.pi / 180.0
# The simulator shares this test's interpreter (and the machine's two cores): feedback can be
# late by tens of ms, so supervision is relaxed here; the robot uses 50/100 ms.
RELAXED = SafetyConfig(can_feedback_timeout_s=0.5, serial_feedback_timeout_s=0.5)


@pytest.fixture(scope='module')
def model():
    return default_robot_model(sim=True)


@pytest.fixture
def simulated(model):
    base = random.randint(0x1000, 0xFFF0)
    params = {
        name: CanBusParams(name, 'udp_multicast', f'ff11::7068:{base + i:x}', 1_000_000)
        for i, name in enumerate(model.hardware.can_buses)
    }
    buses = {name: open_can_bus(p) for name, p in params.items()}
    pty = PtyPort()
    robot = SimulatedRobot(model, buses, pty).start()
    serial = {'dxl': replace(model.hardware.serial_buses['dxl'], port=pty.slave_path)}
    yield robot, params, serial
    robot.stop()
    for bus in buses.values():
        bus.shutdown()
    pty.close()


def make_client(model, params, serial, priority: int) -> BusLoopClient:
    controller = controller_config_from_model(
        model, can_buses=params, serial_buses=serial, safety=RELAXED
    )
    return BusLoopClient(BusLoopConfig(controller, RealtimeConfig(sched_priority=priority)))


def wait_for(client, predicate, timeout_s=15.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        snapshot = client.snapshot()
        if snapshot is not None and predicate(snapshot):
            return snapshot
        time.sleep(0.01)
    raise AssertionError(f'condition not met; last snapshot {client.snapshot()}')


def test_full_cycle_with_sched_fifo(model, simulated):
    robot, params, serial = simulated
    client = make_client(model, params, serial, priority=40)
    client.start()
    try:
        assert client.realtime_report['realtime'] is (os.geteuid() == 0)
        configured = client.configure().result(15)
        assert configured.ok, configured.detail
        assert wait_for(client, lambda s: s.lifecycle == 'inactive').missing_motors == ()
        activated = client.activate().result(15)
        assert activated.ok, activated.detail
        snapshot = wait_for(client, lambda s: s.lifecycle == 'active')
        start = np.array(snapshot.targets_rad)
        goal = model.poses['ready']
        times = np.linspace(0.0, 1.0, 21)[1:]
        s = (1 - np.cos(np.pi * times)) / 2
        ds = np.pi * np.sin(np.pi * times) / 2
        chunk = Chunk(
            model.joint_names,
            time.monotonic() + 0.5,
            times,
            start + np.outer(s, goal - start),
            velocities_rad_s=np.outer(ds, goal - start),
            sequence=7,
        )
        # Sending never waits for the bus loop: it returns while the loop is stopped (and
        # cannot answer), and the answer comes once it runs again.
        os.kill(client.pid, signal.SIGSTOP)
        try:
            future = client.send_chunk(chunk)
            assert not future.done()
        finally:
            os.kill(client.pid, signal.SIGCONT)
        assert future.result(15).ok
        first = client.snapshot().publish_count
        wait_for(client, lambda s: s.publish_count > first)  # snapshots keep coming
        done = wait_for(
            client,
            lambda s: np.degrees(np.abs(np.array(s.positions_rad) - goal)).max() < 0.5,
        )
        assert done.faults == () and done.chunks_accepted == 1
        stats = wait_for(client, lambda s: s.tick_window == 1000)  # first full window
        assert math.isfinite(stats.tick_p99_s) and stats.tick_max_s >= stats.tick_p50_s
        assert done.buses['can3'].frames_sent > 1000 and done.buses['dxl'].frames_received > 0
        assert done.connected == (True,) * 13
        bad = Chunk(('nose',), time.monotonic(), [0.1], [[0.0]], sequence=8)
        rejected = client.send_chunk(bad).result(15)
        assert not rejected.ok and "unknown joint(s) 'nose'" in rejected.detail
        client.estop().result(15)
        held = wait_for(client, lambda s: s.estop)
        assert held.faults[0].code == FaultCode.ESTOP and held.holding
        reset = client.reset().result(15)
        assert reset.ok, reset.detail
        assert wait_for(client, lambda s: not s.estop).faults == ()
    finally:
        code = client.stop()
    assert code == 0


def test_runs_without_sched_fifo_and_reports_it(model, simulated):
    _, params, serial = simulated
    client = make_client(model, params, serial, priority=0)
    client.start()
    try:
        assert client.realtime_report['realtime'] is False
        assert client.configure().result(15).ok
        snapshot = wait_for(client, lambda s: s.lifecycle == 'inactive')
        assert snapshot.realtime is False
        assert any('SCHED_FIFO not requested' in m for m in snapshot.messages)
    finally:
        assert client.stop() == 0


def test_a_dead_loop_is_reported_and_commands_fail_cleanly(model, simulated):
    _, params, serial = simulated
    client = make_client(model, params, serial, priority=0)
    client.start()
    wait_for(client, lambda s: s.lifecycle == 'unconfigured')
    os.kill(client.pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while client.alive and time.monotonic() < deadline:
        time.sleep(0.01)
    snapshot = client.snapshot()
    assert snapshot.faults[-1].code == FaultCode.PROCESS_DIED
    with pytest.raises(BusLoopError, match='exited'):
        client.configure().result(15)
    assert client.stop() == -signal.SIGKILL


def test_a_silent_node_and_the_estop_word_of_another_process_latch_the_active_loop(
    model, simulated
):
    """The loop holds the robot on its own when its node stops counting heartbeats (stopped,
    hung, dead), and latches ESTOP from the ESTOP word whoever adds to it."""
    _, params, serial = simulated
    controller = controller_config_from_model(
        model, can_buses=params, serial_buses=serial, safety=RELAXED
    )
    # Generous: the beating thread shares two cores with the simulator and the loop.
    client = BusLoopClient(
        BusLoopConfig(controller, RealtimeConfig(sched_priority=0), node_timeout_s=5.0)
    )
    beating, stop = threading.Event(), threading.Event()

    def beat() -> None:
        while not stop.wait(0.02):
            if beating.is_set():
                client.beat()

    beater = threading.Thread(target=beat, daemon=True)
    client.start()
    beater.start()
    try:
        beating.set()
        assert client.configure().result(15).ok and client.activate().result(15).ok
        wait_for(client, lambda s: s.lifecycle == 'active')
        beating.clear()

        def node_silence(snapshot) -> list:
            return [fault for fault in snapshot.faults if fault.code == FaultCode.PROCESS_DIED]

        silent = wait_for(client, node_silence, timeout_s=15.0)
        assert 'hardware node stopped responding' in node_silence(silent)[0].reason
        assert silent.holding
        beating.set()
        # A loaded machine can also delay the simulator's feedback past RELAXED: then the
        # reset waits for it to come back.
        assert wait_for_true(lambda: client.reset().result(15).ok, 15.0)
        wait_for(client, lambda s: not s.faults)
        name = client.config.estop_word
        subprocess.run(
            [
                sys.executable,
                '-c',
                'import sys; from phil_description.core.'
                'estop_word import trigger_estop; sys.exit(bool(trigger_estop('
                'sys.argv[1])))',
                name,
            ],
            check=True,
            timeout=60,
        )
        held = wait_for(client, lambda s: s.estop)
        assert held.faults[0].code == FaultCode.ESTOP and held.holding
    finally:
        stop.set()
        beater.join(2.0)
        assert client.stop() == 0
    assert not os.path.exists(f'/dev/shm/{name}')  # the private ESTOP word is gone too


def _spawned_children() -> set[int]:
    """Live (not yet reaped) child processes of this interpreter."""
    children: set[int] = set()
    for task in os.listdir('/proc/self/task'):
        with open(f'/proc/self/task/{task}/children') as listing:
            children.update(int(pid) for pid in listing.read().split())
    return children


@pytest.mark.parametrize('moment', ['spawning', 'waiting for ready'])
def test_ctrl_c_during_start_stops_the_child_and_frees_the_shared_block(
    model, simulated, capfd, moment
):
    """Ctrl-C while the bus loop is spawned or still starting: nothing is left behind."""
    _, params, serial = simulated
    client = make_client(model, params, serial, priority=0)
    resource_tracker.ensure_running()  # a child of its own, started by the first spawn
    before = _spawned_children()

    def interrupt_start() -> None:
        # The spawn takes a few ms, then the child needs ~0.5 s to import and report ready.
        def spawning() -> bool:
            return any(t.name == 'phil-bus-loop-spawn' for t in threading.enumerate())

        while client.pid is None and not (moment == 'spawning' and spawning()):
            time.sleep(0.0005)
        _thread.interrupt_main()

    # CI may start the tests with SIGINT ignored; Ctrl-C needs Python's own handler.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        interrupter = threading.Thread(target=interrupt_start)
        interrupter.start()
        with pytest.raises(KeyboardInterrupt):
            client.start()
            time.sleep(10.0)  # the interrupt must land in start(); the checks below say if not
        interrupter.join()
    finally:
        signal.signal(signal.SIGINT, previous)
    gc.collect()
    assert not client.alive
    assert _spawned_children() - before == set()
    ours = (f'{SHARED_BLOCK_PREFIX}{os.getpid()}_', f'phil_estop_private_{os.getpid()}_')
    assert [name for name in os.listdir('/dev/shm') if name.startswith(ours)] == []
    assert 'Exception ignored' not in capfd.readouterr().err


def test_sigterm_leaves_the_motors_safe_and_a_stray_ctrl_c_is_ignored(model, simulated):
    robot, params, serial = simulated
    client = make_client(model, params, serial, priority=0)
    client.start()
    try:
        assert client.configure().result(15).ok
        assert client.activate().result(15).ok
        wrist = robot.device('right_wrist')
        assert wait_for_true(lambda: torque_on(wrist.power_state))
        os.kill(client.pid, signal.SIGINT)  # meant for the node: the loop keeps running
        time.sleep(0.3)
        assert client.alive
        os.kill(client.pid, signal.SIGTERM)
        assert wait_for_true(lambda: not client.alive, 10.0)
        assert client.exitcode == EXIT_TERMINATED
        # The power stage was shut down before the exit (the simulator may read it later).
        assert wait_for_true(lambda: not torque_on(wrist.power_state))
    finally:
        client.stop()


def test_ctrl_c_during_stop_still_lets_the_loop_leave_safely_and_frees_the_block(model, simulated):
    _, params, serial = simulated
    client = make_client(model, params, serial, priority=0)
    client.start()
    pid = client.pid
    os.kill(pid, signal.SIGSTOP)  # a loop that cannot answer: stop() waits for it
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        threading.Timer(0.3, _thread.interrupt_main).start()
        with pytest.raises(KeyboardInterrupt):
            client.stop(timeout_s=5.0)
            time.sleep(10.0)  # the interrupt must land in stop(); the checks below say if not
    finally:
        signal.signal(signal.SIGINT, previous)
        os.kill(pid, signal.SIGCONT)
    assert wait_for_true(lambda: not client.alive, 10.0)
    # Either way the loop stopped the motors itself: the shutdown command already in the pipe,
    # or the closed pipe.
    assert client.exitcode in (0, EXIT_NODE_GONE)
    ours = f'{SHARED_BLOCK_PREFIX}{os.getpid()}_'
    assert [name for name in os.listdir('/dev/shm') if name.startswith(ours)] == []


def wait_for_true(predicate, timeout_s=15.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()
