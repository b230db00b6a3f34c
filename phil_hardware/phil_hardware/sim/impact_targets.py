"""What the impact detector watches: the limbs, a disc per hand and instrument, the pedals.

Built once from the robot model's kit (see :mod:`.impacts` for the detection model): every stick
instrument becomes a horizontal disc per hand at that hand's strike height, the hi-hat discs are
gated by the hi-hat pedal, and every pedal instrument becomes a hit angle of its pedal joint.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from phil_description.core import RobotModel

if TYPE_CHECKING:
    from phil_hardware.sim.impacts import ImpactConfig


class Limb(str, enum.Enum):
    """What struck; ``code`` is the matching ``phil_msgs/HitEvent`` LIMB_* constant."""

    RIGHT_HAND = 'right_hand'
    LEFT_HAND = 'left_hand'
    RIGHT_FOOT = 'right_foot'
    LEFT_FOOT = 'left_foot'

    @property
    def code(self) -> int:
        """HitEvent LIMB_* value (0 right hand, 1 left hand, 2 right foot, 3 left foot)."""
        return list(Limb).index(self)


HAND_LIMBS = (Limb.RIGHT_HAND, Limb.LEFT_HAND)  # order of model.stick_tip_positions


@dataclass(frozen=True)
class Pad:
    """The disc one hand hits an instrument on."""

    instrument: str
    instrument_id: int
    height_m: float
    center_xy: np.ndarray = field(compare=False)
    radius_m: float
    strike_m: np.ndarray = field(compare=False)
    gate_joint: int = -1  # pedal joint index deciding whether this disc exists, or -1
    gate_open: bool = True  # True: exists while the pedal is above the threshold


@dataclass(frozen=True)
class Pedal:
    """The angle at which a pedal joint hits an instrument."""

    instrument: str
    instrument_id: int
    limb: Limb
    joint: int
    angle_rad: float


def build_pads(model: RobotModel, config: ImpactConfig) -> tuple[list[Pad], list[Pad]]:
    """The discs of every stick instrument, per hand in :data:`HAND_LIMBS` order.

    Raises:
        KeyError: If the open hi-hat's pedal joint is not in the model.
    """
    kit = model.kit
    gate_joint = -1
    names = kit.names
    if config.open_hihat in names and config.closed_hihat in names:
        pedal = kit.by_name(config.open_hihat).pedal_joint
        gate_joint = model.joint(pedal).index if pedal else -1
    pads: tuple[list[Pad], list[Pad]] = ([], [])
    for instrument in kit.instruments:
        gate_open = instrument.name != config.closed_hihat
        gated = gate_joint >= 0 and instrument.name in (config.open_hihat, config.closed_hihat)
        for hand_index, hand in enumerate(('right', 'left')):
            strike = instrument.strikes.get(hand)
            if strike is None:
                continue
            pads[hand_index].append(
                Pad(
                    instrument.name,
                    instrument.id,
                    float(strike.position_m[2]),
                    np.asarray(instrument.center_m[:2], dtype=float),
                    instrument.radius_m * config.radius_scale,
                    np.asarray(strike.position_m, dtype=float),
                    gate_joint if gated else -1,
                    gate_open,
                )
            )
    return pads


def build_pedals(model: RobotModel, config: ImpactConfig) -> list[Pedal]:
    """The bass drum pedals and, with ``config.hihat_close_event``, the hi-hat pedal.

    Raises:
        KeyError: If a pedal joint or the configured closed hi-hat is not in the model.
    """
    pedals = []
    for instrument in model.kit.instruments:
        if not instrument.pedal_joint:
            continue
        joint = model.joint(instrument.pedal_joint)
        limb = Limb.RIGHT_FOOT if joint.name.startswith('right') else Limb.LEFT_FOOT
        if not instrument.strikes:
            pedals.append(
                Pedal(
                    instrument.name,
                    instrument.id,
                    limb,
                    joint.index,
                    config.bass_press_angle_rad,
                )
            )
        elif config.hihat_close_event and instrument.name == config.open_hihat:
            closed = model.kit.by_name(config.closed_hihat)
            pedals.append(
                Pedal(closed.name, closed.id, limb, joint.index, config.hihat_close_angle_rad)
            )
    return pedals
