"""A simulated Maxon EPOS4 drive on CANopen (CiA 301 + CiA 402), as upstream drives it.

* NMT: start, stop, pre-operational, reset node (application reset: objects, state machine and
  position counter back to power-on), reset communication; boot-up frame 0x700+n after a reset.
* SDO server (expedited, 0x600+n -> 0x580+n) for the objects the controller uses; unknown
  objects abort with 0x06020000, a bad command specifier (upstream's 8-zero-byte probe) with
  0x05040001. SDO works in every NMT state except Stopped.
* PDOs only when Operational, as its PDO objects (0x1400-0x1A03, :mod:`.epos4_pdos`) define
  them: a received RPDO is split into its mapped objects, applied at once (transmission type
  254/255) or at the next SYNC (0..240); one shorter than its mapping is refused. After a
  SYNC every synchronous TPDO is sent with its mapped objects' values. With Phil's layout
  (the default, as the lab's drives hold it): controlword 0x200+n at once, target position
  0x300+n (int32 counts) and target torque 0x500+n (int16 per-mille of rated torque) at the
  SYNC; TPDO 0x180+n statusword (u16), position actual (int32 counts), torque actual (int16
  per-mille). ``Epos4DeviceConfig.pdo_layout = 'other'`` powers on with another layout, as a
  replaced or reset drive would: then only a controller that writes its layout is understood.
* CiA 402 power state machine (:mod:`.cia402`); modes CSP (position lag), CST (inertia,
  friction, gravity of the wrist lever, speed limit) and HMM method 37 (home = here). Outside
  Operation enabled the motor is unpowered and the joint holds still.

Position actual counts from 0 at power-on (incremental encoder), so the pinned pose reads 0.
Not modelled: segmented SDO, asynchronous TPDOs, EMCY, heartbeat, following-error faults.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable
from dataclasses import dataclass

from phil_description.core import Epos4Params, JointSpec
from phil_hardware.core.codecs import CanFrame, CodecError, epos4
from phil_hardware.core.codecs.cia301 import SDO_LENGTH, SYNC_COB_ID
from phil_hardware.core.codecs.epos4 import (
    Cia402State,
    ModeOfOperation,
    NmtCommand,
)
from phil_hardware.core.codecs.epos4_pdo_layout import OTHER_PDO_LAYOUT, PHIL_PDO_LAYOUT
from phil_hardware.sim import cia402
from phil_hardware.sim.actuator import TorqueLoad
from phil_hardware.sim.device import SimDevice
from phil_hardware.sim.epos4_objects import (
    ABORT_BAD_COMMAND,
    HOMING_METHODS_HERE,
    MAPPABLE,
    Epos4Objects,
    SdoAbortError,
)
from phil_hardware.sim.epos4_pdos import MappedPdo, PdoObjects
from phil_hardware.sim.faults import FaultKind

BOOTUP_BASE = 0x700
OVER_CURRENT_FACTOR = 1.2
POWER_ON_PDO_LAYOUTS = {'phil': PHIL_PDO_LAYOUT, 'other': OTHER_PDO_LAYOUT}


class NmtState(str, enum.Enum):
    """CiA 301 NMT state of the simulated node."""

    PRE_OPERATIONAL = 'pre-operational'
    OPERATIONAL = 'operational'
    STOPPED = 'stopped'


@dataclass(frozen=True)
class Epos4DeviceConfig:
    """Behaviour of every simulated EPOS4.

    Attributes:
        csp_time_constant_s: Lag of the CSP position loop behind its target [s].
        rotor_inertia_kg_m2: Rotor + gearhead inertia on the motor side (reflected x gear^2).
        extra_inertia_kg_m2: Output-side inertia besides the gravity mass (e.g. a pedal beater).
        efficiency: Gearhead efficiency applied to the motor torque.
        coulomb_nm: Output-side Coulomb friction [N m].
        viscous_nm_s_per_rad: Output-side viscous friction [N m s/rad].
        gravity_m_s2: Gravitational acceleration for the wrist lever.
        end_stop_margin_rad: Mechanical end stops beyond the hard joint limits [rad].
        pdo_layout: The PDO layout at power-on: 'phil' (as the lab's drives hold it) or
            'other' (a drive that was replaced or reset).
    """

    csp_time_constant_s: float = 0.002
    rotor_inertia_kg_m2: float = 1.016e-6
    extra_inertia_kg_m2: float = 0.0
    efficiency: float = 0.75
    coulomb_nm: float = 0.0192
    viscous_nm_s_per_rad: float = 5e-4
    gravity_m_s2: float = 9.81
    end_stop_margin_rad: float = math.radians(10.0)
    pdo_layout: str = 'phil'

    def __post_init__(self) -> None:
        """Validate once.

        Raises:
            ValueError: Naming the first field out of range.
        """
        if not 0 < self.efficiency <= 1:
            raise ValueError('Epos4DeviceConfig.efficiency must be in (0, 1]')
        if not self.rotor_inertia_kg_m2 > 0:
            raise ValueError('Epos4DeviceConfig.rotor_inertia_kg_m2 must be > 0')
        if self.pdo_layout not in POWER_ON_PDO_LAYOUTS:
            raise ValueError(
                f'Epos4DeviceConfig.pdo_layout must be one of {", ".join(POWER_ON_PDO_LAYOUTS)}'
            )
        for name in (
            'csp_time_constant_s',
            'extra_inertia_kg_m2',
            'coulomb_nm',
            'viscous_nm_s_per_rad',
            'end_stop_margin_rad',
        ):
            if not getattr(self, name) >= 0:
                raise ValueError(f'Epos4DeviceConfig.{name} must be >= 0')


class Epos4Device(SimDevice):
    """One EPOS4 drive with its motor, gearhead and (for a wrist) stick.

    Args:
        joint: Joint with :class:`Epos4Params`.
        config: Behaviour shared by all EPOS4 drives.
        initial_joint_rad: Joint angle at power-on (default: the motor's initial angle).
        seed: Seed for the ``corrupt`` fault's garbage.

    Attributes:
        external_torque_nm: Optional callable giving the external load on the joint (joint
            coordinate, N m), e.g. the wrist gravity from the arm's joint angles.

    Raises:
        TypeError: If the joint's motor is not an EPOS4.
    """

    family = 'epos4'

    def __init__(
        self,
        joint: JointSpec,
        config: Epos4DeviceConfig | None = None,
        initial_joint_rad: float | None = None,
        seed: int = 0,
    ) -> None:
        if not isinstance(joint.motor, Epos4Params):
            raise TypeError(f'joint {joint.name!r} is not driven by an EPOS4: {joint.motor}')
        self.config = config or Epos4DeviceConfig()
        super().__init__(joint, initial_joint_rad, self.config.end_stop_margin_rad, seed)
        self.params: Epos4Params = joint.motor
        self.external_torque_nm: Callable[[], float] | None = None
        params = self.params
        self._counts_per_rad = params.counts_per_output_rev / (2.0 * math.pi)
        self._load = TorqueLoad(
            params.gear_ratio**2 * self.config.rotor_inertia_kg_m2
            + params.gravity_mass_kg * params.gravity_lever_m**2
            + self.config.extra_inertia_kg_m2,
            self.config.viscous_nm_s_per_rad,
            self.config.coulomb_nm,
        )
        self.pdos = PdoObjects(
            self.device_id, POWER_ON_PDO_LAYOUTS[self.config.pdo_layout], MAPPABLE
        )
        self.objects = Epos4Objects(self, self.pdos)
        self.sync_count = 0
        self._power_on()

    def _power_on(self) -> None:
        """State after power-on or an NMT application reset."""
        self.nmt_state = NmtState.PRE_OPERATIONAL
        self.power_state = Cia402State.SWITCH_ON_DISABLED
        self.objects.reset()
        self._zero_rad = self.axis.position_rad
        self._home_offset_counts = 0
        self._referenced = False
        self._homing_bits = 0
        self._controlword = 0
        self._target_rad = self.axis.position_rad
        self._torque_command_mnm = 0.0
        self._pending: list[tuple[int, bytes]] = []  # RPDO objects applied at the next SYNC

    # ----------------------------------------------------------------- values the objects show
    def position_actual_counts(self) -> int:
        """Position actual value (0x6064) [counts], honouring the out_of_range fault."""
        counts = round(self._reported_motor_rad(self._zero_rad) * self._counts_per_rad)
        return counts + self._home_offset_counts

    def torque_actual_mnm(self) -> float:
        """Torque actual (0x6077) [mNm at the motor], honouring the over_current fault."""
        fault = self.faults.get(FaultKind.OVER_CURRENT)
        if fault is not None:
            return (
                OVER_CURRENT_FACTOR * self.params.max_torque_mnm
                if fault.value is None
                else fault.value
            )
        if self.power_state is not Cia402State.OPERATION_ENABLED:
            return 0.0
        if self.objects.mode == ModeOfOperation.CYCLIC_SYNC_TORQUE:
            return self._torque_command_mnm
        axis, load = self.axis, self._load
        velocity = axis.velocity_rad_s
        output_nm = (
            load.inertia_kg_m2 * axis.acceleration_rad_s2
            + load.viscous_nm_s_per_rad * velocity
            + (math.copysign(load.coulomb_nm, velocity) if velocity else 0.0)
            - self._external_drive_nm()
        )
        return output_nm / (self.params.gear_ratio * self.config.efficiency) * 1000.0

    def velocity_actual_rpm(self) -> int:
        """Velocity actual value (0x606C) [motor rpm]."""
        motor_rad_s = self.axis.velocity_rad_s * self.params.gear_ratio
        return round(motor_rad_s * 60.0 / (2.0 * math.pi))

    def statusword(self) -> int:
        """Statusword (0x6041): power state, remote, mode-specific and referenced bits."""
        bits = cia402.POSITION_REFERENCED_BIT if self._referenced else 0
        if self.power_state is Cia402State.OPERATION_ENABLED:
            mode = self.objects.mode
            if mode == ModeOfOperation.HOMING:
                bits |= self._homing_bits
            elif mode in (
                ModeOfOperation.CYCLIC_SYNC_POSITION,
                ModeOfOperation.CYCLIC_SYNC_TORQUE,
            ):
                bits |= cia402.MODE_SPECIFIC_12_BIT
        return cia402.statusword(self.power_state, bits)

    def _external_drive_nm(self) -> float:
        if self.external_torque_nm is None:
            return 0.0
        return self.external_torque_nm() * self.motor.direction_sign

    # -------------------------------------------------------------------------- commands
    def apply_controlword(self, controlword: int) -> None:
        """Drive the CiA 402 state machine (from the RPDO or an SDO write of 0x6040)."""
        previous, self._controlword = self._controlword, controlword
        before = self.power_state
        self.power_state = cia402.next_state(before, controlword, previous)
        if self.power_state is Cia402State.OPERATION_ENABLED:
            if before is not Cia402State.OPERATION_ENABLED:
                self.on_mode_change()
            starting = controlword & cia402.HOMING_START_BIT
            if starting and not previous & cia402.HOMING_START_BIT:
                self._start_homing()

    def on_mode_change(self) -> None:
        """Hold the present position and drop stale targets (enable or new mode)."""
        self._target_rad = self.axis.position_rad
        self._torque_command_mnm = 0.0
        self._pending.clear()
        self._homing_bits = 0

    def _start_homing(self) -> None:
        if self.objects.mode != ModeOfOperation.HOMING:
            return
        if self.objects.value(epos4.ObjectIndex.HOMING_METHOD) in HOMING_METHODS_HERE:
            home = self.objects.value(epos4.ObjectIndex.HOME_POSITION)
            raw = self.position_actual_counts() - self._home_offset_counts
            self._home_offset_counts = home - raw
            self._referenced = True
            self._homing_bits = cia402.TARGET_REACHED_BIT | cia402.MODE_SPECIFIC_12_BIT
        else:
            self._homing_bits = cia402.MODE_SPECIFIC_13_BIT  # method not simulated

    def set_target_position_counts(self, counts: int) -> None:
        """Set the CSP target now (SDO write of 0x607A, or a SYNC applying the RPDO)."""
        offset = self.objects.value(epos4.ObjectIndex.POSITION_OFFSET)
        demand = counts + offset - self._home_offset_counts
        self._target_rad = self._zero_rad + demand / self._counts_per_rad

    def set_target_torque_permille(self, permille: int) -> None:
        """Set the CST torque now (SDO write of 0x6071, or a SYNC applying the RPDO)."""
        total = permille + self.objects.value(epos4.ObjectIndex.TORQUE_OFFSET)
        torque = epos4.permille_to_torque_mnm(total, self.params.rated_torque_mnm)
        limit = self.params.max_torque_mnm
        self._torque_command_mnm = max(-limit, min(limit, torque))

    # ----------------------------------------------------------------------- device API
    def handle(self, frame: CanFrame, now_s: float) -> list[CanFrame]:
        """Process NMT, SYNC, SDO and RPDO frames; return the replies."""
        if frame.is_extended_id:
            return []
        cob_id = frame.arbitration_id
        node = self.device_id
        if cob_id == epos4.NMT_COB_ID:
            return self._handle_nmt(frame)
        if cob_id == SYNC_COB_ID:
            return self._handle_sync()
        if cob_id == epos4.SDO_REQUEST_BASE + node:
            if self.nmt_state is NmtState.STOPPED:
                return []
            if len(frame.data) != SDO_LENGTH:
                return self._reject(frame, 'SDO request must have 8 data bytes')
            return self._transmit(self._handle_sdo(frame))
        rpdo = self.pdos.rpdos.get(cob_id)
        if rpdo is not None and self.nmt_state is NmtState.OPERATIONAL:
            self._handle_rpdo(frame, rpdo)
        return []

    def _handle_nmt(self, frame: CanFrame) -> list[CanFrame]:
        try:
            message = epos4.decode_nmt(frame)
        except CodecError as error:
            return self._reject(frame, error)
        if message.node_id not in (0, self.device_id):
            return []
        command = message.command
        if command is NmtCommand.START_REMOTE_NODE:
            self.nmt_state = NmtState.OPERATIONAL
        elif command is NmtCommand.STOP_REMOTE_NODE:
            self.nmt_state = NmtState.STOPPED
        elif command is NmtCommand.ENTER_PRE_OPERATIONAL:
            self.nmt_state = NmtState.PRE_OPERATIONAL
        else:
            if command is NmtCommand.RESET_NODE:
                self._power_on()
            self.nmt_state = NmtState.PRE_OPERATIONAL
            return self._transmit([CanFrame(BOOTUP_BASE + self.device_id, b'\x00')])
        return []

    def _handle_sync(self) -> list[CanFrame]:
        if self.nmt_state is not NmtState.OPERATIONAL:
            return []
        self.sync_count += 1
        pending, self._pending = self._pending, []
        for index, data in pending:
            self._write_mapped(index, data)
        return self._transmit(self.tpdo_frames())

    def tpdo_frames(self) -> list[CanFrame]:
        """The synchronous TPDOs due at this SYNC, each with its mapped objects' values."""
        frames = []
        read = self.objects.read
        for pdo in self.pdos.tpdos:
            kind = pdo.transmission_type
            if 0 < kind <= 240 and self.sync_count % kind == 0:
                data = b''.join(read(item.index, 0)[: item.bits // 8] for item in pdo.objects)
                frames.append(CanFrame(pdo.cob_id, data))
        return frames

    def _handle_sdo(self, frame: CanFrame) -> list[CanFrame]:
        node = self.device_id
        command = frame.data[0]
        index = int.from_bytes(frame.data[1:3], 'little')
        subindex = frame.data[3]
        specifier = command >> 5
        try:
            if specifier == 1 and command & 0x02:  # expedited download (write)
                data = epos4.decode_sdo_request(frame).data
                self.objects.write(index, subindex, data, size_indicated=bool(command & 0x01))
                return [epos4.encode_sdo_download_ack(node, index, subindex)]
            if specifier == 2:  # upload (read)
                data = self.objects.read(index, subindex)
                return [epos4.encode_sdo_upload_response(node, index, subindex, data)]
            if specifier == 4:  # the client aborts: nothing to answer
                return []
            # Segmented/block transfers and invalid specifiers (e.g. upstream's probe 0x00).
            raise SdoAbortError(ABORT_BAD_COMMAND)
        except SdoAbortError as abort:
            return [epos4.encode_sdo_abort(node, index, subindex, abort.code)]
        except CodecError as error:  # not expected for an 8-byte frame; never crash on input
            return self._reject(frame, error)

    def _handle_rpdo(self, frame: CanFrame, rpdo: MappedPdo) -> None:
        data = frame.data
        if len(data) < rpdo.length_bytes:
            self._reject(frame, f'{len(data)} data bytes, its mapping needs {rpdo.length_bytes}')
            return
        offset = 0
        for item in rpdo.objects:
            size = item.bits // 8
            chunk = data[offset : offset + size]
            offset += size
            if rpdo.on_sync:
                self._pending.append((item.index, chunk))
            else:
                self._write_mapped(item.index, chunk)

    def _write_mapped(self, index: int, data: bytes) -> None:
        try:
            self.objects.write(index, 0, data, size_indicated=True)
        except SdoAbortError as abort:  # e.g. a mode the drive does not have
            self.frames_rejected += 1
            self.last_rejection = f'{self.describe()}: mapped 0x{index:04X}: {abort}'

    def advance(self, dt_s: float) -> None:
        """Move the output for ``dt_s`` [s] according to power state and mode."""
        if dt_s <= 0:
            return
        mode = self.objects.mode
        if self.power_state is not Cia402State.OPERATION_ENABLED:
            self.axis.hold(dt_s)
        elif mode == ModeOfOperation.CYCLIC_SYNC_POSITION:
            self.axis.follow_position(self._target_rad, self.config.csp_time_constant_s, dt_s)
        elif mode == ModeOfOperation.CYCLIC_SYNC_TORQUE:
            output_nm = (
                self._torque_command_mnm / 1000.0 * self.params.gear_ratio * self.config.efficiency
            )
            self.axis.apply_torque(output_nm + self._external_drive_nm(), self._load, dt_s)
        else:
            self.axis.hold(dt_s)  # homing method 37 and the unsimulated modes do not move
