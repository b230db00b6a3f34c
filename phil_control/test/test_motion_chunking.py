"""Chunks: absolute start stamps, exact ends, seamless splices, cubic Hermite accuracy."""

from __future__ import annotations

import math

import numpy as np
import pytest

from phil_control.core.motion import (
    Chunk,
    ChunkingConfig,
    GestureRequest,
    JointTable,
    MotionDefaults,
    MoveRequest,
    PoseRequest,
    Trajectory,
    build_trajectory,
    chunk_to_trajectory,
    chunk_trajectory,
    waypoints,
)
from phil_control.core.motion.chunking import chunk_bounds, chunk_point_times
from phil_control.core.profiles import Profile, profile_segment
from phil_description.core import default_robot_model

MODEL = default_robot_model()
TABLE = JointTable.from_model(MODEL)
CONFIG = ChunkingConfig()


def hermite_sample(chunk: Chunk, time_s: float) -> tuple[np.ndarray, np.ndarray]:
    """What a bus loop does: cubic Hermite between the two points around ``time_s``."""
    times = chunk.start_s + chunk.times_from_start_s
    k = int(np.clip(np.searchsorted(times, time_s, side='right') - 1, 0, len(times) - 2))
    h = times[k + 1] - times[k]
    s = (time_s - times[k]) / h
    p0, p1 = chunk.positions_rad[k], chunk.positions_rad[k + 1]
    m0, m1 = chunk.velocities_rad_s[k] * h, chunk.velocities_rad_s[k + 1] * h
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


def _plan(request, base=None, start_s=100.0) -> Trajectory:
    steps = waypoints(request, TABLE, MODEL.poses, MotionDefaults())
    base = MODEL.poses['ready'] if base is None else base
    return build_trajectory(MODEL.joint_names, base, start_s, steps)


def test_a_three_second_move_is_six_half_second_chunks():
    trajectory = _plan(MoveRequest({'right_elbow': 1.5, 'head_yaw': 0.5}))
    chunks = chunk_trajectory(trajectory, CONFIG)
    assert len(chunks) == 6
    assert [c.start_s for c in chunks] == pytest.approx([100.0 + 0.5 * i for i in range(6)])
    assert [c.sequence for c in chunks] == list(range(6))
    assert not any(c.replace for c in chunks)
    for chunk in chunks:
        assert chunk.joint_names == MODEL.joint_names
        assert chunk.times_from_start_s[0] == 0.0
        assert chunk.times_from_start_s[-1] == pytest.approx(0.5)
        assert np.diff(chunk.times_from_start_s).max() <= CONFIG.point_spacing_s + 1e-12
        assert chunk.positions_rad.shape == chunk.velocities_rad_s.shape == (26, 13)
    np.testing.assert_array_equal(chunks[0].positions_rad[0], MODEL.poses['ready'])
    np.testing.assert_array_equal(chunks[0].velocities_rad_s[0], 0.0)
    np.testing.assert_array_equal(chunks[-1].positions_rad[-1], trajectory.end_state()[0])
    np.testing.assert_array_equal(chunks[-1].velocities_rad_s[-1], 0.0)
    assert chunks[-1].end_s == pytest.approx(103.0, abs=1e-12)


def test_consecutive_chunks_splice_exactly():
    trajectory = _plan(GestureRequest('wave'))
    chunks = chunk_trajectory(trajectory, CONFIG, replace_first=True, first_sequence=7)
    assert chunks[0].replace and not any(c.replace for c in chunks[1:])
    assert chunks[0].sequence == 7
    for before, after in zip(chunks[:-1], chunks[1:], strict=True):
        assert after.start_s == pytest.approx(before.end_s, abs=1e-12)
        np.testing.assert_allclose(after.positions_rad[0], before.positions_rad[-1], atol=1e-12)
        np.testing.assert_allclose(
            after.velocities_rad_s[0], before.velocities_rad_s[-1], atol=1e-9
        )


@pytest.mark.parametrize(
    'request_',
    [
        MoveRequest({'right_elbow': 2.4, 'waist': -1.5, 'head_yaw': 1.5}, 1.0),
        GestureRequest('wave'),
        PoseRequest('home'),
        MoveRequest({'left_wrist': -1.5}, 0.5, Profile.TRAPEZOIDAL),
    ],
)
def test_hermite_interpolation_of_the_chunks_follows_the_trajectory(request_):
    """The bus loop's interpolation between 20 ms knots stays within 1e-6 rad of the plan."""
    trajectory = _plan(request_, base=MODEL.poses['init'])
    chunks = chunk_trajectory(trajectory, CONFIG)
    worst = 0.0
    for chunk in chunks:
        times = np.linspace(chunk.start_s, chunk.end_s, 97)
        expected = trajectory.sample(times)[0]
        sampled = np.array([hermite_sample(chunk, t)[0] for t in times])
        worst = max(worst, float(np.abs(sampled - expected).max()))
    assert worst < 1e-6


def test_trapezoid_phase_switches_and_joins_are_knots():
    trajectory = Trajectory.from_segments(
        ('a',),
        0.0,
        [
            profile_segment([0.0], [1.0], 1.0, Profile.TRAPEZOIDAL),
            profile_segment([1.0], [0.0], 0.33, Profile.COSINE),
        ],
    )
    times = np.concatenate(
        [c.start_s + c.times_from_start_s for c in chunk_trajectory(trajectory, CONFIG)]
    )
    for knot in (0.25, 0.75, 1.0):
        assert np.min(np.abs(times - knot)) < 1e-12


def test_chunk_bounds_merge_a_tiny_remainder():
    assert chunk_bounds(0.0, 1.0, CONFIG) == [(0.0, 0.5), (0.5, 1.0)]
    assert chunk_bounds(0.0, 1.01, CONFIG) == [(0.0, 0.5), (0.5, 1.01)]
    assert chunk_bounds(0.0, 1.1, CONFIG)[-1] == (1.0, 1.1)
    assert chunk_bounds(0.0, 0.05, CONFIG) == [(0.0, 0.05)]
    grid = chunk_point_times(0.0, 0.1, np.array([0.041, 0.07]), 0.02)
    assert grid.tolist() == pytest.approx([0.0, 0.02, 0.041, 0.06, 0.07, 0.08, 0.1])


@pytest.mark.parametrize('start_s', [0.0, 12345.678901234, 1.0e6 + 0.1])
def test_a_knot_a_rounding_error_from_a_chunk_end_adds_no_point_on_the_wire(start_s):
    """Times travel as whole nanoseconds: a knot 0.1 ns before the end must not become a
    second point at the end's time (the bus loop refuses the chunk)."""
    end_s = start_s + 0.5
    knots = np.array([start_s + 1e-10, start_s + 0.25, end_s - 1e-10])
    times = chunk_point_times(start_s, end_s, knots, 0.02)
    wire_ns = np.round((times - start_s) * 1e9).astype(np.int64)
    assert (np.diff(wire_ns) > 0).all(), times - start_s
    assert times[0] == start_s and times[-1] == end_s
    assert np.min(np.abs(times - (start_s + 0.25))) < 1e-9  # an inner knot stays a point


def test_invalid_config_raises():
    with pytest.raises(ValueError, match='point_spacing_s'):
        ChunkingConfig(0.5, 0.0)
    with pytest.raises(ValueError, match='exceeds'):
        ChunkingConfig(0.01, 0.02)
    with pytest.raises(ValueError, match='chunk_duration_s'):
        ChunkingConfig(math.nan, 0.02)


def test_a_chunk_reads_back_as_the_trajectory_the_bus_loop_plays():
    trajectory = _plan(MoveRequest({'right_elbow': 2.0, 'head_yaw': 0.5}, 1.0))
    chunk = chunk_trajectory(trajectory, CONFIG)[1]
    arm = [MODEL.joint_names.index(n) for n in ('right_elbow', 'head_yaw')]
    partial = Chunk(
        ('right_elbow', 'head_yaw'),
        chunk.start_s,
        chunk.times_from_start_s,
        chunk.positions_rad[:, arm],
        chunk.velocities_rad_s[:, arm],
    )
    held = MODEL.poses['init']
    readback = chunk_to_trajectory(partial, MODEL.joint_names, held)
    assert (readback.start_s, readback.end_s) == pytest.approx((chunk.start_s, chunk.end_s))
    for time in np.linspace(chunk.start_s, chunk.end_s, 41):
        positions = readback.sample(time)[0][0]
        np.testing.assert_allclose(positions[arm], hermite_sample(partial, time)[0], atol=1e-12)
        others = [i for i in range(13) if i not in arm]
        np.testing.assert_array_equal(positions[others], held[others])
