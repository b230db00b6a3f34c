"""The Maxon EPOS4 drives on the controller's CAN buses (CANopen).

Discovery by the reply to an SDO probe; configure writes the SDO list, CSP mode, NMT start and
Shutdown (PDOs flow, power stage off); activate sets target = measured and enables with SYNCs
until every drive reports "operation enabled" (a drive found outside "ready to switch on" gets
NMT start and Shutdown first); every tick each enabled drive gets its CSP or CST target and each
bus one SYNC; a fault shuts down the drives out of range, a reset re-enables them; release is
Shutdown + SYNC. The frames themselves come from :mod:`.epos4`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial

from phil_hardware.core.chunk_queue import ControlMode
from phil_hardware.core.codecs import epos4 as codec
from phil_hardware.core.codecs.epos4 import Cia402State, Controlword, ModeOfOperation, SdoService
from phil_hardware.core.codecs.frame import CanFrame, CodecError
from phil_hardware.core.safety import FaultCode

from .base import BusAccess, ControllerError, FeedbackRoutes, MotorFamily
from .epos4 import (
    CONFIGURE_SDOS,
    Epos4Drive,
    Epos4Group,
    controlword_frame,
    describe_statusword,
    drive_fault_text,
    is_operation_enabled,
    nmt_start,
    probe_frame,
    reenable_frames,
    sdo_download,
    shutdown_frames,
)
from .epos4_pdo_setup import write_pdo_layout
from .state import Lifecycle

SYNC_FRAME = codec.encode_sync()
_TORQUE = int(ControlMode.TORQUE)  # plain ints: enum attribute access costs us per tick
_CST = int(ModeOfOperation.CYCLIC_SYNC_TORQUE)
_READY = (Cia402State.READY_TO_SWITCH_ON, Cia402State.SWITCHED_ON, Cia402State.OPERATION_ENABLED)


class Epos4Family(MotorFamily):
    """The EPOS4 drives (see module doc).

    Attributes:
        sdo_replies: Latest SDO response frame per node id (the lifecycle steps read it).
    """

    def __init__(self, ctl: BusAccess, group: Epos4Group) -> None:
        """Drive ``group`` through ``ctl``."""
        self.ctl = ctl
        self.group = group
        self.sdo_replies: dict[int, CanFrame] = {}
        self._by_bus: list[tuple[str, list[Epos4Drive]]] = []
        self._statusword_texts: dict[int, tuple[str, str]] = {}  # (status, fault text)

    def _present(self) -> list[Epos4Drive]:
        return [d for d in self.group.drives if self.ctl.present[d.index]]

    # -- lifecycle ---------------------------------------------------------------------------

    def bind_feedback(self, routes: FeedbackRoutes) -> None:
        """TPDO1 and SDO responses of every drive."""
        for drive in self.group.drives:
            tpdo = codec.TPDO1_BASE + drive.node_id
            sdo = codec.SDO_RESPONSE_BASE + drive.node_id
            routes.route_can(drive.bus, tpdo, partial(self._on_tpdo, drive), extended=False)
            routes.route_can(drive.bus, sdo, partial(self._on_sdo, drive), extended=False)

    def probe(self) -> None:
        """An SDO probe to every drive (any reply proves it is there)."""
        for drive in self.group.drives:
            self.ctl.send(drive.bus, probe_frame(drive.node_id, drive.params.frame_form))

    def report(self) -> None:
        """The statusword of every discovered drive, read by SDO (nothing written)."""
        drives = self._present()
        if not drives:
            return
        statuswords = self.sdo_read_all(drives, codec.ObjectIndex.STATUSWORD, 0)
        measured = self.ctl.measured
        for drive in drives:
            statusword = statuswords[drive.node_id]
            measured.statusword[drive.index] = statusword
            measured.status[drive.index] = describe_statusword(statusword)

    def configure(self, zero_origins: bool) -> None:
        """SDO list, CSP mode, NMT start and Shutdown on every discovered drive."""
        drives = self._present()
        self._by_bus = [
            (bus, [d for d in drives if d.bus == bus]) for bus in self.group.buses(drives)
        ]
        if not drives:
            return
        if self.ctl.config.write_epos4_pdo_layout:
            write_pdo_layout(self, drives)
        for index, subindex, value, size in CONFIGURE_SDOS:
            self.sdo_write_all(drives, index, subindex, int(value), size)
        # Upstream enabled in HMM, then switched to CSP; homing never started (method 37, no
        # start bit), so CSP is written directly and the drives wait in "ready to switch on".
        self._write_csp(drives)
        for drive in drives:
            drive.mode = ModeOfOperation.CYCLIC_SYNC_POSITION
            # PDOs flow from now on (power stage stays off): the state is readable while inactive.
            self.ctl.send(drive.bus, nmt_start(drive.node_id, drive.params.frame_form))
        self._send_controlword_all(drives, Controlword.SHUTDOWN)

    def activate(self) -> None:
        """Power on what configure prepared. The one wait left is a PDO round trip per drive
        for the statusword that confirms "operation enabled" (about a millisecond here, a few
        on the drives); it stays ahead of the home motion rather than beside it, because a
        drive that fails to enable must stop START before anything moves."""
        ctl = self.ctl
        measured = ctl.measured
        drives = self._present()
        self._make_ready(drives)
        stale = [d for d in drives if d.mode != ModeOfOperation.CYCLIC_SYNC_POSITION]
        if stale:  # left in CST by the wrists when the last activation ended
            self._write_csp(stale)
            self._send_controlword_all(stale, Controlword.SHUTDOWN)
        for drive in drives:
            drive.mode = ModeOfOperation.CYCLIC_SYNC_POSITION
            position = measured.position_rad[drive.index]
            motor_rad = drive.params.joint_to_motor_rad(position) if position == position else 0.0
            ctl.send(
                drive.bus,
                codec.encode_target_position(drive.node_id, motor_rad, drive.params.gear_ratio),
            )
        self._send_controlword_all(drives, Controlword.ENABLE_OPERATION)
        mark = ctl.clock.now()
        if drives and not ctl.wait(
            ctl.config.timing.enable_timeout_s,
            lambda: all(
                measured.last_feedback_s[d.index] > mark
                and is_operation_enabled(measured.statusword[d.index])
                for d in drives
            ),
            sync_buses=self.group.buses(drives),
        ):
            stuck = [
                f'{ctl.describe_motor(d.index)} is '
                f'{describe_statusword(measured.statusword[d.index])}'
                for d in drives
                if not is_operation_enabled(measured.statusword[d.index])
            ]
            raise ControllerError(
                'drive(s) not enabled: ' + '; '.join(stuck or ['no TPDO after enable'])
            )
        for drive in drives:
            drive.enabled = True

    def _make_ready(self, drives: Sequence[Epos4Drive]) -> None:
        """A fresh statusword from every drive (one SYNC round trip); one not waiting in "ready
        to switch on" (configure's Shutdown was lost, or the drive was reset meanwhile: power,
        communication, STO) gets NMT start and Shutdown again, as upstream sent at every
        start."""
        if not drives:
            return
        ctl = self.ctl
        timeout_s = ctl.config.timing.enable_timeout_s
        measured = ctl.measured
        mark = ctl.clock.now()
        if not ctl.wait(
            timeout_s,
            lambda: all(measured.last_feedback_s[d.index] > mark for d in drives),
            sync_buses=self.group.buses(drives),
        ):
            silent = [
                ctl.describe_motor(d.index)
                for d in drives
                if not measured.last_feedback_s[d.index] > mark
            ]
            raise ControllerError(f'no status from {", ".join(silent)}')

        def state(drive: Epos4Drive) -> Cia402State:
            return codec.cia402_state(measured.statusword[drive.index])

        behind = [d for d in drives if state(d) not in _READY]
        if not behind:
            return
        for drive in behind:
            ctl.send(drive.bus, nmt_start(drive.node_id, drive.params.frame_form))
        self._send_controlword_all(behind, Controlword.SHUTDOWN)
        if not ctl.wait(
            timeout_s,
            lambda: all(state(d) in _READY for d in behind),
            sync_buses=self.group.buses(behind),
        ):
            raise ControllerError(
                'drive(s) not ready to switch on: '
                + '; '.join(
                    f'{ctl.describe_motor(d.index)} is {state(d).value.lower()}'
                    for d in behind
                    if state(d) not in _READY
                )
            )

    def release(self) -> None:
        """Shutdown + SYNC on every present drive on an open bus."""
        drives = [d for d in self._present() if d.bus in self.ctl.transports.can]
        self._send_controlword_all(drives, Controlword.SHUTDOWN)
        for drive in drives:
            drive.enabled = False

    # -- SDO and controlword helpers ---------------------------------------------------------

    def sdo_write_all(
        self,
        drives: Sequence[Epos4Drive],
        index: int,
        subindex: int,
        value: int | Mapping[int, int],
        size: int,
        what: str = '',
    ) -> None:
        """Write one object on every drive (in parallel) and wait for every acknowledge;
        ``value`` is one for all, or one per node id.

        Raises:
            ControllerError: A drive did not answer within the SDO timeout or refused it.
        """
        values = (
            value
            if isinstance(value, Mapping)
            else dict.fromkeys([d.node_id for d in drives], value)
        )

        forms = {drive.node_id: drive.params.frame_form for drive in drives}

        def request(node: int) -> CanFrame:
            return sdo_download(node, index, subindex, values[node], size, forms[node])

        shown = f' = {value}' if isinstance(value, int) else ''
        self._sdo_exchange(
            drives,
            request,
            SdoService.DOWNLOAD,
            index,
            what or f'SDO write 0x{index:04X}/{subindex}{shown}',
        )

    def sdo_read_all(
        self, drives: Sequence[Epos4Drive], index: int, subindex: int
    ) -> dict[int, int]:
        """Read one object of every drive (in parallel): the values by node id, unsigned.

        Raises:
            ControllerError: A drive did not answer within the SDO timeout or refused it.
        """
        replies = self._sdo_exchange(
            drives,
            lambda node: codec.encode_sdo_upload_request(node, index, subindex),
            SdoService.UPLOAD,
            index,
            f'SDO read 0x{index:04X}/{subindex}',
        )
        return {node: reply.value() for node, reply in replies.items()}

    def _sdo_exchange(self, drives, request, service, index: int, what: str) -> dict:
        """Send ``request(node_id)`` to every drive, wait for every reply and check it is a
        ``service`` reply for ``index``; the decoded replies by node id."""
        ctl = self.ctl
        replies = self.sdo_replies
        timeout_s = ctl.config.timing.sdo_timeout_s
        for drive in drives:
            replies.pop(drive.node_id, None)
            ctl.send(drive.bus, request(drive.node_id))
        ctl.wait(timeout_s, lambda: all(d.node_id in replies for d in drives))
        decoded = {}
        for drive in drives:
            frame = replies.get(drive.node_id)
            who = ctl.describe_motor(drive.index)
            if frame is None:
                raise ControllerError(f'{who}: no reply to {what} within {timeout_s} s')
            try:
                reply = codec.decode_sdo_response(frame)
            except CodecError as error:
                raise ControllerError(f'{who}: bad reply to {what}: {error}') from None
            if reply.service == SdoService.ABORT:
                raise ControllerError(f'{who}: {what} refused: {reply.abort_text}')
            if reply.service != service or reply.index != index:
                raise ControllerError(f'{who}: unexpected reply to {what}: {reply}')
            decoded[drive.node_id] = reply
        return decoded

    def _write_csp(self, drives: Sequence[Epos4Drive]) -> None:
        mode = ModeOfOperation.CYCLIC_SYNC_POSITION
        self.sdo_write_all(drives, codec.ObjectIndex.MODES_OF_OPERATION, 0, mode, 1)

    def _send_controlword_all(
        self, drives: Sequence[Epos4Drive], controlword: Controlword
    ) -> None:
        send = self.ctl.send
        for bus in self.group.buses(drives):
            for drive in drives:
                if drive.bus == bus:
                    send(
                        bus, controlword_frame(drive.node_id, controlword, drive.params.frame_form)
                    )
            send(bus, codec.encode_sync())

    # -- cyclic ------------------------------------------------------------------------------

    def tick(self, phase: int, now: float, targets, velocities, modes) -> None:
        """Every enabled drive its target (switching CSP/CST first if asked), each bus a SYNC."""
        ctl = self.ctl
        send = ctl.send
        measured = ctl.measured.position_rad
        for bus, drives in self._by_bus:
            for drive in drives:
                if not drive.enabled:
                    continue
                i = drive.index
                if (modes[i] == _TORQUE) != (drive.mode == _CST):
                    ctl.counters.mode_switches += 1
                    for frame in drive.switch_to(int(modes[i]), targets[i], measured):
                        send(bus, frame)
                send(bus, drive.cyclic_frame(targets[i], measured))
            send(bus, SYNC_FRAME)

    def request_feedback(self) -> None:
        """A SYNC on every bus with a present drive (the drives answer with TPDOs)."""
        for bus, _drives in self._by_bus:
            self.ctl.send(bus, SYNC_FRAME)

    def hold(self) -> None:
        """Shut down the drives whose joint is out of range."""
        ctl = self.ctl
        for bus, drives in self._by_bus:
            for drive in drives:
                if drive.enabled and ctl.safety.out_of_range(drive.index):
                    drive.enabled = False
                    for frame in shutdown_frames(drive.node_id, drive.params.frame_form):
                        ctl.send(bus, frame)

    def resume(self) -> None:
        """A drive shut down on a range violation restarts where it is."""
        ctl = self.ctl
        for bus, drives in self._by_bus:
            for drive in drives:
                if drive.enabled:
                    continue
                drive.enabled = True
                drive.mode = ModeOfOperation.CYCLIC_SYNC_POSITION
                for frame in reenable_frames(drive, ctl.measured.position_rad[drive.index]):
                    ctl.send(bus, frame)
                ctl.send(bus, SYNC_FRAME)

    # -- feedback ----------------------------------------------------------------------------

    def _on_tpdo(self, drive: Epos4Drive, frame: CanFrame, now: float) -> None:
        ctl = self.ctl
        statusword, position, torque_mnm = drive.decode(frame)
        i = drive.index
        m = ctl.measured
        if not ctl.plausible(i, position, now):
            return
        m.update_position(i, position, now)
        m.statusword[i] = statusword
        m.torque_mnm[i] = torque_mnm
        texts = self._statusword_texts.get(statusword)
        if texts is None:  # a drive shows a handful of statuswords: each is described once
            texts = describe_statusword(statusword), drive_fault_text(statusword)
            self._statusword_texts[statusword] = texts
        m.status[i] = texts[0]
        if ctl.supervising:
            ctl.check_fault(ctl.safety.on_position(i, position, now))
            ctl.check_fault(ctl.safety.on_motor_error(i, texts[1], now))

    def _on_sdo(self, drive: Epos4Drive, frame: CanFrame, now: float) -> None:
        ctl = self.ctl
        ctl.measured.feedback_count[drive.index] += 1  # any reply proves the drive is there
        self.sdo_replies[drive.node_id] = frame
        try:
            reply = codec.decode_sdo_response(frame)
        except CodecError:
            return  # the upstream discovery probe's reply need not be a valid response
        if reply.service == SdoService.ABORT and (
            ctl.lifecycle != Lifecycle.CONFIGURING
        ):  # the probe's abort is expected
            ctl.counters.sdo_aborts += 1
            if ctl.lifecycle == Lifecycle.ACTIVE:
                ctl.check_fault(
                    ctl.safety.latch(
                        FaultCode.MOTOR_ERROR,
                        drive.joint,
                        f'SDO 0x{reply.index:04X} refused: {reply.abort_text}',
                        now,
                    )
                )


__all__ = ['SYNC_FRAME', 'Epos4Family']
