"""The state snapshot the node reads: writing it (loop side) and decoding it (node side)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import numpy as np

from phil_hardware.core.faults import Fault

from .shm import BUS_FIELDS, LIFECYCLE_CODES, SCALAR_FIELDS, SnapshotLayout, StateExchange


@dataclass(frozen=True)
class BusCounters:
    """Traffic of one bus since start. CAN: frames and worst-case wire bits. Serial: packets
    written, replies read, and 10 bits per byte (8N1)."""

    frames_sent: int
    frames_received: int
    bits_sent: int
    bits_received: int
    send_errors: int
    receive_errors: int
    echoes: int


@dataclass(frozen=True)
class BusSnapshot:
    """State of the bus loop at ``time_s`` (robot monotonic clock). Per-joint tuples follow
    ``joint_names``; unmeasured values are NaN.

    Tick statistics are the wake-up lateness of each tick relative to its absolute deadline
    (``tick_*``) and the work time of a tick (``work_*``) over the last completed window of
    ``tick_window`` ticks.
    """

    time_s: float
    publish_count: int
    ticks: int
    lifecycle: str
    realtime: bool
    estop: bool
    holding: bool
    joint_names: tuple[str, ...]
    positions_rad: tuple[float, ...]
    velocities_rad_s: tuple[float, ...]
    currents_a: tuple[float, ...]
    torques_mnm: tuple[float, ...]
    temperatures_c: tuple[float, ...]
    targets_rad: tuple[float, ...]
    target_velocities_rad_s: tuple[float, ...]
    modes: tuple[int, ...]
    statuswords: tuple[int, ...]
    error_codes: tuple[int, ...]
    connected: tuple[bool, ...]
    present: tuple[bool, ...]
    last_feedback_s: tuple[float, ...]
    feedback_counts: tuple[int, ...]
    motor_status: tuple[str, ...]
    faults: tuple[Fault, ...]
    missing_motors: tuple[str, ...]
    queued_chunks: int
    queue_end_s: float
    active_sequence: int
    chunks_accepted: int
    chunks_rejected: int
    chunks_superseded: int
    last_reject_reason: str
    frames_rejected: int
    frames_unexpected: int
    frames_skipped: int
    sdo_aborts: int
    mode_switches: int
    dxl_missed_replies: int
    tick_p50_s: float
    tick_p99_s: float
    tick_max_s: float
    tick_window: int
    work_p99_s: float
    work_max_s: float
    overruns: int
    missed_ticks: int
    loop_errors: int
    commands_handled: int
    resets_granted: int
    trace_count: int
    estop_seen: int = 0  # ESTOP word count the loop has acted on
    estop_seen_s: float = math.nan  # when it acted on the latest ESTOP (robot monotonic, s)
    reset_granted_s: float = math.nan  # when the latest RESET was granted (robot monotonic, s)
    buses: dict[str, BusCounters] = field(default_factory=dict)
    realtime_report: dict = field(default_factory=dict)
    messages: tuple[str, ...] = ()
    last_error: str = ''

    @property
    def frames_sent(self) -> int:
        """Frames sent on every CAN bus."""
        return sum(b.frames_sent for n, b in self.buses.items() if n in self.can_buses)

    @property
    def frames_received(self) -> int:
        """Frames received on every CAN bus."""
        return sum(b.frames_received for n, b in self.buses.items() if n in self.can_buses)

    @property
    def can_buses(self) -> tuple[str, ...]:
        """Names of the CAN buses among :attr:`buses`."""
        return tuple(self.realtime_report.get('can_buses', ()))


# How decode_snapshot fills a BusSnapshot from the numbers of the shared block: per-joint tuples
# as (snapshot field, slot, type of each value), then the scalar slots read into the field of the
# same name. The lifecycle code, the bus counters and the JSON text are decoded on their own.
_JOINT_TUPLES = (
    ('positions_rad', 'position_rad', float),
    ('velocities_rad_s', 'velocity_rad_s', float),
    ('currents_a', 'current_a', float),
    ('torques_mnm', 'torque_mnm', float),
    ('temperatures_c', 'temperature_c', float),
    ('targets_rad', 'target_rad', float),
    ('target_velocities_rad_s', 'target_velocity_rad_s', float),
    ('modes', 'mode', int),
    ('statuswords', 'statusword', int),
    ('error_codes', 'error_code', int),
    ('connected', 'connected', bool),
    ('present', 'present', bool),
    ('last_feedback_s', 'last_feedback_s', float),
    ('feedback_counts', 'feedback_count', int),
)


def _flag(value: float) -> bool:
    """A flag slot (written as 0 or 1) as a bool."""
    return bool(int(value))


_SCALARS = (
    ('time_s', float),
    ('publish_count', int),
    ('ticks', int),
    ('realtime', _flag),
    ('estop', _flag),
    ('holding', _flag),
    ('queued_chunks', int),
    ('queue_end_s', float),
    ('active_sequence', int),
    ('chunks_accepted', int),
    ('chunks_rejected', int),
    ('chunks_superseded', int),
    ('frames_rejected', int),
    ('frames_unexpected', int),
    ('frames_skipped', int),
    ('sdo_aborts', int),
    ('mode_switches', int),
    ('dxl_missed_replies', int),
    ('tick_p50_s', float),
    ('tick_p99_s', float),
    ('tick_max_s', float),
    ('tick_window', int),
    ('work_p99_s', float),
    ('work_max_s', float),
    ('overruns', int),
    ('missed_ticks', int),
    ('loop_errors', int),
    ('commands_handled', int),
    ('resets_granted', int),
    ('trace_count', int),
    ('estop_seen', int),
    ('estop_seen_s', float),
    ('reset_granted_s', float),
)


def decode_snapshot(
    layout: SnapshotLayout, joint_names: tuple[str, ...], values: np.ndarray, text: dict
) -> BusSnapshot:
    """Build a :class:`BusSnapshot` from a consistent copy of the shared block."""
    slots = layout.slots
    fields = {name: tuple(map(kind, values[slots[slot]])) for name, slot, kind in _JOINT_TUPLES}
    for name, kind in _SCALARS:
        fields[name] = kind(values[slots[name].start])
    buses = {
        bus: BusCounters(*(int(values[slots[f'{bus}.{f}'].start]) for f in BUS_FIELDS))
        for bus in layout.buses
    }
    lifecycle_code = int(values[slots['lifecycle'].start])
    report = dict(text.get('realtime', {}))
    report['can_buses'] = text.get('can_buses', [])
    return BusSnapshot(
        lifecycle=LIFECYCLE_CODES[lifecycle_code] if 0 <= lifecycle_code < 7 else 'unknown',
        joint_names=joint_names,
        motor_status=tuple(text.get('motor_status', [''] * len(joint_names))),
        faults=tuple(Fault.from_dict(f) for f in text.get('faults', [])),
        missing_motors=tuple(text.get('missing', [])),
        last_reject_reason=str(text.get('last_reject_reason', '')),
        buses=buses,
        realtime_report=report,
        messages=tuple(text.get('messages', [])),
        last_error=str(text.get('last_error', '')),
        **fields,
    )


class SnapshotWriter:
    """Copies the controller's state into the shared block (bus-loop side)."""

    def __init__(self, exchange: StateExchange, controller, can_buses: tuple[str, ...]) -> None:
        """Bind the block and the controller."""
        self.exchange = exchange
        self.controller = controller
        self.can_buses = can_buses
        layout = exchange.layout
        self._index = {name: s.start for name, s in layout.slots.items()}
        self._text_key: tuple | None = None
        self._text_version = 0
        self.publish_count = 0

    def status_text(self, extra: dict) -> str:
        """The JSON text part (faults, missing motors, statuses, messages)."""
        ctl = self.controller
        return json.dumps(
            {
                'faults': [f.to_dict() for f in ctl.faults()],
                'missing': list(ctl.missing),
                'motor_status': list(ctl.measured.status),
                'last_reject_reason': ctl.queue.last_reject_reason,
                'messages': list(ctl.messages),
                'can_buses': list(self.can_buses),
                **extra,
            }
        )

    def publish(self, now: float, loop_values: dict[str, float], extra_text: dict) -> None:
        """Write one snapshot (seqlock begin ... end): the text if it changed, then every
        number in slot order in one write (joint fields, scalars, bus counters)."""
        ctl = self.controller
        exchange = self.exchange
        m = ctl.measured
        targets, velocities, modes = ctl.queue.sample_view()
        queue = ctl.queue
        counters = ctl.counters
        exchange.begin_write()
        self._write_status_text(extra_text)
        self.publish_count += 1
        scalars = {
            'time_s': now,
            'publish_count': self.publish_count,
            'ticks': counters.ticks,
            'lifecycle': LIFECYCLE_CODES.index(ctl.lifecycle.value),
            'estop': ctl.safety.estop_latched,
            'holding': ctl.holding,
            'queued_chunks': queue.queued,
            'queue_end_s': queue.queue_end_s,
            'active_sequence': queue.active_sequence,
            'chunks_accepted': queue.accepted,
            'chunks_rejected': queue.rejected,
            'chunks_superseded': queue.superseded,
            'frames_rejected': counters.frames_rejected,
            'frames_unexpected': counters.frames_unexpected,
            'frames_skipped': ctl.frames_skipped,
            'sdo_aborts': counters.sdo_aborts,
            'mode_switches': counters.mode_switches,
            'dxl_missed_replies': sum(b.missed_replies for b in ctl.dxl_banks.values()),
            'text_version': self._text_version,
            **loop_values,
        }
        exchange.write_values(
            [
                # JOINT_FIELDS order
                *m.position_rad,
                *m.velocity_rad_s,
                *m.current_a,
                *m.torque_mnm,
                *m.temperature_c,
                *targets.tolist(),
                *velocities.tolist(),
                *modes.tolist(),
                *m.statusword,
                *m.error_code,
                *ctl.connected_all(now),
                *ctl.present,
                *m.last_feedback_s,
                *m.feedback_count,
                *[scalars[name] for name in SCALAR_FIELDS],
                *self._bus_counter_values(),
            ]
        )
        exchange.end_write()

    def _bus_counter_values(self) -> list[int]:
        """Each bus's traffic counters in layout order (serial: packets, replies, 10 bits per
        byte)."""
        ctl = self.controller
        result: list[int] = []
        for bus in self.exchange.layout.buses:
            transport = ctl.transports.can.get(bus)
            if transport is not None:
                result += (
                    transport.frames_sent,
                    transport.frames_received,
                    transport.bits_sent,
                    transport.bits_received,
                    transport.send_errors,
                    transport.receive_errors,
                    transport.echoes,
                )
                continue
            serial = ctl.transports.serial.get(bus)
            if serial is None:  # not open: what it last showed stays
                start = self._index[f'{bus}.{BUS_FIELDS[0]}']
                result += self.exchange.values[start : start + len(BUS_FIELDS)].tolist()
                continue
            result += (
                serial.packets_sent,
                ctl.dxl_banks[bus].replies,
                serial.bytes_sent * 10,
                serial.bytes_received * 10,
                serial.write_errors,
                serial.read_errors,
                0,
            )
        return result

    def _write_status_text(self, extra_text: dict) -> None:
        """The JSON text part, rewritten only when what it shows changed (a new version)."""
        ctl = self.controller
        m = ctl.measured
        key = (
            len(ctl.safety.faults),
            ctl.safety.counters.faults_latched,
            ctl.queue.rejected,
            len(ctl.messages),
            ctl.lifecycle,
            tuple(m.status),
            tuple(ctl.missing),
            tuple(sorted(extra_text.items())) if extra_text else (),
        )
        if key != self._text_key:
            self._text_key = key
            self._text_version += 1
            self.exchange.write_text(self.status_text(extra_text))
