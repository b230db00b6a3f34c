"""The hardware node's parameters: declared (each with its description) and validated once into
a frozen ``Config``, with the bus-loop configuration they make (ROS-free apart from the
declaration, so a parameter set's bus loop is checked without a node)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from phil_description.core import CanopenFrameForm, default_robot_model
from phil_description.core.liveness import DEFAULT_LIVENESS_TIMEOUT_S
from phil_description.core.model import RobotModel
from phil_hardware.core.bus_controller import (
    SequenceTiming,
    controller_config_from_model,
    relocate_buses,
)
from phil_hardware.core.realtime import RealtimeConfig
from phil_hardware.core.safety import SafetyConfig
from phil_hardware.rt import BusLoopConfig
from phil_ros.parameters import declare_parameters

# Start-up replies the node may wait longer for (e.g. simulators on a busy machine).
TIMING_PARAMETERS = ('sdo_timeout_s', 'dxl_reply_timeout_s', 'enable_timeout_s', 'feedback_wait_s')
RATE_PARAMETERS = ('joint_state_rate_hz', 'motor_state_rate_hz', 'status_rate_hz')
#: Slowest /joint_states rate allowed, Hz.
MIN_JOINT_STATE_RATE_HZ = 100.0
_TIMING = SequenceTiming()
#: The node's parameters: name -> (default, description).
PARAMETERS = {
    'sim': (False, "the URDF with the device simulators' buses instead of can0..3 and the tty"),
    'epos4_frame_form': (
        'cia301',
        "the URDF's xacro argument epos4_frame_form: cia301 (SDO downloads that state their "
        'size, 2-byte NMT and controlword frames) or upstream (SDO 0x22, 8-byte frames)',
    ),
    'sched_priority': (40, 'SCHED_FIFO priority of the bus loop (0 = normal scheduler)'),
    'cpu_affinity': ([-1], 'CPUs of the bus loop, e.g. [1]; [-1] = any'),
    'lock_memory': (True, 'mlockall in the bus-loop process'),
    'allow_missing': ([''], 'joints allowed to be absent at discovery (run a subset)'),
    'can_feedback_timeout_s': (0.05, 'CAN feedback silence that latches FEEDBACK_TIMEOUT, s'),
    'serial_feedback_timeout_s': (
        0.1,
        'Dynamixel feedback silence that latches FEEDBACK_TIMEOUT, s',
    ),
    'joint_state_rate_hz': (200.0, f'/joint_states rate, Hz (>= {MIN_JOINT_STATE_RATE_HZ:g})'),
    'motor_state_rate_hz': (20.0, '~/motor_states rate, Hz'),
    'status_rate_hz': (5.0, '~/status rate besides every change, Hz'),
    'configure_on_start': (True, 'discover the motors at start-up (no torque)'),
    'log_dir': ('', "folder for motors.csv and ticks.csv; '' = no log"),
    'can_channel_base': (
        '',
        "ff11:: group of the udp_multicast CAN buses (can0..3 on base+0..3); '' = the URDF's",
    ),
    'dxl_port': ('', "port of the Dynamixel bus; '' = the URDF's"),
    'joint_trajectory_enabled': (
        False,
        'follow ~/joint_trajectory while the planner allows it and nothing is latched',
    ),
    'watched_nodes': (
        [''],
        'nodes whose heartbeats are watched (the launcher passes the motion path): one that '
        'goes down while the drives are active latches PROCESS_DIED',
    ),
    'liveness_timeout_s': (
        DEFAULT_LIVENESS_TIMEOUT_S,
        'a running watched node silent this long counts as down, s',
    ),
    'node_timeout_s': (
        DEFAULT_LIVENESS_TIMEOUT_S,
        'the bus loop holds the robot when this node is silent this long, s',
    ),
    'sdo_timeout_s': (_TIMING.sdo_timeout_s, 'EPOS4 SDO reply wait at configure, s'),
    'dxl_reply_timeout_s': (
        _TIMING.dxl_reply_timeout_s,
        'Dynamixel status-packet wait (5 tries), s',
    ),
    'enable_timeout_s': (_TIMING.enable_timeout_s, 'CiA 402 "operation enabled" wait, s'),
    'feedback_wait_s': (_TIMING.feedback_wait_s, 'first feedback of every motor at activate, s'),
}
#: Read again at every configure, so they may change between configures (e.g. allow_missing
#: after a failed discovery); the others are read once, at start-up, and are read-only.
BUS_LOOP_PARAMETERS = (
    'sched_priority',
    'cpu_affinity',
    'lock_memory',
    'allow_missing',
    'can_feedback_timeout_s',
    'serial_feedback_timeout_s',
    'can_channel_base',
    'dxl_port',
    'node_timeout_s',
    *TIMING_PARAMETERS,
)


@dataclass(frozen=True)
class Config:
    """The validated parameters (names, defaults and units: ``PARAMETERS``)."""

    model: RobotModel  # the URDF's robot; its buses are the simulators' if ``sim``
    bus_loop: BusLoopConfig  # at start-up; ``current_bus_loop`` reads it again
    joint_state_rate_hz: float
    motor_state_rate_hz: float
    status_rate_hz: float
    configure_on_start: bool
    log_dir: Path | None
    joint_trajectory_enabled: bool
    watched_nodes: tuple[str, ...]
    liveness_timeout_s: float

    @classmethod
    def from_parameters(cls, node, estop_word: str) -> Config:
        """Declare every parameter on ``node`` (read-only unless in ``BUS_LOOP_PARAMETERS``)
        and validate them; ``estop_word`` names the bus loop's ESTOP word.

        Raises:
            ValueError: Naming the first bad parameter and what it allows.
        """
        values = declare_parameters(node, PARAMETERS, writable=BUS_LOOP_PARAMETERS)
        return cls.from_values(values, estop_word)

    @classmethod
    def from_values(cls, values: Mapping, estop_word: str) -> Config:
        """Validate parameter ``values`` (every name of ``PARAMETERS``).

        Raises:
            ValueError: Naming the first bad parameter and what it allows.
        """
        rates = publish_rates_hz(values)
        liveness_timeout_s = float(values['liveness_timeout_s'])
        if not (math.isfinite(liveness_timeout_s) and liveness_timeout_s > 0.0):
            raise ValueError(
                f'parameter liveness_timeout_s must be positive and finite, got '
                f'{liveness_timeout_s}'
            )
        form = str(values['epos4_frame_form'])
        if form not in {choice.value for choice in CanopenFrameForm}:
            choices = ', '.join(choice.value for choice in CanopenFrameForm)
            raise ValueError(f'parameter epos4_frame_form = {form!r} must be one of: {choices}')
        model = default_robot_model(bool(values['sim']), form)
        return cls(
            model=model,
            bus_loop=bus_loop_config(values, model, estop_word),
            configure_on_start=bool(values['configure_on_start']),
            log_dir=Path(values['log_dir']) if values['log_dir'] else None,
            joint_trajectory_enabled=bool(values['joint_trajectory_enabled']),
            watched_nodes=tuple(name for name in values['watched_nodes'] if name),
            liveness_timeout_s=liveness_timeout_s,
            **rates,
        )

    def current_bus_loop(self, node) -> BusLoopConfig:
        """The bus-loop configuration from the current values of ``BUS_LOOP_PARAMETERS``.

        Raises:
            ValueError: Naming a bad parameter.
        """
        values = {name: node.get_parameter(name).value for name in BUS_LOOP_PARAMETERS}
        return bus_loop_config(values, self.model, self.bus_loop.estop_word)


def publish_rates_hz(values: Mapping) -> dict[str, float]:
    """The publishing rates by parameter name.

    Raises:
        ValueError: A rate is not positive, or joint states are slower than 100 Hz.
    """
    rates = {name: float(values[name]) for name in RATE_PARAMETERS}
    for name, rate in rates.items():
        if not (math.isfinite(rate) and rate > 0.0):
            raise ValueError(f'parameter {name} must be positive and finite, got {rate}')
    if rates['joint_state_rate_hz'] < MIN_JOINT_STATE_RATE_HZ:
        raise ValueError(
            f'parameter joint_state_rate_hz must be >= {MIN_JOINT_STATE_RATE_HZ:g} Hz, got '
            f'{rates["joint_state_rate_hz"]}'
        )
    return rates


def bus_loop_config(values: Mapping, model: RobotModel, estop_word: str) -> BusLoopConfig:
    """The bus-loop configuration from parameter ``values`` for robot ``model``.

    Raises:
        ValueError: ``allow_missing`` names an unknown joint, a bus override does not fit the
            URDF's buses, or a timeout is not positive.
    """
    affinity = tuple(int(c) for c in values['cpu_affinity'] if int(c) >= 0)
    missing = tuple(name for name in values['allow_missing'] if name)
    unknown = [name for name in missing if name not in model.joint_names]
    if unknown:
        raise ValueError(
            f'parameter allow_missing: unknown joint(s) {", ".join(map(repr, unknown))}; '
            f'valid joints: {", ".join(model.joint_names)}'
        )
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
