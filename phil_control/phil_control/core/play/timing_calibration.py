"""The timing calibration file (``phil timing-calibrate`` writes it, the score player loads it):
how far ahead of the music the motion runs (``motion_lead_s``), how much further the pedals
run (``pedal_lead_s``), and what was measured per instrument.

YAML::

    motion_lead_s: 0.0123        # the arms' mean latency: stroke commanded -> sound
    pedal_lead_s: 0.0041         # the pedals' mean latency minus the arms'
    measured:                    # per instrument, from the calibration run (informative)
      snare: {latency_s: 0.0121, p99_abs_error_s: 0.0019, drift_s: 0.0002, strokes: 4}
    source: "wav recording.wav"  # what was measured
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .session import check_motion_lead_s, check_pedal_lead_s


class CalibrationError(ValueError):
    """A calibration file that cannot be used (names the file and what is wrong)."""


@dataclass(frozen=True)
class TimingCalibration:
    """The leads the score player applies, and the per-instrument measurements behind them."""

    motion_lead_s: float
    pedal_lead_s: float
    measured: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    source: str = ''

    def as_yaml(self) -> str:
        document = {
            'motion_lead_s': round(self.motion_lead_s, 6),
            'pedal_lead_s': round(self.pedal_lead_s, 6),
            'measured': {
                name: {key: _rounded(value) for key, value in values.items()}
                for name, values in self.measured.items()
            },
            'source': self.source,
        }
        header = '# Timing calibration (phil timing-calibrate); the score player loads it.\n'
        return header + yaml.safe_dump(document, sort_keys=False)


def _rounded(value: float) -> float | int | None:
    if isinstance(value, int):
        return value
    return round(float(value), 6) if math.isfinite(value) else None


def load_timing_calibration(path: Path) -> TimingCalibration:
    """Read and check a calibration file.

    Raises:
        CalibrationError: Naming the file and the key that is missing or out of range.
    """
    try:
        document = yaml.safe_load(Path(path).read_text(encoding='utf-8'))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        raise CalibrationError(f'{path}: cannot be read: {error}') from None
    if not isinstance(document, dict):
        raise CalibrationError(f'{path}: expected a mapping with motion_lead_s and pedal_lead_s')
    leads = []
    for key, check in (
        ('motion_lead_s', check_motion_lead_s),
        ('pedal_lead_s', check_pedal_lead_s),
    ):
        value = document.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise CalibrationError(f'{path}: {key} must be a number of seconds, got {value!r}')
        try:
            check(float(value))
        except ValueError as error:
            raise CalibrationError(f'{path}: {error}') from None
        leads.append(float(value))
    measured = document.get('measured') or {}
    if not isinstance(measured, dict):
        raise CalibrationError(f'{path}: measured must be a mapping of instruments')
    return TimingCalibration(leads[0], leads[1], measured, str(document.get('source', '')))
