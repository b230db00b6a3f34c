"""The launcher's command line: its options, and the per-node parameter values they give
(``--tcp-port``, ``--sim-*``, ``--play-list`` and every ``--param NODE.NAME=VALUE``)."""

from __future__ import annotations

import argparse
from pathlib import Path

DESCRIPTION = "Run Phil's node set as separate processes, without a ROS launch install."

#: Parameters the launcher sets itself: --param may not change them (e.g. a simulated graph's
#: hardware told it drives the real robot).
LAUNCHER_PARAMETERS = frozenset({'sim', 'watched_nodes', 'log_dir'})


def _parameter_override(text: str) -> tuple[str, str, str]:
    """'node.name=value' -> (node, name, value)."""
    target, equals, value = text.partition('=')
    node, dot, name = target.partition('.')
    if not (equals and dot and node and name):
        raise argparse.ArgumentTypeError(f'{text!r} is not NODE.NAME=VALUE')
    return node, name, value


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=DESCRIPTION)
    _add_robot_and_connection_options(parser)
    _add_node_options(parser)
    args = parser.parse_args(argv)
    if args.bringup_can and not args.real:
        parser.error('--bringup-can brings up the real CAN interfaces: it needs --real')
    return args


def _add_robot_and_connection_options(parser: argparse.ArgumentParser) -> None:
    """Which robot, where the output goes, and how the brain and DDS reach the graph."""
    parser.add_argument(
        '--real',
        action='store_true',
        help='drive the real robot (can0..3, /dev/ttyUSB0) instead of the simulators',
    )
    parser.add_argument(
        '--bringup-can',
        action='store_true',
        help='with --real: first reset the USB-CAN adapters and bring the CAN interfaces up '
        '(phil bringup-can; needs root)',
    )
    parser.add_argument(
        '--log-dir', type=Path, default=None, help='run folder for process output and CSV logs'
    )
    parser.add_argument('--tcp-port', type=int, default=1951, help='TCP port for the brain')
    parser.add_argument('--tcp-address', default='127.0.0.1', help='TCP address to bind')
    parser.add_argument(
        '--tower-port',
        type=int,
        default=8080,
        help='HTTP port of the control tower page (on --tcp-address; 0: any free port)',
    )
    parser.add_argument(
        '--gen1',
        action='store_true',
        help="also serve the Gen-1 brain's protocol (gen1_bridge, on --tcp-address)",
    )
    parser.add_argument(
        '--gen1-port', type=int, default=9999, help="TCP port of the Gen-1 brain's protocol"
    )
    parser.add_argument(
        '--network',
        action='store_true',
        help='DDS on every network interface instead of loopback only: '
        'anyone on the network can join the graph (secure it with '
        'SROS2, see the README)',
    )


def _add_node_options(parser: argparse.ArgumentParser) -> None:
    """What the nodes are given: play list, simulated buses, parameters, process layout, demo."""
    parser.add_argument(
        '--play-list',
        metavar='YAML',
        type=Path,
        default=None,
        help="the score player's play list instead of the workspace's scores",
    )
    parser.add_argument(
        '--sim-channel-base',
        metavar='GROUP',
        default='',
        help='simulated CAN buses on GROUP+0..3 (ff11:: only) instead of the '
        "URDF's, so several graphs can run on one machine",
    )
    parser.add_argument(
        '--sim-epos4-pdo-layout',
        choices=('phil', 'other'),
        default='phil',
        help="the simulated EPOS4 drives' PDO layout at power-on: other = drives that were "
        'replaced or reset (the hardware node writes its layout at configure)',
    )
    parser.add_argument(
        '--sim-capture',
        metavar='FILE',
        type=Path,
        default=None,
        help='the simulator writes every frame and serial block the hardware node sends to '
        'FILE (candump -l format; check it with phil wire-check FILE)',
    )
    parser.add_argument(
        '--sim-dxl-port',
        metavar='PATH',
        default='',
        help='PTY link of the simulated Dynamixel bus instead of the URDF path',
    )
    parser.add_argument(
        '--param',
        metavar='NODE.NAME=VALUE',
        action='append',
        default=[],
        type=_parameter_override,
        help='set a parameter of a node over its parameter file (repeatable), '
        'e.g. tcp_bridge.reply_timeout_s=5.0',
    )
    parser.add_argument(
        '--composed',
        action='store_true',
        help='run the command path (tcp_bridge, behavior_planner, trajectory_generator, '
        'score_player) in one process on one executor instead of one process each',
    )
    parser.add_argument(
        '--demo',
        metavar='SCORE',
        default=None,
        help='play SCORE end to end (START, READY, PLAY, QUIT), then exit',
    )


def node_overrides(args: argparse.Namespace, ros_nodes: set[str]) -> dict[str, dict[str, str]]:
    """The parameter values the options give each node (a plain process's are its
    ``--option value`` pairs).

    Raises:
        ValueError: A ``--param`` names a node not in ``ros_nodes`` or a parameter in
            :data:`LAUNCHER_PARAMETERS`; the message is the one to print.
    """
    overrides = {
        'tcp_bridge': {'port': str(args.tcp_port), 'address': args.tcp_address},
        'gen1_bridge': {'port': str(args.gen1_port), 'address': args.tcp_address},
        'control_tower': {'port': str(args.tower_port), 'address': args.tcp_address},
        'hardware': {},
        'device_simulator': {},
    }
    if args.sim_channel_base:
        overrides['hardware']['can_channel_base'] = args.sim_channel_base
        overrides['device_simulator']['can-channel-base'] = args.sim_channel_base
    if args.sim_dxl_port:
        overrides['hardware']['dxl_port'] = args.sim_dxl_port
        overrides['device_simulator']['dxl-port'] = args.sim_dxl_port
    if args.sim_epos4_pdo_layout != 'phil':
        overrides['device_simulator']['epos4-pdo-layout'] = args.sim_epos4_pdo_layout
    if args.sim_capture is not None:
        overrides['device_simulator']['capture'] = str(args.sim_capture.resolve())
    if args.play_list is not None:
        for node in ('score_player', 'control_tower', 'gen1_bridge'):  # one list for all
            overrides.setdefault(node, {})['play_list'] = str(args.play_list.resolve())
    for node, name, value in args.param:
        if node not in ros_nodes:
            raise ValueError(
                f'--param {node}.{name}: no ROS node {node!r} in this graph; nodes: '
                f'{", ".join(sorted(ros_nodes))}'
            )
        if name in LAUNCHER_PARAMETERS:
            raise ValueError(f'--param {node}.{name}: set by the launcher (use its own options)')
        overrides.setdefault(node, {})[name] = value
    return overrides
