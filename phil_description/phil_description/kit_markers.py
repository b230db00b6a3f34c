"""Drum-kit markers for rviz, as plain data (ROS-free) so they can be tested without rclpy."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from phil_description.core import KINEMATIC_FRAME, DrumKit

CYMBAL_RGBA = (0.85, 0.68, 0.22, 0.8)
DRUM_RGBA = (0.62, 0.10, 0.12, 0.8)
STRIKE_RGBA = {'right': (0.1, 0.4, 0.9, 1.0), 'left': (0.1, 0.8, 0.3, 1.0)}


@dataclass(frozen=True)
class MarkerSpec:
    """One marker: a pad cylinder, a strike sphere or a label, in ``frame`` (m)."""

    namespace: str
    marker_id: int
    shape: str  # 'cylinder', 'sphere' or 'text'
    position_m: tuple[float, float, float]
    scale_m: tuple[float, float, float]
    rgba: tuple[float, float, float, float]
    text: str = ''
    frame: str = KINEMATIC_FRAME


def kit_marker_specs(kit: DrumKit) -> list[MarkerSpec]:
    """Pads, per-hand strike points and labels for every instrument of ``kit``."""
    specs = []
    for instrument in kit.instruments:
        rgba = CYMBAL_RGBA if instrument.kind == 'cymbal' else DRUM_RGBA
        diameter = 2 * instrument.radius_m
        center = tuple(float(v) for v in instrument.center_m)
        specs.append(
            MarkerSpec('pads', instrument.id, 'cylinder', center, (diameter, diameter, 0.02), rgba)
        )
        label_position = (center[0], center[1], center[2] + 0.06)
        specs.append(
            MarkerSpec(
                'labels',
                instrument.id,
                'text',
                label_position,
                (0.0, 0.0, 0.04),
                (1.0, 1.0, 1.0, 1.0),
                instrument.name,
            )
        )
        for offset, (hand, strike) in enumerate(sorted(instrument.strikes.items())):
            position = tuple(float(v) for v in np.asarray(strike.position_m))
            specs.append(
                MarkerSpec(
                    f'strikes_{hand}',
                    instrument.id * 2 + offset,
                    'sphere',
                    position,
                    (0.025, 0.025, 0.025),
                    STRIKE_RGBA[hand],
                )
            )
    return specs
