"""The hardware node's parameters: names and defaults, and what they configure (ROS-free, so
the bus-loop configuration a parameter set makes is checked without a node)."""

from __future__ import annotations

from collections.abc import Mapping

from phil_description.core.liveness import DEFAULT_LIVENESS_TIMEOUT_S
from phil_hardware.core.bus_controller import (
    SequenceTiming,
    controller_config_from_model,
    relocate_buses,
)
from phil_hardware.core.realtime import RealtimeConfig
from phil_hardware.core.safety import SafetyConfig
from phil_hardware.rt import BusLoopConfig

# Start-up replies the node may wait longer for (e.g. simulators on a busy machine).
TIMING_PARAMETERS = ('sdo_timeout_s', 'dxl_reply_timeout_s', 'enable_timeout_s', 'feedback_wait_s')
RATE_PARAMETERS = ('joint_state_rate_hz', 'motor_state_rate_hz', 'status_rate_hz')
PARAMETERS = {
    'sim': False,
    'sched_priority': 40,
    'cpu_affinity': [-1],
    'lock_memory': True,
    'allow_missing': [''],
    'can_feedback_timeout_s': 0.05,
    'serial_feedback_timeout_s': 0.1,
    'joint_state_rate_hz': 200.0,
    'motor_state_rate_hz': 20.0,
    'status_rate_hz': 5.0,
    'configure_on_start': True,
    'log_dir': '',
    'can_channel_base': '',
    'dxl_port': '',
    'joint_trajectory_enabled': False,
    'watched_nodes': [''],
    'liveness_timeout_s': DEFAULT_LIVENESS_TIMEOUT_S,
    'node_timeout_s': DEFAULT_LIVENESS_TIMEOUT_S,
    **{name: getattr(SequenceTiming(), name) for name in TIMING_PARAMETERS},
}


def publish_rates_hz(values: Mapping) -> dict[str, float]:
    """The publishing rates by parameter name.

    Raises:
        ValueError: A rate is not positive, or joint states are slower than 100 Hz.
    """
    rates = {name: float(values[name]) for name in RATE_PARAMETERS}
    if rates['joint_state_rate_hz'] < 100.0 or min(rates.values()) <= 0:
        raise ValueError(f'hardware: rates {rates} must be positive, joint states >= 100 Hz')
    return rates


def bus_loop_config(values: Mapping, model, estop_word: str) -> BusLoopConfig:
    """The bus-loop configuration from parameter ``values`` for robot ``model``.

    Raises:
        KeyError: ``allow_missing`` names an unknown joint.
        ValueError: A bus override does not fit the URDF's buses.
    """
    affinity = tuple(int(c) for c in values['cpu_affinity'] if int(c) >= 0)
    missing = tuple(name for name in values['allow_missing'] if name)
    for name in missing:
        model.joint(name)  # KeyError names an unknown joint
    timing = {name: float(values[name]) for name in TIMING_PARAMETERS}
    safety = SafetyConfig(
        can_feedback_timeout_s=float(values['can_feedback_timeout_s']),
        serial_feedback_timeout_s=float(values['serial_feedback_timeout_s']),
    )
    can_buses, serial_buses = relocate_buses(
        model.hardware.can_buses,
        model.hardware.serial_buses,
        can_channel_base=str(values['can_channel_base']),
        serial_port=str(values['dxl_port']),
    )
    return BusLoopConfig(
        estop_word=estop_word,
        node_timeout_s=float(values['node_timeout_s']),
        controller=controller_config_from_model(
            model,
            safety=safety,
            timing=SequenceTiming(**timing),
            allow_missing=missing,
            can_buses=can_buses,
            serial_buses=serial_buses,
        ),
        realtime=RealtimeConfig(
            sched_priority=int(values['sched_priority']),
            cpu_affinity=affinity,
            lock_memory=bool(values['lock_memory']),
        ),
    )
