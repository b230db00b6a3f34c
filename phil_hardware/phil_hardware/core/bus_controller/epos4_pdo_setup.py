"""Phil's PDO layout written into every EPOS4 at configure, and read back.

Upstream trusted the drives to hold its layout (set once with EPOS Studio); a drive replaced,
reset to its defaults or set up for another machine would then take the set-points for other
objects. Here each drive's PDOs are read and every one that differs from the layout of
``codecs/epos4_pdo_layout.py`` is written in pre-operational (the CiA 301 sequence of
``codecs/cia301_pdo.py``); reading it back must then give exactly it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from phil_hardware.core.codecs.cia301_pdo import (
    PdoLayout,
    configuration_writes,
    expected_values,
    mismatches,
)
from phil_hardware.core.codecs.epos4_pdo_layout import PHIL_PDO_LAYOUT

from .base import ControllerError
from .epos4 import Epos4Drive, nmt_pre_operational

if TYPE_CHECKING:
    from .epos4_family import Epos4Family


def write_pdo_layout(family: Epos4Family, drives: Sequence[Epos4Drive]) -> None:
    """Give ``drives`` Phil's PDO layout and check it took. Each PDO is read first and written
    (in pre-operational) only on the drives that hold something else, which is said; all
    drives are served in parallel.

    Raises:
        ControllerError: A drive refused a write (naming the object and the SDO abort) or reads
            back something else (naming the drive, the PDO and each object that differs).
    """
    ctl = family.ctl
    rewritten: dict[int, list[tuple[str, str]]] = {}  # node id -> (PDO, first difference)
    for pdo in PHIL_PDO_LAYOUT:
        differing = _differences(family, drives, pdo)
        if not differing:
            continue
        targets = [drive for drive in drives if drive.node_id in differing]
        for drive in targets:
            if drive.node_id not in rewritten:  # a layout changes in pre-operational only
                ctl.send(drive.bus, nmt_pre_operational(drive.node_id, drive.params.frame_form))
            rewritten.setdefault(drive.node_id, []).append(
                (pdo.name(), differing[drive.node_id][0])
            )
        writes = {drive.node_id: configuration_writes(pdo, drive.node_id) for drive in targets}
        for step, write in enumerate(writes[targets[0].node_id]):
            family.sdo_write_all(
                targets,
                write.index,
                write.subindex,
                {node: sequence[step].value for node, sequence in writes.items()},
                write.size,
                f'{pdo.name()} set-up: SDO write {write.describe()}',
            )
        for node, wrong in _differences(family, targets, pdo).items():
            drive = next(drive for drive in targets if drive.node_id == node)
            raise ControllerError(
                f'{ctl.describe_motor(drive.index)}: {pdo.name()} not taken: ' + '; '.join(wrong)
            )
    for drive in drives:
        if drive.node_id in rewritten:
            pdos = rewritten[drive.node_id]
            ctl.warn(
                f"{ctl.describe_motor(drive.index)} held another PDO layout; Phil's written and "
                f'read back ({", ".join(name for name, _ in pdos)}; e.g. {pdos[0][1]})'
            )


def _differences(
    family: Epos4Family, drives: Sequence[Epos4Drive], pdo: PdoLayout
) -> dict[int, list[str]]:
    """Read ``pdo``'s objects from every drive; what differs from Phil's layout, by node id."""
    expected = {drive.node_id: expected_values(pdo, drive.node_id) for drive in drives}
    read: dict[int, dict[tuple[int, int], int]] = {drive.node_id: {} for drive in drives}
    for item in expected[drives[0].node_id]:
        for node, value in family.sdo_read_all(drives, item.index, item.subindex).items():
            read[node][(item.index, item.subindex)] = value
    differences = {node: mismatches(expected[node], read[node]) for node in expected}
    return {node: wrong for node, wrong in differences.items() if wrong}
