"""The snapshot the bus loop publishes reads back, field by field, as the controller held it:
the writer fills whole blocks of the shared vector, so a block out of place shows here."""

from __future__ import annotations

import math

import can
import pytest
import serial

from phil_description.core import default_robot_model
from phil_hardware.core.bus_controller import BusController, Transports
from phil_hardware.core.bus_controller.config import controller_config_from_model
from phil_hardware.core.transport.can_bus import CanTransport
from phil_hardware.core.transport.serial_port import SerialTransport
from phil_hardware.rt.shm import SCALAR_FIELDS, SnapshotLayout, StateExchange
from phil_hardware.rt.snapshot import SnapshotWriter, decode_snapshot

NOW_S = 500.0
LOOP_VALUES = {
    'realtime': 1,
    'tick_p50_s': 1e-6,
    'tick_p99_s': 2e-6,
    'tick_max_s': 3e-6,
    'tick_window': 1000,
    'work_p99_s': 4e-4,
    'work_max_s': 5e-4,
    'overruns': 6,
    'missed_ticks': 7,
    'loop_errors': 8,
    'commands_handled': 9,
    'resets_granted': 10,
    'trace_count': 11,
    'estop_seen': 12,
    'estop_seen_s': 13.5,
    'reset_granted_s': 14.5,
}


@pytest.fixture
def published():
    config = controller_config_from_model(default_robot_model(sim=True))
    ctl = BusController(config, Transports)
    m = ctl.measured
    n = m.count
    for k, name in enumerate(
        ('position_rad', 'velocity_rad_s', 'current_a', 'torque_mnm', 'temperature_c'), 1
    ):
        getattr(m, name)[:] = [k * 100.0 + i + 0.25 for i in range(n)]
    m.statusword[:] = [0x1000 + i for i in range(n)]
    m.error_code[:] = [i % 3 for i in range(n)]
    m.feedback_count[:] = [1000 + i for i in range(n)]
    # Joint 0 fresh, joint 1 silent for 10 s, joint 2 fresh but missing.
    m.last_feedback_s[:] = [NOW_S - 0.001] * n
    m.last_feedback_s[1] = NOW_S - 10.0
    ctl.present[2] = False
    ctl.counters.frames_rejected = 21
    ctl.counters.mode_switches = 22
    can_buses = tuple(config.can_buses)
    ctl.transports = Transports(
        can={
            bus: CanTransport(bus, can.Bus(interface='virtual', channel=f'snapshot-{bus}'))
            for bus in can_buses
        },
        serial={
            bus: SerialTransport(bus, serial.serial_for_url('loop://', timeout=0))
            for bus in config.serial_buses
        },
    )
    for k, transport in enumerate(ctl.transports.can.values()):
        transport.frames_sent, transport.frames_received = 10 * k + 1, 10 * k + 2
        transport.bits_sent, transport.bits_received = 10 * k + 3, 10 * k + 4
        transport.send_errors, transport.receive_errors, transport.echoes = k, k + 1, k + 2
    for port in ctl.transports.serial.values():
        port.packets_sent, port.bytes_sent, port.bytes_received = 31, 32, 33
        port.write_errors, port.read_errors = 34, 35
    layout = SnapshotLayout(n, (*can_buses, *config.serial_buses))
    exchange = StateExchange(layout)
    try:
        writer = SnapshotWriter(exchange, ctl, can_buses)
        writer.publish(NOW_S, LOOP_VALUES, {'realtime': {}, 'last_error': 'none'})
        yield ctl, decode_snapshot(layout, config.joint_names, *exchange.read())
    finally:
        ctl.transports.close()
        exchange.close()


def test_every_joint_field_reads_back_in_joint_order(published):
    ctl, snapshot = published
    m = ctl.measured
    targets, velocities, modes = ctl.queue.sample_view()
    assert snapshot.positions_rad == tuple(m.position_rad)
    assert snapshot.velocities_rad_s == tuple(m.velocity_rad_s)
    assert snapshot.currents_a == tuple(m.current_a)
    assert snapshot.torques_mnm == tuple(m.torque_mnm)
    assert snapshot.temperatures_c == tuple(m.temperature_c)
    assert snapshot.targets_rad == tuple(float(t) for t in targets)
    assert snapshot.target_velocities_rad_s == tuple(float(v) for v in velocities)
    assert snapshot.modes == tuple(int(v) for v in modes)
    assert snapshot.statuswords == tuple(m.statusword)
    assert snapshot.error_codes == tuple(m.error_code)
    assert snapshot.present == tuple(ctl.present)
    assert snapshot.last_feedback_s == tuple(m.last_feedback_s)
    assert snapshot.feedback_counts == tuple(m.feedback_count)


def test_connected_means_present_and_heard_within_the_joints_timeout(published):
    _ctl, snapshot = published
    assert snapshot.connected[0] is True
    assert snapshot.connected[1] is False  # silent for 10 s
    assert snapshot.connected[2] is False  # fresh, but missing
    assert all(snapshot.connected[3:])


def test_every_scalar_reads_back_under_its_own_name(published):
    ctl, snapshot = published
    for name, value in LOOP_VALUES.items():
        if name != 'realtime':
            assert getattr(snapshot, name) == pytest.approx(value), name
    assert snapshot.realtime is True
    assert snapshot.time_s == NOW_S
    assert snapshot.publish_count == 1
    assert snapshot.lifecycle == 'unconfigured'
    assert snapshot.frames_rejected == 21
    assert snapshot.mode_switches == 22
    assert snapshot.chunks_rejected == ctl.queue.rejected
    assert snapshot.queue_end_s == ctl.queue.queue_end_s or (
        math.isnan(snapshot.queue_end_s) and math.isnan(ctl.queue.queue_end_s)
    )
    assert snapshot.queued_chunks == ctl.queue.queued
    assert snapshot.last_error == 'none'
    assert SCALAR_FIELDS[-1] == 'text_version'  # the writer's last scalar


def test_every_bus_counter_reads_back_under_its_bus(published):
    ctl, snapshot = published
    for k, bus in enumerate(ctl.transports.can):
        counters = snapshot.buses[bus]
        assert (counters.frames_sent, counters.frames_received) == (10 * k + 1, 10 * k + 2)
        assert (counters.bits_sent, counters.bits_received) == (10 * k + 3, 10 * k + 4)
        assert (counters.send_errors, counters.receive_errors, counters.echoes) == (
            k,
            k + 1,
            k + 2,
        )
    for bus in ctl.transports.serial:
        counters = snapshot.buses[bus]
        assert counters.frames_sent == 31
        assert counters.frames_received == ctl.dxl_banks[bus].replies
        assert (counters.bits_sent, counters.bits_received) == (320, 330)
        assert (counters.send_errors, counters.receive_errors) == (34, 35)


def test_the_hardware_status_is_stamped_at_its_snapshot_and_says_when_the_reset_was(published):
    """A latch after the snapshot is not in the status, so the status is stamped with the
    snapshot's time (not when it went out); it says when the latest RESET was granted."""
    convert = pytest.importorskip('phil_hardware.hardware.conversions')  # needs ROS messages
    _ctl, snapshot = published
    clock = convert.ClockBridge()
    status = convert.hardware_status_msg(snapshot, 'active', True, clock)
    assert clock.to_monotonic_s(status.header.stamp) == pytest.approx(NOW_S, abs=1e-3)
    assert clock.to_monotonic_s(status.last_reset) == pytest.approx(14.5, abs=1e-3)
    assert status.resets_granted == 10
