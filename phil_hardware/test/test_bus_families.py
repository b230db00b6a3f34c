"""The motor families behind the bus controller: each one is a MotorFamily whose hooks keep the
interface's signatures, and the controller runs them in the order its tick depends on."""

from __future__ import annotations

import inspect

import pytest

from phil_description.core import default_robot_model
from phil_description.core.trajectory import Chunk, ControlMode
from phil_hardware.core.bus_controller import BusController, MotorFamily, Transports
from phil_hardware.core.bus_controller.config import controller_config_from_model
from phil_hardware.core.bus_controller.dynamixel import DynamixelFamily
from phil_hardware.core.bus_controller.epos4_family import Epos4Family
from phil_hardware.core.bus_controller.state import Lifecycle
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


class _Latching(MotorFamily):
    """A family whose tick latches a fault part-way through (as a failed send does)."""

    def __init__(self, ctl: BusController) -> None:
        self.ctl = ctl

    def tick(self, phase, now, targets, velocities, modes) -> None:
        self.ctl.enter_hold()

    def hold(self) -> None:
        pass


class _Recording(MotorFamily):
    """A family that records what its tick was asked to send."""

    def __init__(self) -> None:
        self.seen: list[tuple[list, list, list]] = []

    def tick(self, phase, now, targets, velocities, modes) -> None:
        self.seen.append((list(targets), list(velocities), list(modes)))

    def hold(self) -> None:
        pass


def test_a_hold_latched_during_a_tick_reaches_the_families_after_it_in_that_tick():
    model = default_robot_model(sim=True)
    controller = BusController(controller_config_from_model(model), Transports)
    count = controller.measured.count
    pose = [0.001 * (i + 1) for i in range(count)]  # where the robot is: what a hold keeps
    controller.measured.position_rad[:] = pose
    torque_joints = controller.config.torque_joints  # in torque mode before the hold
    assert torque_joints
    names = controller.queue.joint_names
    start = [float(v) for v in controller.queue.target_rad]
    end = [v + 0.1 for v in start]
    modes = tuple(
        ControlMode.TORQUE if name in torque_joints else ControlMode.POSITION for name in names
    )
    assert (
        controller.queue.push(Chunk(names, 0.5, [0.0, 1.0], [start, end], control_modes=modes))
        is None
    )
    recording = _Recording()
    controller.families = (_Latching(controller), recording)
    controller.lifecycle = Lifecycle.ACTIVE
    controller.tick(1.0)  # mid-chunk: moving, at 0.1 rad/s
    ((targets, velocities, sent_modes),) = recording.seen
    assert targets == pytest.approx(pose)
    assert velocities == [0.0] * count
    assert sent_modes == [ControlMode.POSITION] * count
    recording.seen.clear()
    controller.tick(1.001)  # the next tick holds the same pose
    assert recording.seen[0][0] == pytest.approx(pose)
