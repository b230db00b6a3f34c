"""The bus overrides the hardware node applies (``can_channel_base``, ``dxl_port``): the buses
land where the device simulator's runner puts them, and only simulated CAN buses can move."""

from __future__ import annotations

import pytest

rclpy = pytest.importorskip('rclpy')

from phil_description.core import default_robot_model  # noqa: E402
from phil_hardware.core.bus_controller import relocate_buses  # noqa: E402
from phil_hardware.sim.runner import can_channels  # noqa: E402

pytestmark = pytest.mark.timeout(120)
MODEL = default_robot_model(sim=True)


def test_bus_overrides_map_the_buses_like_the_simulator_runner():
    base = 'ff11::7068:4a00'
    can_buses, serial_buses = relocate_buses(
        MODEL.hardware.can_buses,
        MODEL.hardware.serial_buses,
        can_channel_base=base,
        serial_port='/tmp/x/ttyDXL',
    )
    assert {name: bus.channel for name, bus in can_buses.items()} == can_channels(MODEL, base, ())
    assert can_buses['can3'].channel == 'ff11::7068:4a03'
    assert serial_buses['dxl'].port == '/tmp/x/ttyDXL'
    assert can_buses['can0'].bitrate == MODEL.hardware.can_buses['can0'].bitrate
    with pytest.raises(ValueError, match='not an IPv6 address'):
        relocate_buses(MODEL.hardware.can_buses, {}, can_channel_base='can0')
    real = default_robot_model(sim=False)
    with pytest.raises(ValueError, match='not udp_multicast'):
        relocate_buses(real.hardware.can_buses, {}, can_channel_base=base)
