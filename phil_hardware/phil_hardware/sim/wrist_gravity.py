"""The gravity load on a wrist drive: stick and hand as a point mass on a lever.

The EPOS4 device takes it as an external torque callable (:attr:`Epos4Device.external_torque_nm`);
the simulated robot wires it to the arm's present joint angles.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from phil_description.core import Epos4Params, RobotModel


def wrist_gravity_torque_nm(
    mass_kg: float, lever_m: float, gravity_m_s2: float, arm_angles_rad: Callable[[], float]
) -> Callable[[], float]:
    """Return a callable giving the wrist's gravity load in joint coordinates [N m].

    The stick and hand are a point mass ``mass_kg`` at ``lever_m`` from the wrist axis; with the
    arm plane vertical, ``tau = -m g l sin(shoulder_2 + elbow + wrist)`` (checked against the
    URDF forward kinematics).

    Args:
        mass_kg: Stick + hand mass.
        lever_m: Distance of the mass from the wrist axis.
        gravity_m_s2: Gravitational acceleration.
        arm_angles_rad: Callable returning shoulder_2 + elbow + wrist joint angles [rad].
    """
    moment = mass_kg * gravity_m_s2 * lever_m

    def torque() -> float:
        return -moment * math.sin(arm_angles_rad())

    return torque


def arm_gravity_load(
    model: RobotModel,
    wrist: str,
    motor: Epos4Params,
    gravity_m_s2: float,
    joint_positions_rad: Callable[[], np.ndarray],
) -> Callable[[], float]:
    """The gravity load of joint ``wrist`` from its arm's present angles [N m].

    Args:
        model: Robot model (joint indices of the arm).
        wrist: Wrist joint name, ``<side>_wrist``.
        motor: The wrist's drive parameters (gravity mass and lever).
        gravity_m_s2: Gravitational acceleration.
        joint_positions_rad: Callable returning the present joint angles in model order.
    """
    side = wrist.split('_')[0]
    indices = [model.joint(f'{side}_{name}').index for name in ('shoulder_2', 'elbow', 'wrist')]
    return wrist_gravity_torque_nm(
        motor.gravity_mass_kg,
        motor.gravity_lever_m,
        gravity_m_s2,
        lambda: float(sum(joint_positions_rad()[i] for i in indices)),
    )
