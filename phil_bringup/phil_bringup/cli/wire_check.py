"""`phil wire-check CAPTURE`: read a wire capture three ways and say whether they agree.

The capture is candump's log format for the CAN buses (``candump -l can0 can1 can2 can3`` on
the robot, or the device simulator's ``--capture``, ``tools/run.sh --sim-capture``) plus the
simulator's serial blocks. Every command must read alike in an independent decoder written
from the protocol documents, in upstream's simulator's rules and in our codecs, address a
motor the URDF puts on that bus, and keep position targets within the joint limits. Exit 0
when all of that holds, 1 when not, 2 when the capture cannot be read.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from phil_description.core import (
    CanopenFrameForm,
    DescriptionError,
    default_robot_model,
    load_robot_model,
)
from phil_hardware.core.wire_check import CaptureError, WireChecker, WireReport, read_capture


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('capture', type=Path, help='capture file (candump -l format)')
    parser.add_argument(
        '--urdf', type=Path, default=None, help='robot description (default: the installed one)'
    )
    parser.add_argument(
        '--epos4-frame-form',
        choices=[form.value for form in CanopenFrameForm],
        default=CanopenFrameForm.CIA301.value,
        help='the EPOS4 frame form the hardware node ran with (its epos4_frame_form)',
    )


def wire_check(args: argparse.Namespace) -> int:
    try:
        form = {'epos4_frame_form': args.epos4_frame_form}
        model = (
            load_robot_model(args.urdf, xacro_args=form)
            if args.urdf
            else default_robot_model(epos4_frame_form=args.epos4_frame_form)
        )
        report = WireChecker(model).check(read_capture(args.capture))
    except (CaptureError, DescriptionError, OSError) as error:
        print(f'phil wire-check: {error}', file=sys.stderr)
        return 2
    print(render(report, args.capture))
    return 0 if report.ok else 1


def render(report: WireReport, capture: Path) -> str:
    """The summary: commands per kind, what upstream's simulator ignores, the problems."""
    lines = [f'{capture}: {report.commands} commands']
    if report.device_frames:
        lines[0] += f' ({report.device_frames} frames the motors sent, not checked)'
    for name, count in sorted(report.by_kind.items()):
        ignored = " (ignored by upstream's simulator)" if name in report.ignored_upstream else ''
        lines.append(f'  {name:<28} {count:>9}{ignored}')
    if report.ok:
        lines.append(
            'all read alike: independent decoder, upstream simulator rules and our codecs; '
            'every motor addressed is on its bus and every target within its limits'
        )
        return '\n'.join(lines)
    if not report.commands:
        lines.append('no commands in the capture')
    lines.append(f'{report.problem_count} problem(s):')
    lines.extend(f'  {problem}' for problem in report.problems)
    if report.problem_count > len(report.problems):
        lines.append(f'  ... and {report.problem_count - len(report.problems)} more')
    return '\n'.join(lines)
