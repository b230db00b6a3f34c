"""In-process rclpy test of the trajectory_generator node's inputs besides its goals (own
context, SingleThreadedExecutor: no callback of the node may block): measured motor states,
score chunks (forwarded when signed with the graph key and continuous, refused otherwise), goals
and chunks from outside the graph, the hardware's latch.

The harness and the model of the played motion are in test_trajectory_generator_support."""

from __future__ import annotations

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')

from action_msgs.msg import GoalStatus  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from test_trajectory_generator_support import (  # noqa: E402
    KEY,
    MODEL,
    NAMES,
    Played,
    _ns,
    harnesses,
)

from phil_control.conversions import TimeBase, chunk_to_msg  # noqa: E402
from phil_control.core.motion import (  # noqa: E402
    ChunkingConfig,
    MotionPlanner,
    MoveRequest,
    PlannedMotion,
    chunk_trajectory,
)
from phil_description.core.graph_key import GraphKey  # noqa: E402
from phil_msgs.action import Move  # noqa: E402
from phil_msgs.msg import (  # noqa: E402
    Fault,
    HardwareStatus,
    MotorState,
    MotorStates,
    TrajectoryChunk,
)
from phil_msgs.srv import Trigger  # noqa: E402
from phil_ros.graph_safety import sign_message, signed_by, signed_goal_id  # noqa: E402
from phil_ros.qos import LATCHED  # noqa: E402
from phil_ros.testing import ros_test_context  # noqa: E402


@pytest.fixture(scope='module')
def context():
    with ros_test_context() as ctx:
        yield ctx


@pytest.fixture
def harness(context):
    with harnesses(context) as make:
        yield make


def _score_messages(
    state: JointState,
    timebase: TimeBase,
    start_s: float,
    target: float,
    duration_s: float = 0.4,
    chunk_s: float = 0.25,
) -> list[TrajectoryChunk]:
    """Chunks a score player would send, continuing the commanded state from start_s."""
    planner = MotionPlanner(MODEL, initial_positions_rad=np.array(state.position))
    planned = planner.submit(MoveRequest({'right_elbow': target}, duration_s), start_s)
    assert isinstance(planned, PlannedMotion)
    chunks = chunk_trajectory(planned.trajectory, ChunkingConfig(chunk_s, 0.02))
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
    refusal = h.rejected[-1]
    assert (refusal.sequence, refusal.code) == (jump.sequence, 'DISCONTINUOUS')
    assert refusal.start == jump.trajectory.header.stamp
    assert refusal.reason.startswith('discontinuous: head_yaw')


def test_a_late_score_chunk_is_refused_and_so_is_every_chunk_that_continues_it(harness):
    """A motion from rest whose first chunk came too late: its second chunk, at rest too,
    would pass the continuity check, but it continues a refused chunk, so it is refused (the
    score player sends the whole start again); a chunk starting elsewhere is taken."""
    h = harness()
    assert h.spin_until(lambda: h.states)
    held = h.states[-1]
    elbow = held.position[NAMES.index('right_elbow')]
    timebase = TimeBase(h.now_ns())
    late = _score_messages(held, timebase, -0.2, elbow, duration_s=6.0, chunk_s=2.0)
    for msg in late:
        h.score.publish(msg)
    assert h.spin_until(lambda: len(h.rejected) == len(late))
    assert [(r.sequence, r.code) for r in h.rejected] == [
        (late[0].sequence, 'LATE'),
        *((msg.sequence, 'DISCONTINUOUS') for msg in late[1:]),
    ]
    assert 'continues a refused chunk' in h.rejected[1].reason
    assert h.chunks == []
    again = _score_messages(held, TimeBase(h.now_ns()), 0.3, elbow + 0.1)
    for msg in again:
        h.score.publish(msg)
    assert h.spin_until(lambda: len(h.chunks) == len(again))


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


def test_a_latch_that_came_and_went_unseen_ends_goals_and_drops_queued_motion(harness):
    """ESTOP and at once RESET: the only status that reaches us counts the RESET; the hardware
    dropped its queue at the latch, so nothing queued here may follow after the RESET (nor
    what went out after it, e.g. behind a stalled tick: it continues what was dropped)."""
    h = harness()
    statuses = h.probe.create_publisher(HardwareStatus, '/hardware/status', LATCHED)
    statuses.publish(HardwareStatus(lifecycle_state='active'))
    reset = HardwareStatus(lifecycle_state='active', resets_granted=1)
    _move_ended_by(h, statuses, reset, 'a latch that a RESET cleared', stamp_now=True)


def test_a_goal_made_before_a_latch_is_dropped_however_late_it_comes(harness):
    """The planner made the goal, then the hardware latched and a RESET came before the goal
    reached us: it is refused with the reason and nothing moves; one made since moves."""
    h = harness()
    statuses = h.probe.create_publisher(HardwareStatus, '/hardware/status', LATCHED)
    made_before = signed_goal_id(KEY)
    reset = HardwareStatus(lifecycle_state='active', resets_granted=1)
    reset.last_reset = TimeBase(h.now_ns()).stamp(0.0)
    statuses.publish(reset)
    h.spin_for(0.2)
    response = h.result(h.send('look', goal_uuid=made_before, pan_rad=0.1, tilt_rad=0.1))
    assert response.status == GoalStatus.STATUS_ABORTED
    assert response.result.reason.startswith('dropped: decided before the hardware latched')
    h.spin_for(0.3)
    assert h.chunks == []
    moved = h.result(h.send('look', pan_rad=0.1, tilt_rad=0.1, duration_s=0.3))
    assert moved.status == GoalStatus.STATUS_SUCCEEDED, moved.result.reason


def test_motion_sent_after_the_reset_plays_on_when_its_status_comes_late(harness):
    """The status that counts a RESET can reach us after the next motion went out (the
    planner heard it first): the latch did not drop that motion, so it plays to its end; nor
    one that had ended before the status before it."""
    h = harness()
    statuses = h.probe.create_publisher(HardwareStatus, '/hardware/status', LATCHED)
    ended = h.result(h.send('move', joint_names=['right_elbow'], positions_rad=[0.9]))
    assert ended.status == GoalStatus.STATUS_SUCCEEDED, ended.result.reason
    h.spin_for(0.1)
    clear = HardwareStatus(lifecycle_state='active')
    clear.header.stamp = TimeBase(h.now_ns()).stamp(0.0)
    statuses.publish(clear)
    h.spin_for(0.1)
    reset = HardwareStatus(lifecycle_state='active', resets_granted=1)
    reset.last_reset = TimeBase(h.now_ns()).stamp(0.0)
    handle = h.send('move', joint_names=['right_elbow'], positions_rad=[1.2], duration_s=1.0)
    assert h.spin_until(lambda: h.chunks)
    reset.header.stamp = TimeBase(h.now_ns()).stamp(0.0)
    statuses.publish(reset)
    response = h.result(handle)
    assert response.status == GoalStatus.STATUS_SUCCEEDED, response.result.reason


def _move_ended_by(
    h, statuses, status: HardwareStatus, reason: str, stamp_now: bool = False
) -> None:
    """A MOVE under way, then ``status`` published (``stamp_now``: its RESET granted as it goes
    out): the goal ends with ``reason`` and the rest of the move is dropped."""
    handle = h.send('move', joint_names=['right_elbow'], positions_rad=[1.2], duration_s=4.0)
    assert h.spin_until(lambda: h.chunks)
    if stamp_now:
        status.last_reset = status.header.stamp = TimeBase(h.now_ns()).stamp(0.0)
    statuses.publish(status)
    response = h.result(handle)
    assert response.status == GoalStatus.STATUS_ABORTED
    assert reason in response.result.reason
    published = len(h.chunks)
    h.spin_for(1.0)
    assert len(h.chunks) == published  # the rest of the move was dropped


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
    estop = HardwareStatus(
        lifecycle_state='active',
        estop=True,
        faults=[Fault(code=Fault.CODE_ESTOP, reason='emergency stop (ESTOP word)')],
    )
    _move_ended_by(h, latch, estop, 'the hardware latched: emergency stop')
    published = len(h.chunks)
    # A score chunk still in flight when the latch came is refused: it neither goes to the
    # hardware nor moves the commanded state (the next motion would start where it ends).
    held = list(h.states[-1].position)
    late = _score_messages(h.states[-1], TimeBase(h.now_ns()), 0.3, 1.3)[0]
    h.score.publish(late)
    assert h.spin_until(lambda: h.rejected)
    assert (h.rejected[-1].sequence, h.rejected[-1].code) == (late.sequence, 'HARDWARE_LATCHED')
    assert h.rejected[-1].reason.startswith('the hardware is latched: emergency stop')
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
