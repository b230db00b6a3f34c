"""In-process rclpy test of the trajectory_generator node (own context, SingleThreadedExecutor:
no callback of the node may block)."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')

from action_msgs.msg import GoalStatus  # noqa: E402
from rclpy.action import ActionClient  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import String  # noqa: E402

from phil_control.conversions import TimeBase, chunk_to_msg  # noqa: E402
from phil_control.core.motion import (  # noqa: E402
    ChunkingConfig,
    MotionPlanner,
    MoveRequest,
    PlannedMotion,
    chunk_trajectory,
)
from phil_control.trajectory_generator.node import TrajectoryGenerator  # noqa: E402
from phil_description.core import default_robot_model  # noqa: E402
from phil_description.core.graph_key import GraphKey  # noqa: E402
from phil_msgs.action import Gesture, Look, Move, Pose  # noqa: E402
from phil_msgs.msg import (  # noqa: E402
    Fault,
    HardwareStatus,
    MotorState,
    MotorStates,
    TrajectoryChunk,
)
from phil_msgs.srv import Trigger  # noqa: E402
from phil_ros.graph_safety import sign_message, signed_by, signed_goal_id  # noqa: E402
from phil_ros.qos import LATCHED, RELIABLE_QUEUE  # noqa: E402
from phil_ros.testing import ros_test_context  # noqa: E402

MODEL = default_robot_model()
NAMES = MODEL.joint_names
ACTIONS = {'look': Look, 'gesture': Gesture, 'move': Move, 'pose': Pose}
HALT_DECELERATION = 50.0
KEY = GraphKey.from_environment()  # the graph key the node under test reads (conftest)


@pytest.fixture(scope='module')
def context():
    with ros_test_context() as ctx:
        yield ctx


def _ns(stamp) -> int:
    return stamp.sec * 10**9 + stamp.nanosec


class Played:
    """The motion a bus loop plays from received chunks: replace semantics + cubic Hermite.

    Times are seconds relative to ``origin_ns`` (the first chunk's stamp), to keep precision.
    """

    def __init__(self, messages: list[TrajectoryChunk], origin_ns: int | None = None) -> None:
        self.origin_ns = (
            _ns(messages[0].trajectory.header.stamp) if origin_ns is None else origin_ns
        )
        self.entries = []  # [start_ns, end_ns, times_s, positions, velocities]
        for msg in messages:
            start = _ns(msg.trajectory.header.stamp)
            offsets = [_ns(point.time_from_start) for point in msg.trajectory.points]
            if msg.replace:
                self.entries = [entry for entry in self.entries if entry[0] < start]
                for entry in self.entries:
                    entry[1] = min(entry[1], start)
            assert list(msg.trajectory.joint_names) == list(NAMES)
            self.entries.append(
                [
                    start,
                    start + offsets[-1],
                    np.array([self.relative(start + offset) for offset in offsets]),
                    np.array([point.positions for point in msg.trajectory.points]),
                    np.array([point.velocities for point in msg.trajectory.points]),
                ]
            )

    def relative(self, nanoseconds: int) -> float:
        return (nanoseconds - self.origin_ns) * 1e-9

    def sample(self, time_s: float) -> tuple[np.ndarray, np.ndarray]:
        for start, end, times, positions, velocities in reversed(self.entries):
            if self.relative(start) - 1e-9 <= time_s <= self.relative(end) + 1e-9:
                k = int(
                    np.clip(np.searchsorted(times, time_s, side='right') - 1, 0, len(times) - 2)
                )
                h = times[k + 1] - times[k]
                s = (time_s - times[k]) / h
                p0, p1 = positions[k], positions[k + 1]
                m0, m1 = velocities[k] * h, velocities[k + 1] * h
                position = (
                    (2 * s**3 - 3 * s**2 + 1) * p0
                    + (s**3 - 2 * s**2 + s) * m0
                    + (-2 * s**3 + 3 * s**2) * p1
                    + (s**3 - s**2) * m1
                )
                velocity = (
                    (6 * s**2 - 6 * s) * p0
                    + (3 * s**2 - 4 * s + 1) * m0
                    + (-6 * s**2 + 6 * s) * p1
                    + (3 * s**2 - 2 * s) * m1
                ) / h
                return position, velocity
        raise AssertionError(f'no chunk covers t={time_s}')

    @property
    def start_s(self) -> float:
        return self.relative(self.entries[0][0])

    @property
    def end_s(self) -> float:
        return self.relative(self.entries[-1][1])


class Harness:
    def __init__(self, context, **parameters) -> None:
        overrides = [Parameter(name, value=value) for name, value in parameters.items()]
        self.node = TrajectoryGenerator(context=context, parameter_overrides=overrides)
        self.probe = rclpy.create_node('probe', context=context)
        self.chunks: list[TrajectoryChunk] = []
        self.states: list[JointState] = []
        self.feedback: list = []
        self.rejected: list[String] = []
        self.probe.create_subscription(
            TrajectoryChunk, '/hardware/trajectory_chunks', self.chunks.append, RELIABLE_QUEUE
        )
        self.probe.create_subscription(
            String, '/trajectory_generator/rejected_chunks', self.rejected.append, 10
        )
        self.probe.create_subscription(
            JointState, '/trajectory_generator/commanded_state', self.states.append, LATCHED
        )
        self.clients = {
            name: ActionClient(self.probe, action, f'/trajectory_generator/{name}')
            for name, action in ACTIONS.items()
        }
        self.score = self.probe.create_publisher(
            TrajectoryChunk, '/trajectory_generator/chunks', RELIABLE_QUEUE
        )
        self.motor_states = self.probe.create_publisher(MotorStates, '/hardware/motor_states', 10)
        self.halt = self.probe.create_client(Trigger, '/trajectory_generator/halt')
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(self.node)
        self.executor.add_node(self.probe)
        assert self.spin_until(lambda: self.states), 'no latched commanded_state'
        for client in self.clients.values():
            assert client.wait_for_server(timeout_sec=10.0)

    def spin_until(self, predicate, timeout_s: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout_s
        while not predicate() and time.monotonic() < deadline:
            self.executor.spin_once(timeout_sec=0.01)
        return bool(predicate())

    def spin_for(self, seconds: float) -> None:
        self.spin_until(lambda: False, seconds)

    def send(self, name: str, **fields):
        future = self.clients[name].send_goal_async(
            ACTIONS[name].Goal(**fields),
            feedback_callback=self.feedback.append,
            goal_uuid=signed_goal_id(KEY),  # as the behavior planner sends it
        )
        assert self.spin_until(future.done)
        handle = future.result()
        assert handle.accepted  # every goal is accepted; bad ones are aborted with a reason
        return handle

    def result(self, handle, timeout_s: float = 10.0):
        future = handle.get_result_async()
        assert self.spin_until(future.done, timeout_s)
        return future.result()

    def now_ns(self) -> int:
        return time.time_ns()  # the node's default stamp clock: the ROS (system) clock

    def close(self) -> None:
        # Release execute callbacks still waiting (after a failed test) and let them return
        # before the executor goes away.
        self.node.close_goals()
        self.spin_for(0.1)
        self.executor.remove_node(self.node)
        self.executor.remove_node(self.probe)
        self.spin_for(0.1)
        self.executor.shutdown(timeout_sec=5.0)
        self.node.destroy_node()
        self.probe.destroy_node()


@pytest.fixture
def harness(context):
    created = []

    def make(**parameters) -> Harness:
        created.append(Harness(context, **parameters))
        return created[-1]

    yield make
    for item in created:
        item.close()


def test_move_goal_reaches_the_target_at_the_requested_time(harness):
    h = harness()
    targets = {'right_elbow': 1.2, 'head_yaw': 0.4}
    handle = h.send(
        'move',
        joint_names=list(targets),
        positions_rad=list(targets.values()),
        duration_s=0.6,
        profile='quintic',
    )
    response = h.result(handle)
    assert response.status == GoalStatus.STATUS_SUCCEEDED
    assert response.result.success and response.result.reason == ''
    assert h.feedback and all(0.0 <= f.feedback.progress <= 1.0 for f in h.feedback)
    assert h.spin_until(lambda: len(h.chunks) >= 2)
    assert not any(msg.replace for msg in h.chunks)
    played = Played(h.chunks)
    assert abs(played.origin_ns - h.now_ns()) < 5e9  # stamped on CLOCK_MONOTONIC
    assert played.end_s - played.start_s == pytest.approx(0.6, abs=1e-6)
    start_positions, start_velocities = played.sample(played.start_s)
    np.testing.assert_allclose(start_positions, MODEL.poses['init'], atol=1e-9)
    np.testing.assert_allclose(start_velocities, 0.0, atol=1e-9)
    end_positions, end_velocities = played.sample(played.start_s + 0.6)
    expected = MODEL.positions(targets, MODEL.poses['init'])
    np.testing.assert_allclose(end_positions, expected, atol=1e-6)
    np.testing.assert_allclose(end_velocities, 0.0, atol=1e-6)
    state = h.states[-1]
    np.testing.assert_allclose(state.position, expected, atol=1e-12)
    assert played.relative(_ns(state.header.stamp)) == pytest.approx(played.end_s, abs=1e-6)


def test_a_motion_from_rest_starts_start_lead_after_it_is_planned(harness):
    # The chunk horizon (publish_lead_s) is long; a goal from rest must not wait for it.
    h = harness(start_lead_s=0.05, publish_lead_s=2.0)
    sent_ns = h.now_ns()
    h.send('look', pan_rad=0.2, tilt_rad=0.1, duration_s=0.3)
    assert h.spin_until(lambda: h.chunks)
    received_ns = h.now_ns()
    start_ns = _ns(h.chunks[0].trajectory.header.stamp)
    assert start_ns - sent_ns >= 0.05e9  # planned after the goal was sent
    assert start_ns - received_ns <= 0.05e9  # published at once, start_lead_s ahead of its start


def test_cancel_halts_without_a_jump_and_with_bounded_deceleration(harness):
    h = harness()
    handle = h.send(
        'move', joint_names=['right_elbow', 'head_yaw'], positions_rad=[0.2, 1.2], duration_s=1.0
    )
    assert h.spin_until(lambda: h.chunks)
    first = Played(h.chunks)
    assert h.spin_until(lambda: first.relative(h.now_ns()) > first.start_s + 0.4)
    cancel = handle.cancel_goal_async()
    assert h.spin_until(cancel.done)
    response = h.result(handle)
    assert response.status == GoalStatus.STATUS_CANCELED
    assert not response.result.success and 'cancel' in response.result.reason
    h.spin_for(0.2)
    replaced = [i for i, msg in enumerate(h.chunks) if msg.replace]
    assert len(replaced) == 1
    played = Played(h.chunks)
    halt_s = played.relative(_ns(h.chunks[replaced[0]].trajectory.header.stamp))
    assert first.start_s < halt_s < first.start_s + 1.0
    origin = played.origin_ns
    assert all(Played([msg], origin).start_s >= halt_s for msg in h.chunks[replaced[0] :])
    before = Played(h.chunks[: replaced[0]], origin).sample(halt_s)
    after = played.sample(halt_s)
    np.testing.assert_allclose(after[0], before[0], atol=1e-5)  # no position jump
    np.testing.assert_allclose(after[1], before[1], atol=1e-3)  # no velocity jump
    assert np.abs(before[1]).max() > 0.5  # it really was moving
    times = np.linspace(halt_s, played.end_s, 200)
    velocities = np.array([played.sample(t)[1] for t in times])
    deceleration = np.abs(np.diff(velocities, axis=0)) / np.diff(times)[:, np.newaxis]
    assert deceleration.max() <= HALT_DECELERATION * 1.01
    np.testing.assert_allclose(played.sample(played.end_s)[1], 0.0, atol=1e-9)
    stopped = played.sample(played.end_s)[0]
    assert abs(stopped[NAMES.index('head_yaw')]) < 1.2  # stopped short of the target
    np.testing.assert_allclose(h.states[-1].position, stopped, atol=1e-6)


@pytest.mark.parametrize(
    ('fields', 'words'),
    [
        ({'joint_names': ['elbow'], 'positions_rad': [1.0]}, ["'elbow'", 'right_elbow']),
        ({'joint_names': ['right_elbow'], 'positions_rad': [2.6]}, ['right_elbow', 'outside']),
        (
            {'joint_names': ['head_yaw'], 'positions_rad': [1.0], 'duration_s': 0.05},
            ['head_yaw', 'rad/s', 'shortest allowed duration'],
        ),
        ({'joint_names': ['left_wrist'], 'positions_rad': [math.nan]}, ['left_wrist', 'nan']),
        (
            {'joint_names': ['left_wrist'], 'positions_rad': [0.1], 'duration_s': -1.0},
            ['duration_s', '-1.0'],
        ),
        (
            {'joint_names': ['left_wrist'], 'positions_rad': [0.1], 'profile': 'linear'},
            ['linear', 'cosine'],
        ),
    ],
)
def test_bad_move_goals_are_aborted_with_the_reason_and_publish_nothing(harness, fields, words):
    h = harness()
    response = h.result(h.send('move', **fields))
    assert response.status == GoalStatus.STATUS_ABORTED
    assert not response.result.success
    assert all(word in response.result.reason for word in words), response.result.reason
    h.spin_for(0.3)
    assert h.chunks == []
    assert len(h.states) == 1  # only the initial latched state


def test_look_pose_and_gesture_goals_queue_back_to_back(harness):
    h = harness()
    goals = []
    for name, fields in (
        ('look', {'pan_rad': 0.3, 'tilt_rad': -0.2, 'duration_s': 0.3}),
        ('pose', {'pose': 'ready', 'duration_s': 0.5}),
        ('gesture', {'gesture': 'nod'}),
    ):
        count = len(h.states)
        goals.append(h.send(name, **fields))
        assert h.spin_until(lambda count=count: len(h.states) > count)  # planned in this order
    results = [h.result(goal, timeout_s=15.0) for goal in goals]
    assert [r.status for r in results] == [GoalStatus.STATUS_SUCCEEDED] * 3
    h.spin_for(0.1)
    played = Played(h.chunks)
    assert played.end_s - played.start_s == pytest.approx(0.3 + 0.5 + 3.0, abs=1e-6)
    look_end = played.sample(played.start_s + 0.3)[0]
    assert look_end[NAMES.index('head_yaw')] == pytest.approx(0.3, abs=1e-6)
    assert look_end[NAMES.index('head_pitch')] == pytest.approx(-0.2, abs=1e-6)
    pose_end = played.sample(played.start_s + 0.8)[0]
    np.testing.assert_allclose(pose_end, MODEL.poses['ready'], atol=1e-6)
    nod_peak = played.sample(played.start_s + 1.8)[0][NAMES.index('head_pitch')]
    assert math.degrees(nod_peak) == pytest.approx(20.0, abs=1e-4)
    assert played.sample(played.end_s)[0][NAMES.index('head_pitch')] == pytest.approx(0.0)
    unknown = h.result(h.send('gesture', gesture='dance'))
    assert unknown.status == GoalStatus.STATUS_ABORTED and 'dance' in unknown.result.reason
    unknown_pose = h.result(h.send('pose', pose='sit'))
    assert 'sit' in unknown_pose.result.reason and 'ready' in unknown_pose.result.reason


def _score_messages(
    state: JointState, timebase: TimeBase, start_s: float, target: float
) -> list[TrajectoryChunk]:
    """Chunks a score player would send, continuing the commanded state from start_s."""
    planner = MotionPlanner(MODEL, initial_positions_rad=np.array(state.position))
    planned = planner.submit(MoveRequest({'right_elbow': target}, 0.4), start_s)
    assert isinstance(planned, PlannedMotion)
    chunks = chunk_trajectory(planned.trajectory, ChunkingConfig(0.25, 0.02))
    return [sign_message(KEY, chunk_to_msg(chunk, timebase)) for chunk in chunks]


def test_measured_motors_set_the_start_and_score_chunks_are_forwarded(harness):
    h = harness()
    measured = MODEL.poses['home'].copy()
    motors = [
        MotorState(joint=name, connected=True, position_rad=float(value))
        for name, value in zip(NAMES, measured, strict=True)
    ]
    # A motor without feedback does not move the start.
    motors.append(MotorState(joint=NAMES[0], connected=False, position_rad=2.5))
    h.motor_states.publish(MotorStates(motors=motors))
    assert h.spin_until(lambda: np.allclose(h.states[-1].position, measured))
    timebase = TimeBase(h.now_ns())
    messages = _score_messages(h.states[-1], timebase, 0.3, 1.3)
    for msg in messages:
        h.score.publish(msg)
    assert h.spin_until(lambda: len(h.chunks) == len(messages))
    for sent, forwarded in zip(messages, h.chunks, strict=True):
        assert signed_by(KEY, forwarded)  # forwarded as the score player signed it
        assert forwarded.trajectory.header.stamp == sent.trajectory.header.stamp
        assert forwarded.sequence == sent.sequence
        assert [list(p.positions) for p in forwarded.trajectory.points] == [
            list(p.positions) for p in sent.trajectory.points
        ]
    expected = MODEL.positions({'right_elbow': 1.3}, measured)
    assert h.spin_until(lambda: np.allclose(h.states[-1].position, expected))
    sent = Played(messages)
    assert sent.relative(_ns(h.states[-1].header.stamp)) == pytest.approx(sent.end_s, abs=1e-6)
    # A chunk that does not continue the commanded state is not forwarded.
    end_s = timebase.to_seconds(sent.entries[-1][1])
    jump = _score_messages(h.states[-1], timebase, end_s + 0.1, 1.0)[0]
    jump.trajectory.points[0].positions[NAMES.index('head_yaw')] += 0.05
    count, states = len(h.chunks), len(h.states)
    h.score.publish(sign_message(KEY, jump))
    assert h.spin_until(lambda: h.rejected)
    assert len(h.chunks) == count and len(h.states) == states
    assert h.rejected[-1].data.startswith(f'chunk {jump.sequence}: discontinuous: head_yaw')


def test_goals_and_score_chunks_from_outside_the_graph_are_refused(harness):
    """A goal whose id is not signed with the graph key (any client but the behavior
    planner) is aborted with the reason; an unsigned or foreign-signed chunk on ~/chunks is
    dropped: nothing is published, and nothing is reported on ~/rejected_chunks (which would
    end the score player's play)."""
    h = harness(initial_positions_rad=MODEL.poses['ready'].tolist())
    future = h.clients['move'].send_goal_async(
        Move.Goal(joint_names=['head_yaw'], positions_rad=[0.3], duration_s=0.5)
    )
    assert h.spin_until(future.done)
    response = h.result(future.result())
    assert response.status == GoalStatus.STATUS_ABORTED
    assert 'only from the behavior planner' in response.result.reason
    timebase = TimeBase(h.now_ns())
    unsigned = _score_messages(h.states[-1], timebase, 0.3, 1.3)[0]
    unsigned.authority = ''
    foreign = sign_message(
        GraphKey('another graph altogether'), _score_messages(h.states[-1], timebase, 0.3, 1.3)[0]
    )
    h.score.publish(unsigned)
    h.score.publish(foreign)
    h.spin_for(0.5)
    assert h.chunks == [] and h.rejected == []
    assert list(h.states[-1].position) == pytest.approx(MODEL.poses['ready'])


def test_the_hardware_latch_ends_goals_drops_queued_motion_and_the_measured_pose_follows(harness):
    h = harness()
    latch = h.probe.create_publisher(HardwareStatus, '/hardware/status', LATCHED)
    h.motor_states.publish(
        MotorStates(
            motors=[
                MotorState(joint=name, connected=True, position_rad=float(value))
                for name, value in zip(NAMES, MODEL.poses['home'], strict=True)
            ]
        )
    )
    assert h.spin_until(lambda: np.allclose(h.states[-1].position, MODEL.poses['home']))
    handle = h.send('move', joint_names=['right_elbow'], positions_rad=[1.2], duration_s=4.0)
    assert h.spin_until(lambda: h.chunks)
    latch.publish(
        HardwareStatus(
            lifecycle_state='active',
            estop=True,
            faults=[Fault(code=Fault.CODE_ESTOP, reason='emergency stop (ESTOP word)')],
        )
    )
    response = h.result(handle)
    assert response.status == GoalStatus.STATUS_ABORTED
    assert 'the hardware latched: emergency stop' in response.result.reason
    published = len(h.chunks)
    h.spin_for(1.0)
    assert len(h.chunks) == published  # the rest of the move was dropped
    # A score chunk still in flight when the latch came is refused: it neither goes to the
    # hardware nor moves the commanded state (the next motion would start where it ends).
    held = list(h.states[-1].position)
    late = _score_messages(h.states[-1], TimeBase(h.now_ns()), 0.3, 1.3)[0]
    h.score.publish(late)
    assert h.spin_until(lambda: h.rejected)
    assert h.rejected[-1].data.startswith(
        f'chunk {late.sequence}: the hardware is latched: emergency stop'
    )
    assert len(h.chunks) == published and list(h.states[-1].position) == held
    # Where the arm stopped (measured) is the commanded state now, not the move's end.
    stopped = MODEL.positions({'right_elbow': 0.7}, MODEL.poses['home'])
    h.motor_states.publish(
        MotorStates(
            motors=[
                MotorState(joint=name, connected=True, position_rad=float(value))
                for name, value in zip(NAMES, stopped, strict=True)
            ]
        )
    )
    assert h.spin_until(lambda: np.allclose(h.states[-1].position, stopped))
    refused = h.result(h.send('look', pan_rad=0.1, tilt_rad=0.1))
    assert 'the hardware is latched' in refused.result.reason
    # The planner's halt on the latch finds nothing to stop (no motion planned, none sent):
    # the commanded state keeps following the measured pose.
    future = h.halt.call_async(Trigger.Request())
    assert h.spin_until(future.done) and future.result().accepted
    assert len(h.chunks) == published
    latch.publish(HardwareStatus(lifecycle_state='active'))  # RESET cleared it
    h.spin_for(0.2)
    moved = h.result(h.send('look', pan_rad=0.1, tilt_rad=0.1, duration_s=0.3))
    assert moved.status == GoalStatus.STATUS_SUCCEEDED, moved.result.reason
    played = Played(h.chunks[published:])
    assert played.sample(played.start_s)[0] == pytest.approx(stopped)  # starts there


def test_halt_service_aborts_the_goal_and_sends_one_replace_chunk(harness):
    h = harness(initial_positions_rad=MODEL.poses['ready'].tolist())
    handle = h.send('gesture', gesture='shake')
    assert h.spin_until(lambda: h.chunks)
    future = h.halt.call_async(Trigger.Request())
    assert h.spin_until(future.done) and future.result().accepted
    response = h.result(handle)
    assert response.status == GoalStatus.STATUS_ABORTED
    assert 'halted by ~/halt' in response.result.reason
    h.spin_for(0.2)
    assert sum(msg.replace for msg in h.chunks) == 1
    played = Played(h.chunks)
    assert played.sample(played.start_s)[0] == pytest.approx(MODEL.poses['ready'])
    np.testing.assert_allclose(played.sample(played.end_s)[1], 0.0, atol=1e-9)


def test_stamps_follow_the_ros_clock(harness):
    h = harness()
    stamp = _ns(h.states[-1].header.stamp)
    assert abs(stamp - h.probe.get_clock().now().nanoseconds) < 5e9


def test_bad_parameters_stop_start_up(context):
    for name, value in (
        ('publish_lead_s', -0.1),
        ('start_lead_s', 0.2),  # more than publish_lead_s
        ('point_spacing_s', 0.0),
        ('max_active_goals', 100),
        ('initial_positions_rad', [0.0, 1.0]),
        ('stamp_clock', 'wall'),
    ):
        with pytest.raises(ValueError, match=name):
            TrajectoryGenerator(
                context=context, parameter_overrides=[Parameter(name, value=value)]
            )
