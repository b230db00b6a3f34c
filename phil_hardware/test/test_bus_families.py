"""The motor families behind the bus controller: each one is a MotorFamily whose hooks keep the
interface's signatures, and the controller runs them in the order its tick depends on."""

from __future__ import annotations

import inspect

import pytest

from phil_description.core import default_robot_model
from phil_hardware.core.bus_controller import BusController, MotorFamily, Transports
from phil_hardware.core.bus_controller.config import controller_config_from_model
from phil_hardware.core.bus_controller.dynamixel import DynamixelFamily
from phil_hardware.core.bus_controller.epos4_family import Epos4Family
from phil_hardware.core.bus_controller.tmotor import TMotorFamily

FAMILIES = (Epos4Family, TMotorFamily, DynamixelFamily)
HOOKS = [
    name
    for name, member in vars(MotorFamily).items()
    if inspect.isfunction(member) and not name.startswith('_')
]


@pytest.mark.parametrize('family', FAMILIES, ids=lambda f: f.__name__)
@pytest.mark.parametrize('hook', HOOKS)
def test_each_family_keeps_the_signature_of_every_hook(family, hook):
    assert issubclass(family, MotorFamily)
    expected = inspect.signature(getattr(MotorFamily, hook))
    assert list(inspect.signature(getattr(family, hook)).parameters) == list(expected.parameters)


def test_every_family_sends_cyclic_commands_and_releases_its_motors():
    for family in FAMILIES:
        assert family.tick is not MotorFamily.tick
        assert family.release is not MotorFamily.release
        assert family.bind_feedback is not MotorFamily.bind_feedback


def test_the_controller_runs_epos4_first_then_tmotor_then_dynamixel():
    # EPOS4 first: its targets and the SYNC open every tick at a steady time.
    config = controller_config_from_model(default_robot_model(sim=True))
    controller = BusController(config, Transports)
    assert [type(f) for f in controller.families] == list(FAMILIES)
    assert controller.families[0].group is controller.epos
    assert controller.families[1].group is controller.tmotors
    assert controller.families[2].banks is controller.dxl_banks
