"""The state snapshot the node reads: writing it (loop side) and decoding it (node side)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import numpy as np

from phil_hardware.core.safety import Fault

from .shm import BUS_FIELDS, LIFECYCLE_CODES, SnapshotLayout, StateExchange


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
    trace_count: int
    estop_seen: int = 0  # ESTOP word count the loop has acted on
    estop_seen_s: float = math.nan  # when it acted on the latest ESTOP (robot monotonic, s)
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


def decode_snapshot(
    layout: SnapshotLayout, joint_names: tuple[str, ...], values: np.ndarray, text: dict
) -> BusSnapshot:
    """Build a :class:`BusSnapshot` from a consistent copy of the shared block."""
    slots = layout.slots

    def joints(name: str, kind=float) -> tuple:
        return tuple(kind(v) for v in values[slots[name]])

    def scalar(name: str) -> float:
        return float(values[slots[name].start])

    def count(name: str) -> int:
        return int(values[slots[name].start])

    buses = {
        bus: BusCounters(*(int(values[slots[f'{bus}.{f}'].start]) for f in BUS_FIELDS))
        for bus in layout.buses
    }
    lifecycle_code = count('lifecycle')
    report = dict(text.get('realtime', {}))
    report['can_buses'] = text.get('can_buses', [])
    return BusSnapshot(
        time_s=scalar('time_s'),
        publish_count=count('publish_count'),
        ticks=count('ticks'),
        lifecycle=LIFECYCLE_CODES[lifecycle_code] if 0 <= lifecycle_code < 7 else 'unknown',
        realtime=bool(count('realtime')),
        estop=bool(count('estop')),
        holding=bool(count('holding')),
        joint_names=joint_names,
        positions_rad=joints('position_rad'),
        velocities_rad_s=joints('velocity_rad_s'),
        currents_a=joints('current_a'),
        torques_mnm=joints('torque_mnm'),
        temperatures_c=joints('temperature_c'),
        targets_rad=joints('target_rad'),
        target_velocities_rad_s=joints('target_velocity_rad_s'),
        modes=joints('mode', int),
        statuswords=joints('statusword', int),
        error_codes=joints('error_code', int),
        connected=joints('connected', bool),
        present=joints('present', bool),
        last_feedback_s=joints('last_feedback_s'),
        feedback_counts=joints('feedback_count', int),
        motor_status=tuple(text.get('motor_status', [''] * len(joint_names))),
        faults=tuple(Fault.from_dict(f) for f in text.get('faults', [])),
        missing_motors=tuple(text.get('missing', [])),
        queued_chunks=count('queued_chunks'),
        queue_end_s=scalar('queue_end_s'),
        active_sequence=count('active_sequence'),
        chunks_accepted=count('chunks_accepted'),
        chunks_rejected=count('chunks_rejected'),
        chunks_superseded=count('chunks_superseded'),
        last_reject_reason=str(text.get('last_reject_reason', '')),
        frames_rejected=count('frames_rejected'),
        frames_unexpected=count('frames_unexpected'),
        frames_skipped=count('frames_skipped'),
        sdo_aborts=count('sdo_aborts'),
        mode_switches=count('mode_switches'),
        dxl_missed_replies=count('dxl_missed_replies'),
        tick_p50_s=scalar('tick_p50_s'),
        tick_p99_s=scalar('tick_p99_s'),
        tick_max_s=scalar('tick_max_s'),
        tick_window=count('tick_window'),
        work_p99_s=scalar('work_p99_s'),
        work_max_s=scalar('work_max_s'),
        overruns=count('overruns'),
        missed_ticks=count('missed_ticks'),
        loop_errors=count('loop_errors'),
        commands_handled=count('commands_handled'),
        trace_count=count('trace_count'),
        estop_seen=count('estop_seen'),
        estop_seen_s=scalar('estop_seen_s'),
        buses=buses,
        realtime_report=report,
        messages=tuple(text.get('messages', [])),
        last_error=str(text.get('last_error', '')),
    )


class SnapshotWriter:
    """Copies the controller's state into the shared block (bus-loop side)."""

    def __init__(self, exchange: StateExchange, controller, can_buses: tuple[str, ...]) -> None:
        """Bind the block and the controller."""
        self.exchange = exchange
        self.controller = controller
        self.can_buses = can_buses
        layout = exchange.layout
        self._slots = layout.slots
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
        """Write one snapshot (seqlock begin ... end)."""
        ctl = self.controller
        exchange = self.exchange
        values = exchange.values
        slots = self._slots
        m = ctl.measured
        targets, velocities, modes = ctl.queue.sample_view()
        exchange.begin_write()
        values[slots['position_rad']] = m.position_rad
        values[slots['velocity_rad_s']] = m.velocity_rad_s
        values[slots['current_a']] = m.current_a
        values[slots['torque_mnm']] = m.torque_mnm
        values[slots['temperature_c']] = m.temperature_c
        values[slots['target_rad']] = targets
        values[slots['target_velocity_rad_s']] = velocities
        values[slots['mode']] = modes
        values[slots['statusword']] = m.statusword
        values[slots['error_code']] = m.error_code
        values[slots['connected']] = [ctl.connected(i, now) for i in range(m.count)]
        values[slots['present']] = ctl.present
        values[slots['last_feedback_s']] = m.last_feedback_s
        values[slots['feedback_count']] = m.feedback_count
        self.publish_count += 1
        queue = ctl.queue
        counters = ctl.counters
        index = self._index
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
            **loop_values,
        }
        for name, value in scalars.items():
            values[index[name]] = value
        for bus, transport in ctl.transports.can.items():
            values[index[f'{bus}.frames_sent']] = transport.frames_sent
            values[index[f'{bus}.frames_received']] = transport.frames_received
            values[index[f'{bus}.bits_sent']] = transport.bits_sent
            values[index[f'{bus}.bits_received']] = transport.bits_received
            values[index[f'{bus}.send_errors']] = transport.send_errors
            values[index[f'{bus}.receive_errors']] = transport.receive_errors
            values[index[f'{bus}.echoes']] = transport.echoes
        for bus, transport in ctl.transports.serial.items():
            values[index[f'{bus}.frames_sent']] = transport.packets_sent
            values[index[f'{bus}.frames_received']] = ctl.dxl_banks[bus].replies
            values[index[f'{bus}.bits_sent']] = transport.bytes_sent * 10
            values[index[f'{bus}.bits_received']] = transport.bytes_received * 10
            values[index[f'{bus}.send_errors']] = transport.write_errors
            values[index[f'{bus}.receive_errors']] = transport.read_errors
        key = (
            len(ctl.safety.faults),
            ctl.safety.counters.faults_latched,
            queue.rejected,
            len(ctl.messages),
            ctl.lifecycle,
            tuple(m.status),
            tuple(ctl.missing),
            tuple(sorted(extra_text.items())) if extra_text else (),
        )
        if key != self._text_key:
            self._text_key = key
            self._text_version += 1
            exchange.write_text(self.status_text(extra_text))
        values[index['text_version']] = self._text_version
        exchange.end_write()
