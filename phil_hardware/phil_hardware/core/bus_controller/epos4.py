"""Controller-side EPOS4 driver: SDO configuration list, enable and mode-switch frames, the
cyclic CSP/CST frames with the wrist torque law, and TPDO decoding, all as upstream's.

Pure: it builds frames and keeps per-drive control state; :mod:`.epos4_family` sends them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from phil_hardware.core.chunk_queue import ControlMode
from phil_hardware.core.codecs import epos4
from phil_hardware.core.codecs.epos4 import (
    Cia402State,
    Controlword,
    ModeOfOperation,
    NmtCommand,
    ObjectIndex,
)
from phil_hardware.core.codecs.epos4_cyclic import DriveCodec
from phil_hardware.core.codecs.frame import CanFrame

from .config import CanopenFrameForm, Epos4Params, JointConfig

CIA301 = CanopenFrameForm.CIA301

# Upstream's start-up SDO list, in its order: (object, sub-index, value, size in bytes).
CONFIGURE_SDOS: tuple[tuple[int, int, int, int], ...] = (
    (ObjectIndex.MODES_OF_OPERATION, 0, ModeOfOperation.CYCLIC_SYNC_POSITION, 1),
    (ObjectIndex.POSITION_OFFSET, 0, 0, 4),
    (ObjectIndex.TORQUE_OFFSET, 0, 0, 2),
    (ObjectIndex.MODES_OF_OPERATION, 0, ModeOfOperation.CYCLIC_SYNC_VELOCITY, 1),
    (ObjectIndex.VELOCITY_OFFSET, 0, 0, 4),
    (ObjectIndex.MODES_OF_OPERATION, 0, ModeOfOperation.CYCLIC_SYNC_TORQUE, 1),
    (ObjectIndex.TORQUE_OFFSET, 0, 0, 2),
    (ObjectIndex.MODES_OF_OPERATION, 0, ModeOfOperation.HOMING, 1),
    (ObjectIndex.HOMING_METHOD, 0, epos4.HOMING_METHOD_CURRENT_POSITION, 1),
    (ObjectIndex.HOME_OFFSET_MOVE_DISTANCE, 0, 0, 4),
    (ObjectIndex.HOME_POSITION, 0, 0, 4),
)

_CST = int(ModeOfOperation.CYCLIC_SYNC_TORQUE)  # an int compare is cheaper than an enum's
MODE_OF = {
    ControlMode.POSITION: ModeOfOperation.CYCLIC_SYNC_POSITION,
    ControlMode.TORQUE: ModeOfOperation.CYCLIC_SYNC_TORQUE,
}


def sdo_download(
    node_id: int, index: int, subindex: int, value: int, size: int, form: CanopenFrameForm = CIA301
) -> CanFrame:
    """Expedited SDO download in the drive's frame form (sized, or upstream's 0x22)."""
    return epos4.encode_sdo_download(
        node_id, index, subindex, value, size, size_indicated=form.sdo_size_indicated
    )


def controlword_frame(node_id: int, controlword: int, form: CanopenFrameForm = CIA301) -> CanFrame:
    """The controlword RPDO in the drive's frame form (DLC 2, or upstream's DLC 8)."""
    return epos4.encode_controlword(node_id, controlword, pad_to_dlc8=form.pad_to_dlc8)


def probe_frame(node_id: int, form: CanopenFrameForm = CIA301) -> CanFrame:
    """Discovery: any reply on 0x580+n proves the drive is there. CiA 301: a read of the
    device type (0x1000), which every CANopen device has; upstream's form: its eight zero
    bytes (a download segment outside any transfer, which the drive answers with an abort)."""
    if form is CanopenFrameForm.UPSTREAM:
        return epos4.encode_sdo_probe(node_id)
    return epos4.encode_sdo_upload_request(node_id, ObjectIndex.DEVICE_TYPE, 0)


def mode_sdo(node_id: int, mode: ModeOfOperation, form: CanopenFrameForm = CIA301) -> CanFrame:
    """SDO download of 0x6060 (modes of operation, 1 byte)."""
    return sdo_download(node_id, ObjectIndex.MODES_OF_OPERATION, 0, int(mode), 1, form)


def mode_switch_frames(
    node_id: int, mode: ModeOfOperation, form: CanopenFrameForm = CIA301
) -> list[CanFrame]:
    """Run-time CSP <-> CST switch as upstream: 0x6060 SDO, Shutdown, Enable (no SYNC)."""
    return [
        mode_sdo(node_id, mode, form),
        controlword_frame(node_id, Controlword.SHUTDOWN, form),
        controlword_frame(node_id, Controlword.ENABLE_OPERATION, form),
    ]


def shutdown_frames(node_id: int, form: CanopenFrameForm = CIA301) -> list[CanFrame]:
    """Controlword Shutdown followed by SYNC (power stage off; sent on a range violation)."""
    return [controlword_frame(node_id, Controlword.SHUTDOWN, form), epos4.encode_sync()]


@dataclass
class Epos4Drive:
    """One EPOS4 drive and its cyclic control state.

    Attributes:
        mode: Mode the drive was last switched to.
        enabled: The controller sends targets (False after a shutdown on a fault).
        previous_error_rad / filtered_derivative_rad_s: CST law state (motor rad).
        gravity_indices: Joint indices of (shoulder_2, elbow, wrist) for the gravity term.
    """

    joint: str
    index: int
    bus: str
    node_id: int
    params: Epos4Params
    gravity_indices: tuple[int, ...] = ()
    mode: ModeOfOperation = ModeOfOperation.CYCLIC_SYNC_POSITION
    enabled: bool = False
    previous_error_rad: float = 0.0
    filtered_derivative_rad_s: float = 0.0
    codec: DriveCodec = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.codec = DriveCodec(self.node_id, self.params.gear_ratio, self.params.rated_torque_mnm)

    def cyclic_frame(self, target_rad: float, measured: Sequence[float]) -> CanFrame:
        """The 1 ms target RPDO in the current mode.

        CSP: target position in counts. CST: ``kp*e + kd*filtered(de/dt) - gravity`` with
        ``e`` in motor rad and the gravity term from the measured arm angles (upstream's law,
        :func:`~phil_hardware.core.codecs.epos4.gravity_torque_mnm`).

        Args:
            target_rad: Joint target [rad].
            measured: Measured joint positions of the whole robot [rad] (index order).
        """
        params = self.params
        target_motor = params.joint_to_motor_rad(target_rad)
        if self.mode != _CST:
            return self.codec.target_position_frame(target_motor)
        measured_motor = params.joint_to_motor_rad(measured[self.index])
        error = target_motor - measured_motor
        gravity = 0.0
        if self.gravity_indices and params.gravity_mass_kg > 0.0:
            angles = [measured[i] for i in self.gravity_indices]
            if all(a == a for a in angles):  # no NaN
                gravity = epos4.gravity_torque_mnm(
                    angles, params.gravity_mass_kg, params.gravity_lever_m, params.gear_ratio
                )
        torque, self.filtered_derivative_rad_s = epos4.cst_torque_law(
            error,
            self.previous_error_rad,
            self.filtered_derivative_rad_s,
            params.kp_mnm_per_rad,
            params.kd_mnm_s_per_rad,
            gravity,
        )
        self.previous_error_rad = error
        return epos4.encode_target_torque(
            self.node_id, torque, params.rated_torque_mnm, params.max_torque_mnm
        )

    def switch_to(
        self, control_mode: int, target_rad: float, measured: Sequence[float]
    ) -> list[CanFrame]:
        """Frames that switch the drive to ``control_mode`` and reset the CST law state."""
        mode = MODE_OF[ControlMode(control_mode)]
        self.mode = mode
        measured_rad = measured[self.index]
        error = 0.0
        if measured_rad == measured_rad:
            error = self.params.joint_to_motor_rad(target_rad) - self.params.joint_to_motor_rad(
                measured_rad
            )
        # Start the derivative from the current error so the switch does not kick.
        self.previous_error_rad = error
        self.filtered_derivative_rad_s = 0.0
        return mode_switch_frames(self.node_id, mode, self.params.frame_form)

    def decode(self, frame: CanFrame) -> tuple[int, float, float]:
        """Decode TPDO 0x180+n into (statusword, joint position [rad], torque [mNm]): the
        codec's order, with the position turned from the motor's side to the joint's.

        Raises:
            CodecError: The frame is not a valid TPDO.
        """
        statusword, position_rad, torque_mnm = self.codec.feedback(frame)
        return statusword, self.params.motor_to_joint_rad(position_rad), torque_mnm


class Epos4Group:
    """All EPOS4 drives of the robot."""

    def __init__(
        self, joints: Sequence[JointConfig], gravity_joints: Mapping[str, tuple[str, str, str]]
    ) -> None:
        """Collect the EPOS4 joints and resolve their gravity chains to indices."""
        index = {j.name: j.index for j in joints}
        self.drives = [
            Epos4Drive(
                j.name,
                j.index,
                j.motor.bus,
                j.motor.device_id,
                j.motor,
                tuple(index[n] for n in gravity_joints.get(j.name, ())),
            )
            for j in joints
            if isinstance(j.motor, Epos4Params)
        ]

    def buses(self, drives: Sequence[Epos4Drive] | None = None) -> list[str]:
        """Buses carrying at least one of ``drives`` (default all), in first-seen order."""
        result: list[str] = []
        for drive in self.drives if drives is None else drives:
            if drive.bus not in result:
                result.append(drive.bus)
        return result


def reenable_frames(drive: Epos4Drive, measured_rad: float) -> list[CanFrame]:
    """After a reset: CSP mode, target = measured, Shutdown, Enable (SYNC sent by the caller)."""
    params = drive.params
    form = params.frame_form
    motor_rad = params.joint_to_motor_rad(measured_rad) if measured_rad == measured_rad else 0.0
    return [
        mode_sdo(drive.node_id, ModeOfOperation.CYCLIC_SYNC_POSITION, form),
        epos4.encode_target_position(drive.node_id, motor_rad, params.gear_ratio),
        controlword_frame(drive.node_id, Controlword.SHUTDOWN, form),
        controlword_frame(drive.node_id, Controlword.ENABLE_OPERATION, form),
    ]


def nmt_start(node_id: int, form: CanopenFrameForm = CIA301) -> CanFrame:
    """NMT start remote node (COB-ID 0x000, ``[0x01, node]``): the drive's PDOs start."""
    return epos4.encode_nmt(NmtCommand.START_REMOTE_NODE, node_id, pad_to_dlc8=form.pad_to_dlc8)


def nmt_pre_operational(node_id: int, form: CanopenFrameForm = CIA301) -> CanFrame:
    """NMT enter pre-operational (``[0x80, node]``): PDOs stop, their layout may change."""
    return epos4.encode_nmt(
        NmtCommand.ENTER_PRE_OPERATIONAL, node_id, pad_to_dlc8=form.pad_to_dlc8
    )


def describe_statusword(statusword: int) -> str:
    """Lower-case CiA 402 state text for status reports, e.g. 'operation enabled'."""
    return epos4.cia402_state(statusword).value.lower()


def drive_fault_text(statusword: int) -> str:
    """'' when healthy, else why the drive counts as failed (FAULT / FAULT REACTION)."""
    state = epos4.cia402_state(statusword)
    if state in (Cia402State.FAULT, Cia402State.FAULT_REACTION_ACTIVE):
        return f'drive reports {state.value.lower()} (statusword 0x{statusword:04X})'
    return ''


def is_operation_enabled(statusword: int) -> bool:
    """True in CiA 402 'Operation enabled'."""
    return epos4.cia402_state(statusword) == Cia402State.OPERATION_ENABLED


__all__ = [
    'CONFIGURE_SDOS',
    'Epos4Drive',
    'Epos4Group',
    'describe_statusword',
    'drive_fault_text',
    'is_operation_enabled',
    'controlword_frame',
    'mode_sdo',
    'mode_switch_frames',
    'nmt_pre_operational',
    'nmt_start',
    'probe_frame',
    'reenable_frames',
    'sdo_download',
    'shutdown_frames',
]
