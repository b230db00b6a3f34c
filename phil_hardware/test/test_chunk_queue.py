"""Chunk queue: sampling at send time, splicing, replace, hold, partial joints, validation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from phil_description.core.trajectory import Chunk, ChunkError, ControlMode
from phil_hardware.core.chunk_queue import ChunkQueue

JOINTS = ('a', 'b', 'c')
START = [0.0, 1.0, 2.0]


def make_queue(**kwargs) -> ChunkQueue:
    return ChunkQueue(JOINTS, START, torque_joints=('c',), **kwargs)


def chunk(start, times, positions, joints=JOINTS, **kwargs) -> Chunk:
    return Chunk(joints, start, times, positions, **kwargs)


def test_empty_queue_holds_initial_target_with_zero_velocity():
    queue = make_queue()
    for t in (0.0, 5.0, 100.0):
        positions, velocities, modes = queue.sample(t)
        assert positions.tolist() == START
        assert velocities.tolist() == [0.0, 0.0, 0.0]
        assert modes.tolist() == [0, 0, 0]


def test_holds_before_start_then_interpolates_linearly_at_the_actual_send_time():
    queue = make_queue()
    assert queue.push(chunk(10.0, [0.0, 1.0], [[0, 1, 2], [1, 3, 2]])) is None
    assert queue.sample(9.9990)[0].tolist() == START
    positions, velocities, _ = queue.sample(10.25)
    assert positions == pytest.approx([0.25, 1.5, 2.0])
    assert velocities == pytest.approx([1.0, 2.0, 0.0])
    # Not on a grid: 10.2503 s is sampled exactly there.
    assert queue.sample(10.2503)[0][0] == pytest.approx(0.2503)


def test_after_the_last_point_the_last_target_is_held_and_never_jumps():
    queue = make_queue()
    queue.push(chunk(0.0, [0.0, 1.0], [[0, 1, 2], [1, 3, 2]]))
    queue.sample(0.5)
    positions, velocities, _ = queue.sample(1.7)
    assert positions.tolist() == [1.0, 3.0, 2.0]
    assert velocities.tolist() == [0.0, 0.0, 0.0]
    assert queue.queued == 0 and queue.active_sequence == -1
    assert queue.sample(50.0)[0].tolist() == [1.0, 3.0, 2.0]


def test_hermite_interpolation_matches_the_cubic_through_given_velocities():
    queue = make_queue()
    # p(t) = t^3 on [0, 2]: p' = 3t^2; a cubic Hermite segment reproduces it exactly.
    times = [0.0, 2.0]
    positions = [[0.0, 1, 2], [8.0, 1, 2]]
    velocities = [[0.0, 0, 0], [12.0, 0, 0]]
    queue.push(chunk(1.0, times, positions, velocities_rad_s=velocities))
    for t in (0.3, 1.0, 1.7):
        p, v, _ = queue.sample(1.0 + t)
        assert p[0] == pytest.approx(t**3)
        assert v[0] == pytest.approx(3 * t**2)


def hermite_reference(t, t0, t1, p0, v0, p1, v1):
    """The cubic Hermite basis written out, with its derivative (independent of the queue)."""
    h = t1 - t0
    s = (t - t0) / h
    position = (
        (2 * s**3 - 3 * s**2 + 1) * p0
        + (s**3 - 2 * s**2 + s) * h * v0
        + (3 * s**2 - 2 * s**3) * p1
        + (s**3 - s**2) * h * v1
    )
    velocity = (
        (6 * s**2 - 6 * s) * p0
        + (3 * s**2 - 4 * s + 1) * h * v0
        + (6 * s - 6 * s**2) * p1
        + (3 * s**2 - 2 * s) * h * v1
    ) / h
    return position, velocity


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(0.001, 0.5), min_size=1, max_size=6),
    st.lists(st.floats(-3.0, 3.0), min_size=14, max_size=14),
    st.lists(st.floats(0.0, 0.999), min_size=1, max_size=30),
)
# A time so close to the start that start + t rounds to the start itself.
@example(
    steps=[0.001, 0.5, 0.5], values=[0.0, 1.0] + [0.0] * 12, fractions=[2.220446049250313e-16]
)
def test_sampling_matches_the_hermite_basis_at_any_time_in_any_order(steps, values, fractions):
    # Any order of sample times: a takeover evaluates the outgoing chunk at an earlier time
    # than its last sample, so no segment may be assumed to come after the previous one.
    times = np.concatenate(([0.0], np.cumsum(steps)))
    points = len(times)
    positions = np.array(values[:points])
    velocities = np.array(values[7 : 7 + points])
    start = 5.0
    queue = ChunkQueue(('a',), [positions[0]])
    queue.push(
        Chunk(('a',), start, times, positions[:, None], velocities_rad_s=velocities[:, None])
    )
    queue.sample(start)  # takes over at the first point: the anchor segment is empty
    for fraction in fractions:
        # Before the end (the chunk stays active), as the queue sees it: start + t rounds.
        sample_s = start + fraction * times[-1]
        t = sample_s - start
        segment = int(np.searchsorted(times, t, side='right')) - 1
        p, v, _ = queue.sample(sample_s)
        expected = hermite_reference(
            t,
            times[segment],
            times[segment + 1],
            positions[segment],
            velocities[segment],
            positions[segment + 1],
            velocities[segment + 1],
        )
        assert (p[0], v[0]) == pytest.approx(expected, rel=1e-9, abs=1e-9)


def test_first_segment_runs_from_the_takeover_target_to_the_first_point():
    queue = make_queue()
    queue.push(chunk(0.0, [1.0], [[2.0, 1.0, 2.0]]))
    assert queue.sample(0.5)[0][0] == pytest.approx(1.0)  # halfway from 0 to 2


def test_splice_next_chunk_takes_over_at_its_start_time_from_the_outgoing_motion():
    queue = make_queue()
    queue.push(chunk(0.0, [0.0, 2.0], [[0, 1, 2], [2, 1, 2]], sequence=1))
    queue.push(chunk(1.0, [1.0], [[10, 1, 2]], sequence=2))
    assert queue.sample(0.5)[0][0] == pytest.approx(0.5)
    assert queue.active_sequence == 1
    # The second chunk starts at 1.0 from the first chunk's value there (1.0) towards 10 at 2.0.
    p = queue.sample(1.5)[0]
    assert queue.active_sequence == 2
    assert p[0] == pytest.approx(1.0 + 0.5 * 9.0)
    assert queue.sample(3.0)[0][0] == pytest.approx(10.0)


def test_late_takeover_anchors_at_the_outgoing_motion_at_the_previous_sample():
    queue = make_queue()
    queue.push(chunk(0.0, [0.0, 10.0], [[0, 1, 2], [10, 1, 2]]))
    queue.sample(4.0)
    # Arrives late: starts at 3.0 but is first sampled at 5.0 -> anchored at t=4.0 (value 4).
    queue.push(chunk(3.0, [3.0], [[4.0, 1, 2]]))
    assert queue.sample(5.0)[0][0] == pytest.approx(4.0)


def test_replace_drops_queued_motion_from_its_start_on_and_plain_push_keeps_it():
    plain = make_queue()
    replacing = make_queue()
    for queue, replace in ((plain, False), (replacing, True)):
        queue.push(chunk(0.0, [1.0], [[1, 1, 2]]))
        queue.push(chunk(2.0, [1.0], [[5, 1, 2]], sequence=7))
        queue.push(chunk(1.0, [0.5], [[-1, 1, 2]], replace=replace, sequence=8))
    assert plain.sample(3.5)[0][0] == pytest.approx(5.0)
    assert replacing.sample(3.5)[0][0] == pytest.approx(-1.0)
    # one dropped by replace, one passed over because a later chunk had already started
    assert replacing.superseded == 2 and replacing.queued == 0


def test_queue_end_is_the_end_of_the_chunk_starting_last():
    queue = make_queue()
    assert queue.queue_end_s == 0.0
    queue.push(chunk(0.0, [0.0, 10.0], [[0, 1, 2], [1, 1, 2]]))
    queue.push(chunk(2.0, [1.0], [[0, 1, 2]]))
    assert queue.queue_end_s == pytest.approx(3.0)
    assert queue.queued == 2


def test_partial_joint_set_keeps_other_joints_targets_and_modes():
    queue = make_queue()
    queue.push(
        chunk(
            0.0,
            [1.0],
            [[3.0, 4.0]],
            joints=('c', 'a'),
            control_modes=(ControlMode.TORQUE, ControlMode.POSITION),
        )
    )
    p, _, modes = queue.sample(0.5)
    assert p == pytest.approx([0.0 + 0.5 * 4.0, 1.0, 2.0 + 0.5 * 1.0])
    assert modes.tolist() == [0, 0, 1]
    queue.push(chunk(1.0, [1.0], [[7.0]], joints=('b',)))
    p, _, modes = queue.sample(1.5)
    assert p[1] == pytest.approx(4.0)
    assert p[0] == pytest.approx(4.0) and p[2] == pytest.approx(3.0)  # held at takeover
    assert modes.tolist() == [0, 0, 1]


def test_halt_drops_everything_and_holds_the_current_sampled_target():
    queue = make_queue()
    queue.push(chunk(0.0, [0.0, 2.0], [[0, 1, 2], [2, 1, 2]]))
    queue.push(chunk(5.0, [1.0], [[9, 9, 9]]))
    queue.sample(1.0)
    assert queue.halt() == 2
    assert queue.sample(10.0)[0].tolist() == pytest.approx([1.0, 1.0, 2.0])


def test_hold_uses_given_positions_and_keeps_target_where_not_finite():
    queue = make_queue()
    queue.hold([5.0, math.nan, 6.0])
    assert queue.sample(1.0)[0].tolist() == [5.0, 1.0, 6.0]


@pytest.mark.parametrize(
    ('kwargs', 'reason'),
    [
        ({'joints': ('a', 'zz'), 'positions': [[0, 0]]}, "unknown joint(s) 'zz'"),
        ({'joints': ('a', 'a'), 'positions': [[0, 0]]}, 'duplicate joint names'),
        ({'positions': [[0, math.nan, 0]]}, "non-finite position for 'b' at point 0"),
        ({'positions': [[0, 0, math.inf]]}, "non-finite position for 'c'"),
        ({'times': [0.5, 0.5], 'positions': [[0, 0, 0], [0, 0, 0]]}, 'strictly increasing'),
        ({'times': [0.5, 0.2], 'positions': [[0, 0, 0], [0, 0, 0]]}, 'strictly increasing'),
        ({'times': [-0.1], 'positions': [[0, 0, 0]]}, 'strictly increasing'),
        ({'times': [math.nan], 'positions': [[0, 0, 0]]}, 'non-finite time_from_start'),
        ({'start': math.inf}, 'start time inf is not finite'),
        ({'positions': [[0, 0]]}, 'positions shape'),
        ({'velocities_rad_s': [[0, math.nan, 0]]}, "non-finite velocity for 'b'"),
        ({'velocities_rad_s': [[0, 0]]}, 'velocities shape'),
        ({'control_modes': (1, 0, 0)}, "torque mode is not available for 'a'"),
        ({'control_modes': (0, 0)}, '2 control modes for 3 joints'),
        ({'control_modes': (0, 0, 5)}, 'unknown control mode 5'),
        ({'times': [], 'positions': np.zeros((0, 3))}, 'needs at least one point'),
    ],
)
def test_invalid_chunks_are_rejected_with_a_reason_and_counted(kwargs, reason):
    queue = make_queue()
    kwargs = dict(kwargs)
    args = {
        'start': kwargs.pop('start', 0.0),
        'times': kwargs.pop('times', [1.0]),
        'positions': kwargs.pop('positions', [[0, 0, 0]]),
        'joints': kwargs.pop('joints', JOINTS),
    }
    result = queue.push(
        chunk(
            args['start'],
            args['times'],
            args['positions'],
            joints=args['joints'],
            sequence=42,
            **kwargs,
        )
    )
    assert result is not None and reason in result and result.startswith('chunk 42:')
    assert queue.rejected == 1 and queue.accepted == 0
    assert queue.last_reject_reason == result
    assert queue.sample(1.0)[0].tolist() == START  # nothing moved


def test_non_chunk_objects_and_ragged_arrays_are_refused():
    queue = make_queue()
    assert 'not a TrajectoryChunk' in queue.push({'start': 0})
    with pytest.raises(ChunkError, match='malformed arrays'):
        chunk(0.0, [0.0, 1.0], [[0, 1, 2], [1, 2]])


def test_chunk_ending_before_the_current_time_is_rejected():
    queue = make_queue()
    queue.sample(10.0)
    assert 'ends before the current time' in queue.push(chunk(1.0, [1.0], [[0, 0, 0]]))


def test_queue_is_bounded():
    queue = make_queue(max_queued=2)
    assert queue.push(chunk(1.0, [1.0], [[0, 0, 0]])) is None
    assert queue.push(chunk(2.0, [1.0], [[0, 0, 0]])) is None
    assert 'queue full' in queue.push(chunk(3.0, [1.0], [[0, 0, 0]]))


def test_chunks_starting_together_the_later_pushed_one_wins():
    queue = make_queue()
    queue.push(chunk(1.0, [0.0], [[5, 1, 2]]))
    queue.push(chunk(1.0, [0.0], [[6, 1, 2]]))
    assert queue.sample(1.0)[0][0] == 6.0
    assert queue.superseded == 1
