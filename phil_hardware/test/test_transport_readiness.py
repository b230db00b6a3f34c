"""Only the buses with input are drained: real udp_multicast buses (loopback-only groups), a
bus without a descriptor, a socket that failed; and the controller drains what arrives."""

from __future__ import annotations

import random
import socket
import time

import can
import pytest

from phil_description.core import CanBusParams
from phil_hardware.core.codecs.frame import CanFrame
from phil_hardware.core.transport import CanTransport, open_can_bus
from phil_hardware.core.transport.readiness import InputReadiness, descriptor

WAIT_S = 10.0  # a bound on waits for what must come, never an expectation of speed


def multicast_bus(name: str, group: str) -> CanTransport:
    return CanTransport(name, open_can_bus(CanBusParams(name, 'udp_multicast', group, 10**6)))


def ready_within(readiness: InputReadiness, expected: set[str]) -> list[str]:
    deadline = time.monotonic() + WAIT_S
    ready = readiness.ready()
    while set(ready) != expected and time.monotonic() < deadline:
        time.sleep(0.001)
        ready = readiness.ready()
    return ready


@pytest.fixture
def buses():
    groups = random.sample(range(0x7000, 0xFFFF), 2)
    opened = {
        'can0': multicast_bus('can0', f'ff11::7068:{groups[0]:x}'),
        'can1': multicast_bus('can1', f'ff11::7068:{groups[1]:x}'),
    }
    senders = {
        bus: multicast_bus(bus, f'ff11::7068:{g:x}') for bus, g in zip(opened, groups, strict=True)
    }
    yield opened, senders
    for transport in (*opened.values(), *senders.values()):
        transport.close()


def test_a_bus_is_ready_only_while_it_has_input(buses):
    opened, senders = buses
    readiness = InputReadiness(opened)
    assert readiness.ready() == []
    assert senders['can1'].send(CanFrame(0x181, b'\x01'))
    assert ready_within(readiness, {'can1'}) == ['can1']
    frames: list[CanFrame] = []
    assert opened['can1'].drain(frames) == 1
    assert frames == [CanFrame(0x181, b'\x01')]
    assert readiness.ready() == []  # drained: nothing left to poll for


def test_a_bus_without_a_descriptor_is_always_drained(buses):
    opened, _ = buses
    virtual = CanTransport('can2', can.Bus(interface='virtual', channel='readiness-no-fd'))
    try:
        assert descriptor(virtual) is None
        readiness = InputReadiness({**opened, 'can2': virtual})
        assert readiness.ready() == ['can2']
    finally:
        virtual.close()


def test_a_failed_socket_counts_as_input_so_its_drain_reports_it():
    failed = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)

    class ClosedBus:
        def fileno(self) -> int:
            return failed.fileno()

    readiness = InputReadiness({'can0': ClosedBus()})
    fd = failed.fileno()
    failed.close()  # the descriptor is now invalid: poll reports POLLNVAL for it
    assert fd >= 0
    assert readiness.ready() == ['can0']


def test_the_controller_drains_a_bus_once_it_has_input():
    from phil_description.core import default_robot_model
    from phil_hardware.core.bus_controller import BusController, Transports
    from phil_hardware.core.bus_controller.config import controller_config_from_model

    model = default_robot_model(sim=True)
    groups = random.sample(range(0x7000, 0xFFFF), len(model.hardware.can_buses))
    params = {
        bus: CanBusParams(bus, 'udp_multicast', f'ff11::7068:{g:x}', 10**6)
        for bus, g in zip(model.hardware.can_buses, groups, strict=True)
    }
    config = controller_config_from_model(model, can_buses=params)
    ctl = BusController(config, Transports)
    ctl.transports = Transports(
        can={bus: CanTransport(bus, open_can_bus(p)) for bus, p in params.items()}
    )
    ctl.build_dispatch()
    sender = CanTransport('x', open_can_bus(next(iter(params.values()))))
    try:
        ctl.poll(0.0)  # nothing yet: nothing handled
        assert ctl.counters.frames_unexpected == 0
        assert sender.send(CanFrame(0x7FF, b'\x00'))  # no motor has this id
        deadline = time.monotonic() + WAIT_S
        while ctl.counters.frames_unexpected == 0 and time.monotonic() < deadline:
            ctl.poll(0.0)
            time.sleep(0.001)
        assert ctl.counters.frames_unexpected == 1
    finally:
        sender.close()
        ctl.transports.close()
