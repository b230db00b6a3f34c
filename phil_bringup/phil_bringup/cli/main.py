"""`phil`: command-line control of a running Phil (works without the `ros2` CLI).

Examples:
    phil status [--watch]
    phil start ; phil ready
    phil look 0 10 ; phil gesture nod ; phil pose ready
    phil move right_elbow=45 waist=-10 --duration 2
    phil play rock --speed 1.2         (live progress; Ctrl-C stops the song)
    phil hit snare --velocity 6
    phil pause | resume | stop | estop | reset | quit ; phil speed 0.8
    phil send 'LOOK|0|10'              (raw protocol line over TCP 1951, acknowledged mode)
    phil plot runs/demo [--out DIR]    (figures and hit timing of a run's log folder)
    sudo phil bringup-can [--dry-run]  (reset the USB-CAN adapters, bring can0..can3 up)
    phil doctor [--sim]                (is this machine ready? no torque, nothing changed)
    phil wire-check capture.log        (do the frames a controller sent read as they should?)
    phil timing-calibrate runs/X --wav rec.wav  (when did the strokes sound? leads that fix it)
    phil import-midi song.mid --out scores/rock/song.txt [--play-list-id song]
"""

from __future__ import annotations

import argparse
import math
import signal
import sys

from phil_bringup.cli import bringup_can, doctor, import_midi, timing_calibrate, wire_check
from phil_bringup.cli.render import StatusView, parse_joint_targets, render_status
from phil_bringup.cli.tcp_client import DEFAULT_HOST, DEFAULT_PORT, send_lines
from phil_bringup.plots import cli as plots

TRIGGERS = ('start', 'ready', 'quit', 'pause', 'resume', 'stop', 'estop', 'reset')


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog='phil',
        description=__doc__.split('\n\n')[0],
        epilog=__doc__.split('\n', 2)[2],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        '--wait',
        type=float,
        default=5.0,
        metavar='S',
        help='how long to look for the running graph (default 5 s)',
    )
    commands = parser.add_subparsers(dest='command', required=True)
    status = commands.add_parser('status', help='show the robot status')
    status.add_argument('--watch', action='store_true', help='keep showing every update')
    for name in TRIGGERS:
        commands.add_parser(name, help=f'request {name.upper()}')
    speed = commands.add_parser('speed', help='set the playback speed (0.5..2.0)')
    speed.add_argument('speed', type=float)
    play = commands.add_parser('play', help='play a score by its play-list id (no paths)')
    play.add_argument('score')
    play.add_argument('--speed', type=float, default=1.0)
    play.add_argument('--start-bar', type=int, default=0)
    play.add_argument(
        '--improv',
        action='store_true',
        help="play the scores of the entry's genre folder back to back",
    )
    hit = commands.add_parser('hit', help='strike one instrument')
    hit.add_argument('instrument', help="e.g. snare, bass, 'closed hihat'")
    hit.add_argument('--velocity', type=int, default=5, choices=range(1, 8))
    hit.add_argument('--hand', choices=('right', 'left'), default='')
    look = commands.add_parser('look', help='turn the head (degrees)')
    look.add_argument('pan', type=float)
    look.add_argument('tilt', type=float)
    gesture = commands.add_parser('gesture', help='nod, shake, wave/hi, hurray/happy')
    gesture.add_argument('name')
    pose = commands.add_parser('pose', help='go to a named pose')
    pose.add_argument('name')
    move = commands.add_parser('move', help='move joints: joint=degrees ...')
    move.add_argument('targets', nargs='+')
    move.add_argument('--duration', type=float, default=0.0)
    send = commands.add_parser('send', help='send raw protocol lines over TCP')
    send.add_argument('lines', nargs='+')
    send.add_argument('--host', default=DEFAULT_HOST)
    send.add_argument('--port', type=int, default=DEFAULT_PORT)
    send.add_argument('--no-ack', action='store_true', help='upstream mode: no replies')
    plots.add_arguments(
        commands.add_parser('plot', help="figures (PNG) and hit timing of a run's log folder")
    )
    bringup_can.add_arguments(
        commands.add_parser(
            'bringup-can', help="reset the USB-CAN adapters and bring the URDF's CAN buses up"
        )
    )
    doctor.add_arguments(
        commands.add_parser(
            'doctor', help='check CAN, Dynamixel port, real-time limits and motors; no torque'
        )
    )
    wire_check.add_arguments(
        commands.add_parser(
            'wire-check',
            help='check a wire capture (candump -l): three decoders agree, targets in limits',
        )
    )
    timing_calibrate.add_arguments(
        commands.add_parser(
            'timing-calibrate',
            help='measure when the calibration strokes sounded (MIDI or a recording) and '
            'write the leads that cancel the delay',
        )
    )
    import_midi.add_arguments(
        commands.add_parser(
            'import-midi', help='a General MIDI drum track as a score the robot can play'
        )
    )
    return parser


def status_view(message) -> StatusView:
    return StatusView(
        state=message.state,
        speed=message.speed,
        realtime=message.realtime,
        play_id=message.play_id,
        bar=message.bar,
        total_bars=message.total_bars,
        resume_valid=message.resume_valid,
        resume_play_id=message.resume_play_id,
        resume_bar=message.resume_bar,
        joint_names=list(message.joint_names),
        commanded_rad=list(message.commanded_positions_rad),
        measured_rad=list(message.measured_positions_rad),
        faults=[f'{fault.joint or "robot"}: {fault.reason}' for fault in message.faults],
        last_rejection=message.last_rejection,
    )


def run_ros_command(args: argparse.Namespace) -> int:
    from phil_bringup.cli.ros_client import GraphNotRunningError, PhilClient

    try:
        with PhilClient(discovery_timeout_s=args.wait) as client:
            return run_with_client(client, args)
    except (GraphNotRunningError, TimeoutError) as error:
        print(str(error), file=sys.stderr)
        return 2


def run_with_client(client, args: argparse.Namespace) -> int:
    from phil_bringup.cli.progress import PlayProgress
    from phil_msgs import action, msg, srv

    if args.command == 'status':
        if args.watch:
            client.watch(
                msg.RobotStatus,
                '/phil/status',
                lambda m: print('\033[2J\033[H' + render_status(status_view(m)), flush=True),
            )
            return 0
        print(render_status(status_view(client.latest(msg.RobotStatus, '/phil/status'))))
        return 0
    if args.command in TRIGGERS:
        response = client.call(srv.Trigger, f'/phil/{args.command}', srv.Trigger.Request())
        return report(response.accepted, response.reason, f'state {response.state}')
    if args.command == 'speed':
        response = client.call(srv.SetSpeed, '/phil/speed', srv.SetSpeed.Request(speed=args.speed))
        return report(response.accepted, response.reason, f'speed {response.speed:.2f}')
    if args.command == 'play':
        goal = action.Play.Goal(
            score=args.score, speed=args.speed, start_bar=args.start_bar, improv=args.improv
        )
        with PlayProgress() as progress:
            accepted, result = client.run_action(action.Play, '/phil/play', goal, progress.update)
        if not accepted:
            return report(False, 'the play goal was rejected', '')
        timing = result.timing
        detail = (
            f'{result.hits_played} hits, {result.bars_played} bars in '
            f'{result.duration_s:.1f} s; timing mean {timing.mean_error_s * 1e3:.2f} ms'
            f', p99 {timing.p99_abs_error_s * 1e3:.2f} ms'
        )
        return report(result.success, result.reason, detail)
    goal_type, name, goal = motion_goal(args, action)
    accepted, result = client.run_action(goal_type, name, goal)
    if not accepted:
        return report(False, f'{name} rejected the goal', '')
    return report(result.success, result.reason, 'done')


def motion_goal(args: argparse.Namespace, action):
    if args.command == 'hit':
        return (
            action.Hit,
            '/phil/hit',
            action.Hit.Goal(instrument=args.instrument, velocity=args.velocity, hand=args.hand),
        )
    if args.command == 'look':
        return (
            action.Look,
            '/phil/look',
            action.Look.Goal(pan_rad=math.radians(args.pan), tilt_rad=math.radians(args.tilt)),
        )
    if args.command == 'gesture':
        return action.Gesture, '/phil/gesture', action.Gesture.Goal(gesture=args.name)
    if args.command == 'pose':
        return action.Pose, '/phil/pose', action.Pose.Goal(pose=args.name)
    names, positions = parse_joint_targets(args.targets)
    return (
        action.Move,
        '/phil/move',
        action.Move.Goal(joint_names=names, positions_rad=positions, duration_s=args.duration),
    )


def report(ok: bool, reason: str, detail: str) -> int:
    if ok:
        print(f'ok{": " + detail if detail else ""}')
        return 0
    print(f'rejected: {reason or "no reason given"}', file=sys.stderr)
    return 1


def main(argv: list[str] | None = None) -> int:
    # Ctrl-C cancels a running goal. A shell or CI runner that started us in the background
    # leaves SIGINT ignored, which would make it kill nothing and cancel nothing: take it back.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    args = build_parser().parse_args(argv)
    try:
        if args.command == 'plot':
            return plots.plot_run(args.run, args.out, args.window_ms)
        if args.command == 'bringup-can':
            return bringup_can.bringup_can(args)
        if args.command == 'doctor':
            return doctor.doctor(args)
        if args.command == 'wire-check':
            return wire_check.wire_check(args)
        if args.command == 'timing-calibrate':
            return timing_calibrate.timing_calibrate(args)
        if args.command == 'import-midi':
            return import_midi.import_midi(args)
        if args.command == 'send':
            for reply in send_lines(args.lines, args.host, args.port, not args.no_ack):
                print(reply)
            return 0
        return run_ros_command(args)
    except ConnectionRefusedError:
        print(
            f'nothing listens on {args.host}:{args.port}: is Phil running (`make run`)?',
            file=sys.stderr,
        )
        return 2
    except ValueError as error:
        print(f'phil {args.command}: {error}', file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == '__main__':
    sys.exit(main())
