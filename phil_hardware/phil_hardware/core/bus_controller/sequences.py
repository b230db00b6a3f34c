"""Lifecycle sequences of the bus controller (FACTS section 3, ARCHITECTURE section 4).

configure (before STANDBY, as upstream does it at program start): open buses, discover
(TMotor by unsolicited status, EPOS4 by the reply to an SDO probe, Dynamixel by ping), write
the EPOS4 SDO list, TMotor SET_ORIGIN (temporary) at the pinned pose, EPOS4 CSP mode, NMT start
and Shutdown (PDOs flow, power stage off).
activate (START): EPOS4 target = measured, Enable Operation with SYNCs until every drive
reports it (a drive found outside "ready to switch on" gets NMT start and Shutdown first),
Dynamixel torque on, then hold the measured pose. Nothing in it waits for more
than one reply per device, so START's home motion follows within milliseconds.
deactivate: TMotor SET_RPM 0, EPOS4 Shutdown + SYNC, Dynamixel torque off.

Every wait polls the buses and calls the controller's pump hook, so the bus loop keeps
publishing its state while a sequence runs. The sequences block the calling thread (the bus
loop) for at most the sum of the configured waits and timeouts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from phil_hardware.core.codecs import epos4 as codec
from phil_hardware.core.codecs import tmotor as tmotor_codec
from phil_hardware.core.codecs.epos4 import (
    Cia402State,
    Controlword,
    ModeOfOperation,
    SdoService,
)
from phil_hardware.core.codecs.frame import CanFrame, CodecError

from .base import ControllerError, MotorMissingError, Transports
from .config import Epos4Params, TMotorParams
from .epos4 import (
    CONFIGURE_SDOS,
    Epos4Drive,
    describe_statusword,
    is_operation_enabled,
    mode_sdo,
    nmt_start,
    shutdown_frames,
)
from .state import Lifecycle

if TYPE_CHECKING:
    from .controller import BusController

POLL_INTERVAL_S = 0.0005


def _error(message: str) -> Exception:
    return ControllerError(message)


def describe_motor(ctl: BusController, index: int) -> str:
    """E.g. "right_wrist (EPOS4 node 7 on can3)"."""
    joint = ctl.config.joints[index]
    motor = joint.motor
    if isinstance(motor, TMotorParams):
        kind = f'TMotor node {motor.device_id}'
    elif isinstance(motor, Epos4Params):
        kind = f'EPOS4 node {motor.device_id}'
    else:
        kind = f'Dynamixel id {motor.device_id}'
    return f'{joint.name} ({kind} on {motor.bus})'


def wait(
    ctl: BusController,
    seconds: float,
    until: Callable[[], bool] | None = None,
    sync_buses: Sequence[str] = (),
) -> bool:
    """Poll the buses for ``seconds`` or until ``until()`` is true.

    Args:
        ctl: The controller.
        seconds: Longest wait [s].
        until: Stop early when this returns True.
        sync_buses: Send a SYNC on these buses every poll (drives answer with TPDOs).

    Returns:
        True when ``until`` became true (or there was none), False on timeout.

    Raises:
        ControllerError: An ESTOP arrived during activation.
    """
    clock = ctl.clock
    end = clock.now() + seconds
    while True:
        now = clock.now()
        for bus in sync_buses:
            ctl.send(bus, codec.encode_sync())
        ctl.poll(now)
        if ctl.pump_hook is not None:
            ctl.pump_hook()
        if ctl.lifecycle == Lifecycle.ACTIVATING and ctl.safety.estop_latched:
            raise _error('activation aborted by ESTOP')
        if until is not None and until():
            return True
        if now >= end:
            return until is None
        clock.sleep(min(POLL_INTERVAL_S, end - now))


def configure(ctl: BusController, zero_origins: bool = True) -> None:
    """UNCONFIGURED -> INACTIVE (see module doc); ``zero_origins``: False keeps the TMotors'
    origins (a configure after the first, when the arms may have moved since the pins came
    out). On failure the buses are closed again."""
    if ctl.lifecycle != Lifecycle.UNCONFIGURED:
        raise _error(f'configure needs state unconfigured, not {ctl.lifecycle.value}')
    ctl.lifecycle = Lifecycle.CONFIGURING
    try:
        ctl.transports = ctl.open_transports()
        absent = [b for b in ctl.config.can_buses if b not in ctl.transports.can]
        absent += [b for b in ctl.config.serial_buses if b not in ctl.transports.serial]
        if absent:
            raise _error(f'bus(es) not opened: {", ".join(absent)}')
        ctl.build_dispatch()
        _discover(ctl)
        ctl.set_cyclic_members()
        _configure_drives(ctl, zero_origins)
        ctl.lifecycle = Lifecycle.INACTIVE
    except BaseException as error:
        ctl.transports.close()
        ctl.transports = Transports()
        ctl.lifecycle = Lifecycle.UNCONFIGURED
        if isinstance(error, MotorMissingError):
            ctl.missing = list(error.missing)
        raise


def _discover(ctl: BusController) -> None:
    timing = ctl.config.timing
    counts = ctl.measured.feedback_count
    before = list(counts)
    for drive in ctl.epos.drives:
        ctl.send(drive.bus, codec.encode_sdo_probe(drive.node_id))
    for bus, bank in ctl.dxl_banks.items():
        serial = ctl.transports.serial[bus]
        for servo in bank.servos:
            for _attempt in range(max(1, timing.dxl_retries)):
                serial.write(bank.ping_packet(servo))
                if wait(
                    ctl,
                    timing.dxl_reply_timeout_s,
                    lambda s=servo: counts[s.index] > before[s.index],
                ):
                    break
    indices = range(len(ctl.config.joints))
    wait(ctl, timing.discovery_listen_s, lambda: all(counts[i] > before[i] for i in indices))
    missing = [i for i in indices if counts[i] == before[i]]
    refused = [i for i in missing if ctl.config.joints[i].name not in ctl.config.allow_missing]
    if refused:
        names = [ctl.config.joints[i].name for i in refused]
        raise MotorMissingError(
            names,
            'motor(s) not found: '
            + '; '.join(describe_motor(ctl, i) for i in refused)
            + '. Check power, wiring and ids, or list '
            'them in allow_missing',
        )
    ctl.missing = [ctl.config.joints[i].name for i in missing]
    for i in missing:
        ctl.present[i] = False
        ctl.safety.set_enabled(i, False)
        ctl.measured.status[i] = 'missing'
        ctl.warn(f'{describe_motor(ctl, i)} not found; excluded (allow_missing)')
    for bank in ctl.dxl_banks.values():
        bank.set_present([s for s in bank.servos if ctl.present[s.index]])


def present_drives(ctl: BusController) -> list[Epos4Drive]:
    """EPOS4 drives that were discovered."""
    return [d for d in ctl.epos.drives if ctl.present[d.index]]


def sdo_write_all(
    ctl: BusController,
    drives: Sequence[Epos4Drive],
    index: int,
    subindex: int,
    value: int,
    size: int,
) -> None:
    """Write one object on every drive (in parallel) and wait for every acknowledge.

    Raises:
        ControllerError: A drive did not answer within the SDO timeout or refused the write.
    """
    for drive in drives:
        ctl.sdo_replies.pop(drive.node_id, None)
        ctl.send(drive.bus, codec.encode_sdo_download(drive.node_id, index, subindex, value, size))
    wait(
        ctl,
        ctl.config.timing.sdo_timeout_s,
        lambda: all(d.node_id in ctl.sdo_replies for d in drives),
    )
    what = f'SDO write 0x{index:04X}/{subindex} = {value}'
    for drive in drives:
        frame = ctl.sdo_replies.get(drive.node_id)
        who = describe_motor(ctl, drive.index)
        if frame is None:
            raise _error(f'{who}: no reply to {what} within {ctl.config.timing.sdo_timeout_s} s')
        try:
            reply = codec.decode_sdo_response(frame)
        except CodecError as error:
            raise _error(f'{who}: bad reply to {what}: {error}') from None
        if reply.service == SdoService.ABORT:
            raise _error(f'{who}: {what} refused: {reply.abort_text}')
        if reply.service != SdoService.DOWNLOAD or reply.index != index:
            raise _error(f'{who}: unexpected reply to {what}: {reply}')


def _configure_drives(ctl: BusController, zero_origins: bool) -> None:
    drives = present_drives(ctl)
    for index, subindex, value, size in CONFIGURE_SDOS if drives else ():
        sdo_write_all(ctl, drives, index, subindex, int(value), size)
    if zero_origins:
        _zero_tmotors(ctl)
    if not drives:
        return
    # Upstream enabled in HMM, then switched to CSP; homing never started (method 37, no
    # start bit), so CSP is written directly and the drives wait in "ready to switch on".
    sdo_write_all(
        ctl,
        drives,
        codec.ObjectIndex.MODES_OF_OPERATION,
        0,
        ModeOfOperation.CYCLIC_SYNC_POSITION,
        1,
    )
    for drive in drives:
        drive.mode = ModeOfOperation.CYCLIC_SYNC_POSITION
        # PDOs flow from now on (power stage stays off), so the state is readable while inactive.
        ctl.send(drive.bus, nmt_start(drive.node_id))
    _send_controlword_all(ctl, drives, Controlword.SHUTDOWN)


def _zero_tmotors(ctl: BusController) -> None:
    """SET_ORIGIN (temporary) on every TMotor: the pinned power-on pose becomes the joints'
    initial angles. Done at the hardware node's first configure only, not at every
    activation or configure: those after ESTOP, a fault or a restarted bus loop happen
    wherever the arms are, and a zero set there would be wrong (the motors keep the origin
    until they are powered off)."""
    timing = ctl.config.timing
    measured = ctl.measured
    tmotors = [m for m in ctl.tmotors.motors if ctl.present[m.index]]
    for motor in tmotors:
        ctl.send(motor.bus, tmotor_codec.encode_set_origin(motor.node_id))
        ctl.forget_position(motor.index)  # the zero moves: the next report jumps legitimately
        if timing.origin_spacing_s:
            wait(ctl, timing.origin_spacing_s)
    wait(ctl, timing.origin_settle_s)
    mark = ctl.clock.now()
    if not wait(
        ctl,
        timing.feedback_wait_s,
        lambda: all(measured.last_feedback_s[m.index] > mark for m in tmotors),
    ):
        silent = [
            describe_motor(ctl, m.index)
            for m in tmotors
            if not measured.last_feedback_s[m.index] > mark
        ]
        raise _error(f'no feedback after SET_ORIGIN from {", ".join(silent)}')


def _send_controlword_all(
    ctl: BusController, drives: Sequence[Epos4Drive], controlword: Controlword
) -> None:
    for bus in ctl.epos.buses(drives):
        for drive in drives:
            if drive.bus == bus:
                ctl.send(bus, codec.encode_controlword(drive.node_id, controlword))
        ctl.send(bus, codec.encode_sync())


def activate(ctl: BusController) -> None:
    """INACTIVE -> ACTIVE (see module doc). On failure everything enabled is released again."""
    if ctl.lifecycle != Lifecycle.INACTIVE:
        raise _error(f'activate needs state inactive, not {ctl.lifecycle.value}')
    if ctl.safety.faulted:
        reasons = '; '.join(f'{f.joint or "robot"}: {f.reason}' for f in ctl.safety.faults)
        raise _error(f'faults latched ({reasons}); reset first')
    ctl.lifecycle = Lifecycle.ACTIVATING
    try:
        _activate(ctl)
    except BaseException:
        release(ctl)
        ctl.lifecycle = Lifecycle.INACTIVE
        raise


def _activate(ctl: BusController) -> None:
    """Power on what configure prepared. The one wait left is a PDO round trip per EPOS4 for
    the statusword that confirms "operation enabled" (about a millisecond here, a few on the
    drives); it stays ahead of the home motion rather than beside it, because a drive that
    fails to enable must stop START before anything moves."""
    timing = ctl.config.timing
    measured = ctl.measured
    drives = present_drives(ctl)
    _make_ready(ctl, drives)
    stale = [d for d in drives if d.mode != ModeOfOperation.CYCLIC_SYNC_POSITION]
    if stale:  # left in CST by the wrists when the last activation ended
        sdo_write_all(
            ctl,
            stale,
            codec.ObjectIndex.MODES_OF_OPERATION,
            0,
            ModeOfOperation.CYCLIC_SYNC_POSITION,
            1,
        )
        _send_controlword_all(ctl, stale, Controlword.SHUTDOWN)
    for drive in drives:
        drive.mode = ModeOfOperation.CYCLIC_SYNC_POSITION
        position = measured.position_rad[drive.index]
        motor_rad = drive.params.joint_to_motor_rad(position) if position == position else 0.0
        ctl.send(
            drive.bus,
            codec.encode_target_position(drive.node_id, motor_rad, drive.params.gear_ratio),
        )
    _send_controlword_all(ctl, drives, Controlword.ENABLE_OPERATION)
    mark = ctl.clock.now()
    if drives and not wait(
        ctl,
        timing.enable_timeout_s,
        lambda: all(
            measured.last_feedback_s[d.index] > mark
            and is_operation_enabled(measured.statusword[d.index])
            for d in drives
        ),
        sync_buses=ctl.epos.buses(drives),
    ):
        stuck = [
            f'{describe_motor(ctl, d.index)} is '
            f'{describe_statusword(measured.statusword[d.index])}'
            for d in drives
            if not is_operation_enabled(measured.statusword[d.index])
        ]
        raise _error('drive(s) not enabled: ' + '; '.join(stuck or ['no TPDO after enable']))
    for drive in drives:
        drive.enabled = True
    for bus, bank in ctl.dxl_banks.items():
        for servo in bank.present:
            _dxl_write_confirmed(ctl, bus, bank.torque_packet(servo, True), servo, 'torque on')
        if bank.present:
            ctl.transports.serial[bus].write(bank.read_packet())
            wait(ctl, timing.dxl_reply_timeout_s, lambda b=bank: not b.read_pending)
    now = ctl.clock.now()
    ctl.supervising = True
    ctl.safety.arm(now)
    ctl.queue.hold(measured.position_rad, [0] * measured.count)
    ctl.holding = False
    ctl.lifecycle = Lifecycle.ACTIVE


_READY = (Cia402State.READY_TO_SWITCH_ON, Cia402State.SWITCHED_ON, Cia402State.OPERATION_ENABLED)


def _make_ready(ctl: BusController, drives: Sequence[Epos4Drive]) -> None:
    """A fresh statusword from every drive (one SYNC round trip); one not waiting in "ready to
    switch on" (configure's Shutdown was lost, or the drive was reset meanwhile: power,
    communication, STO) gets NMT start and Shutdown again, as upstream sent at every start."""
    if not drives:
        return
    timing = ctl.config.timing
    measured = ctl.measured
    mark = ctl.clock.now()
    buses = ctl.epos.buses(drives)
    if not wait(
        ctl,
        timing.enable_timeout_s,
        lambda: all(measured.last_feedback_s[d.index] > mark for d in drives),
        sync_buses=buses,
    ):
        silent = [
            describe_motor(ctl, d.index)
            for d in drives
            if not measured.last_feedback_s[d.index] > mark
        ]
        raise _error(f'no status from {", ".join(silent)}')

    def state(drive: Epos4Drive) -> Cia402State:
        return codec.cia402_state(measured.statusword[drive.index])

    behind = [d for d in drives if state(d) not in _READY]
    if not behind:
        return
    for drive in behind:
        ctl.send(drive.bus, nmt_start(drive.node_id))
    _send_controlword_all(ctl, behind, Controlword.SHUTDOWN)
    if not wait(
        ctl,
        timing.enable_timeout_s,
        lambda: all(state(d) in _READY for d in behind),
        sync_buses=ctl.epos.buses(behind),
    ):
        raise _error(
            'drive(s) not ready to switch on: '
            + '; '.join(
                f'{describe_motor(ctl, d.index)} is {state(d).value.lower()}'
                for d in behind
                if state(d) not in _READY
            )
        )


def _dxl_write_confirmed(ctl: BusController, bus: str, packet: bytes, servo, what: str) -> None:
    timing = ctl.config.timing
    key = (bus, servo.dxl_id)
    for _attempt in range(max(1, timing.dxl_retries)):
        ctl.dxl_replies.pop(key, None)
        ctl.transports.serial[bus].write(packet)
        if wait(ctl, timing.dxl_reply_timeout_s, lambda: key in ctl.dxl_replies):
            status = ctl.dxl_replies[key]
            if status.error & 0x7F:
                raise _error(
                    f'{describe_motor(ctl, servo.index)}: {what} refused '
                    f'({ctl.dxl_banks[bus].error_text(status)})'
                )
            return
    raise _error(f'{describe_motor(ctl, servo.index)}: no reply to {what}')


def release(ctl: BusController) -> None:
    """Stop the TMotors, shut the Maxon power stages down, switch servo torque off."""
    for motor in ctl.tmotors.motors:
        if ctl.present[motor.index] and motor.bus in ctl.transports.can:
            ctl.send(motor.bus, tmotor_codec.encode_set_rpm(motor.node_id, 0))
    drives = [d for d in present_drives(ctl) if d.bus in ctl.transports.can]
    _send_controlword_all(ctl, drives, Controlword.SHUTDOWN)
    for drive in drives:
        drive.enabled = False
    for bus, bank in ctl.dxl_banks.items():
        if bus not in ctl.transports.serial:
            continue
        for servo in bank.present:
            try:
                _dxl_write_confirmed(
                    ctl, bus, bank.torque_packet(servo, False), servo, 'torque off'
                )
            except Exception as error:  # releasing must go on for the other servos
                ctl.warn(str(error))


def deactivate(ctl: BusController) -> None:
    """ACTIVE -> INACTIVE."""
    if ctl.lifecycle != Lifecycle.ACTIVE:
        raise _error(f'deactivate needs state active, not {ctl.lifecycle.value}')
    ctl.lifecycle = Lifecycle.DEACTIVATING
    ctl.supervising = False
    ctl.safety.disarm()
    ctl.queue.halt()
    try:
        release(ctl)
    finally:
        ctl.lifecycle = Lifecycle.INACTIVE


def shutdown(ctl: BusController) -> None:
    """Any state -> FINALIZED: deactivate if active, close the buses."""
    try:
        if ctl.lifecycle == Lifecycle.ACTIVE:
            deactivate(ctl)
    finally:
        ctl.transports.close()
        ctl.transports = Transports()
        ctl.lifecycle = Lifecycle.FINALIZED


def shutdown_with_sync(drive: Epos4Drive) -> list[CanFrame]:
    """Controlword Shutdown + SYNC for one drive (range violation)."""
    return shutdown_frames(drive.node_id)


def reenable_frames(drive: Epos4Drive, measured_rad: float) -> list[CanFrame]:
    """After a reset: CSP mode, target = measured, Shutdown, Enable (SYNC sent by the caller)."""
    motor_rad = (
        drive.params.joint_to_motor_rad(measured_rad) if measured_rad == measured_rad else 0.0
    )
    return [
        mode_sdo(drive.node_id, ModeOfOperation.CYCLIC_SYNC_POSITION),
        codec.encode_target_position(drive.node_id, motor_rad, drive.params.gear_ratio),
        codec.encode_controlword(drive.node_id, Controlword.SHUTDOWN),
        codec.encode_controlword(drive.node_id, Controlword.ENABLE_OPERATION),
    ]


__all__ = [
    'activate',
    'configure',
    'deactivate',
    'describe_motor',
    'release',
    'sdo_write_all',
    'shutdown',
    'wait',
]
