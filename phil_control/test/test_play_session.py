"""Play session: DRUM START/END, look-ahead, speed, pause/resume, stop, HIT, abort, improv."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest

from phil_control.core.play import (
    ChunkKind,
    PlayAborted,
    PlayRobot,
    PlaySession,
    ResumePoint,
    ScoreClock,
    SessionBusyError,
    StrikeTarget,
    next_score_in_folder,
)
from phil_control.core.play.timeline import check_velocity_delta
from phil_control.core.play.timing import sample_hermite
from phil_control.core.score import Hand, load_play_list, load_score
from phil_description.core import default_robot_model
from phil_description.core.trajectory import ControlMode

SCORES = Path(__file__).resolve().parents[2] / 'scores'
START_S = 10.0


@pytest.fixture(scope='module')
def model():
    return default_robot_model()


@pytest.fixture(scope='module')
def robot(model):
    return PlayRobot.from_model(model)


@pytest.fixture(scope='module')
def play_list():
    return load_play_list(SCORES / 'play_list.yaml')


class Recorder:
    """Splices chunks like the trajectory generator: each chunk starts with the commanded state
    at its start; replace drops queued points after it."""

    def __init__(self, robot, hold_until_s=START_S + 0.1):
        self.times = np.array([hold_until_s])  # the pose held until the first chunk
        self.positions = robot.ready_rad[np.newaxis].copy()
        self.velocities = np.zeros((1, 13))
        self.chunks = []

    def add(self, chunks):
        for chunk in chunks:
            assert chunk.times_s[0] == chunk.start_time_s
            if chunk.replace:
                keep = self.times < chunk.start_time_s - 1e-9
                expected = self.at(chunk.start_time_s)[0]
                self.times, self.positions = self.times[keep], self.positions[keep]
                self.velocities = self.velocities[keep]
            else:
                assert chunk.start_time_s == pytest.approx(self.times[-1], abs=1e-9)
                expected = self.positions[-1]
                np.testing.assert_allclose(chunk.velocities_rad_s[0], self.velocities[-1])
                self.times, self.positions = self.times[:-1], self.positions[:-1]
                self.velocities = self.velocities[:-1]
            np.testing.assert_allclose(chunk.positions_rad[0], expected, atol=1e-6)
            self.times = np.concatenate([self.times, chunk.times_s])
            self.positions = np.concatenate([self.positions, chunk.positions_rad])
            self.velocities = np.concatenate([self.velocities, chunk.velocities_rad_s])
            self.chunks.append(chunk)
        assert np.all(np.diff(self.times) > 0)

    def at(self, times):
        return sample_hermite(self.times, self.positions, self.velocities, np.atleast_1d(times))


def _run(session, recorder, now, until=math.inf, step=0.05):
    while not session.finished(now) and now < until:
        now += step
        recorder.add(session.poll(now))
        end = max(chunk.end_time_s for chunk in recorder.chunks)
        if session.end_time_s is None:  # at least one bar generated ahead while playing
            assert end >= now + 2.4 * 100 / 124 / session.speed
    return now


def _start(robot, play_list, score='rock', wrist_torque=True, **kwargs):
    session = PlaySession(robot, play_list, wrist_torque=wrist_torque)
    recorder = Recorder(robot)
    recorder.add(
        session.start(score, now_s=START_S, current_positions_rad=robot.ready_rad, **kwargs)
    )
    return session, recorder


def _kind(recorder, kind):
    chunks = [chunk for chunk in recorder.chunks if chunk.kind is kind]
    assert all(chunk.end_time_s - chunk.start_time_s <= 0.5 + 1e-9 for chunk in chunks)
    times = np.concatenate([chunks[0].times_s[:1]] + [c.times_s[1:] for c in chunks])
    positions = np.concatenate(
        [chunks[0].positions_rad[:1]] + [c.positions_rad[1:] for c in chunks]
    )
    return chunks, times, positions


def test_full_play_from_ready_to_ready(robot, play_list):
    session, recorder = _start(robot, play_list)
    start, _, _ = _kind(recorder, ChunkKind.DRUM_START)
    assert start[0].start_time_s == START_S + 0.1
    assert start[-1].end_time_s == pytest.approx(START_S + 4.1)
    assert session.wall_time_at(0.0) == pytest.approx(START_S + 4.1)
    now = _run(session, recorder, START_S)
    end, end_times, end_positions = _kind(recorder, ChunkKind.DRUM_END)
    assert recorder.chunks[-1] is end[-1] and session.finished(now)
    np.testing.assert_allclose(end_positions[-1], robot.ready_rad, atol=1e-12)
    assert end_times[-1] - end_times[0] == pytest.approx(4.0)
    score = load_score(SCORES / 'rock' / 'rock_beat.txt')
    expected = sum(bool(e.right_drum) + bool(e.left_drum) + e.kick for e in score.events)
    hits = session.commanded_hits
    assert len(hits) == expected and session.aborted is None and session.guarded_windows == 0
    for hit in hits:
        assert hit.command_time_s == pytest.approx(START_S + 4.1 + hit.hit.score_time_s)
    assert [h.command_time_s for h in session.due_hits(now)] == [h.command_time_s for h in hits]
    assert session.due_hits(now) == []
    progress = session.progress(START_S + 4.1 + 10.0)
    assert progress.play_id == 'rock' and progress.bar == 3 and progress.total_bars == 14


def test_motion_lead_moves_the_sticks_earlier_and_keeps_the_music(robot, play_list):
    lead = 0.01
    plain = PlaySession(robot, play_list)
    early = PlaySession(robot, play_list, motion_lead_s=lead)
    chunks = {}
    for name, session in (('plain', plain), ('early', early)):
        chunks[name] = session.start('rock', now_s=START_S, current_positions_rad=robot.ready_rad)
        chunks[name] += session.poll(START_S + 6.0)
    assert len(chunks['plain']) == len(chunks['early'])
    windows = 0
    for before, after in zip(chunks['plain'], chunks['early'], strict=True):
        assert after.kind is before.kind
        if before.kind is ChunkKind.WINDOW:
            windows += 1
            np.testing.assert_allclose(after.times_s, before.times_s - lead, atol=1e-9)
            np.testing.assert_allclose(after.positions_rad, before.positions_rad, atol=1e-9)
    assert windows > 3
    # DRUM START still starts now; it ends (at the reset pose) the lead earlier.
    start = {
        name: [c for c in found if c.kind is ChunkKind.DRUM_START]
        for name, found in chunks.items()
    }
    assert start['early'][0].start_time_s == start['plain'][0].start_time_s
    assert start['early'][-1].end_time_s == pytest.approx(start['plain'][-1].end_time_s - lead)
    assert early.commanded_hits and [h.command_time_s for h in early.commanded_hits] == (
        pytest.approx([h.command_time_s for h in plain.commanded_hits], abs=1e-9)
    )
    assert early.wall_time_at(0.0) == pytest.approx(plain.wall_time_at(0.0))
    assert early.score_time_at(START_S + 7.0) == pytest.approx(plain.score_time_at(START_S + 7.0))
    for bad in (-0.001, 0.2, math.nan):
        with pytest.raises(ValueError, match='motion_lead_s'):
            PlaySession(robot, play_list, motion_lead_s=bad)


@pytest.mark.parametrize('speed', [1.0, 1.5])
def test_pedal_lead_moves_only_the_pedals_earlier(robot, play_list, speed):
    lead = 0.004
    columns = [robot.index('right_pedal'), robot.index('left_pedal')]
    arms = [i for i in range(len(robot.joint_names)) if i not in columns]
    played = {}
    for name, pedal_lead_s in (('plain', 0.0), ('early', lead)):
        session = PlaySession(robot, play_list, pedal_lead_s=pedal_lead_s)
        recorder = Recorder(robot)
        recorder.add(
            session.start(
                'rock', now_s=START_S, current_positions_rad=robot.ready_rad, speed=speed
            )
        )
        recorder.add(session.poll(START_S + 12.0))
        played[name] = recorder, session
    (plain, plain_session), (early, early_session) = played['plain'], played['early']
    np.testing.assert_array_equal(early.times, plain.times)
    np.testing.assert_allclose(early.positions[:, arms], plain.positions[:, arms], atol=1e-12)
    assert [h.command_time_s for h in early_session.commanded_hits] == (
        [h.command_time_s for h in plain_session.commanded_hits]
    )
    # Every bass stroke passes half its travel on the way down `lead` earlier (wall time).
    bass = robot.index('right_pedal')
    fine = np.arange(START_S + 4.0, START_S + 11.6, 0.00005)
    downward = {}
    for name, recorder in (('plain', plain), ('early', early)):
        angle = sample_hermite(
            recorder.times, recorder.positions[:, [bass]], recorder.velocities[:, [bass]], fine
        )[:, 0]
        crossing = np.nonzero(
            (angle[:-1] > math.radians(-10.0)) & (angle[1:] <= math.radians(-10.0))
        )[0]
        downward[name] = fine[crossing]
    assert len(downward['plain']) > 4
    np.testing.assert_allclose(downward['early'], downward['plain'] - lead, atol=1e-4)
    with pytest.raises(ValueError, match='pedal_lead_s'):
        PlaySession(robot, play_list, pedal_lead_s=0.2)


def test_drum_start_is_a_cosine_to_the_reset_pose(robot, play_list):
    _, recorder = _start(robot, play_list)
    chunks, times, positions = _kind(recorder, ChunkKind.DRUM_START)
    middle = int(np.argmin(np.abs(times - (START_S + 2.1))))
    assert times[middle] == pytest.approx(START_S + 2.1)
    np.testing.assert_allclose(
        positions[middle], 0.5 * (robot.ready_rad + positions[-1]), atol=1e-12
    )
    np.testing.assert_allclose(chunks[-1].velocities_rad_s[-1], 0.0, atol=1e-12)
    assert {mode for chunk in chunks for mode in chunk.control_modes} == {0}


@pytest.mark.parametrize('wrist_torque', [True, False])
def test_windows_put_the_wrists_in_torque_mode_unless_told_not_to(robot, play_list, wrist_torque):
    session, recorder = _start(robot, play_list, wrist_torque=wrist_torque)
    _run(session, recorder, START_S, until=START_S + 8.0)
    windows = [chunk for chunk in recorder.chunks if chunk.kind == ChunkKind.WINDOW]
    wrists = {robot.index('right_wrist'), robot.index('left_wrist')}
    assert windows
    for chunk in windows:
        for index, mode in enumerate(chunk.control_modes):
            torque = wrist_torque and index in wrists
            assert mode == (ControlMode.TORQUE if torque else ControlMode.POSITION)


def test_speed_change_keeps_score_time_and_continuity(robot, play_list):
    session, recorder = _start(robot, play_list)
    now = _run(session, recorder, START_S, until=20.0)
    before = {h.hit.score_time_s: h.command_time_s for h in session.commanded_hits}
    chunks = session.set_speed(1.3, now)
    assert chunks[0].replace and chunks[0].start_time_s >= now + 0.1
    cut_s = chunks[0].score_start_s
    cut_wall = session.wall_time_at(cut_s)
    recorder.add(chunks)  # continues the commanded position and velocity at the cut
    assert session.speed == 1.3
    _run(session, recorder, now)
    assert session.guarded_windows == 0
    for hit in session.commanded_hits:
        score_s = hit.hit.score_time_s
        if score_s <= cut_s:
            assert hit.command_time_s == before[score_s]
        else:
            assert hit.command_time_s == pytest.approx(cut_wall + (score_s - cut_s) / 1.3)
    assert session.score_time_at(session.wall_time_at(17.3)) == pytest.approx(17.3)
    steps = np.abs(np.diff(recorder.positions, axis=0)).max(axis=0)
    assert np.all(steps < robot.velocity_limit_rad_s * 0.01)  # no jump anywhere


def test_replacement_waits_for_the_next_chunk_when_none_is_due_yet(robot, play_list):
    session, recorder = _start(robot, play_list)
    now = _run(session, recorder, START_S, until=11.2)
    assert any(chunk.kind is ChunkKind.WINDOW for chunk in recorder.chunks)
    assert session.set_speed(2.0, now) == []  # the first window is no longer due yet
    chunks = []
    while not chunks:
        now += 0.05
        chunks = session.poll(now)
    assert chunks[0].replace and chunks[0].kind is ChunkKind.WINDOW
    recorder.add(chunks)
    assert not any(chunk.replace for chunk in chunks[1:])


def test_too_fast_windows_are_slowed_to_the_velocity_limits(robot, play_list):
    session, recorder = _start(robot, play_list)
    recorder.add(session.set_speed(2.5, START_S))  # clamped to 2.0, from the first window
    assert session.speed == 2.0
    _run(session, recorder, START_S)
    assert session.guarded_windows > 0 and session.aborted is None
    assert np.all(np.abs(recorder.velocities) <= robot.velocity_limit_rad_s)
    for hit in session.commanded_hits:  # hits stay exactly on the (adjusted) clock
        assert hit.command_time_s == pytest.approx(session.wall_time_at(hit.hit.score_time_s))
    windows = [chunk for chunk in recorder.chunks if chunk.kind is ChunkKind.WINDOW]
    rates = [(c.score_end_s - c.score_start_s) / (c.end_time_s - c.start_time_s) for c in windows]
    assert max(rates) == pytest.approx(2.0) and min(rates) < 2.0


def test_pause_ends_at_a_bar_start_and_resume_continues_there(robot, play_list):
    session, recorder = _start(robot, play_list)
    now = _run(session, recorder, START_S, until=20.0)
    point, chunks = session.pause(now)
    assert point == ResumePoint('rock', point.bar) and chunks[0].replace
    recorder.add(chunks)
    now = _run(session, recorder, now)
    score = load_score(SCORES / 'rock' / 'rock_beat.txt')
    bar_start = next(e for e in score.events if e.bar == point.bar)
    cut_score = session.score_time_at(20.0 + 0.1)
    assert bar_start.time_s >= cut_score + 1.2
    assert all(h.hit.score_time_s < bar_start.time_s for h in session.commanded_hits)
    assert max(h.hit.bar for h in session.commanded_hits) == point.bar - 1
    np.testing.assert_allclose(recorder.positions[-1], robot.ready_rad, atol=1e-12)
    assert session.resume_point == point
    resumed = Recorder(robot, now + 0.1)
    resumed.add(session.resume(point, now_s=now, current_positions_rad=robot.ready_rad))
    assert session.audio == ''
    _run(session, resumed, now)
    first = session.commanded_hits[0].hit
    assert first.bar == point.bar
    assert len({h.hit.bar for h in session.commanded_hits}) == 14 - point.bar - 1


def test_stop_goes_to_ready_continuously(robot, play_list):
    session, recorder = _start(robot, play_list)
    now = _run(session, recorder, START_S, until=19.0)
    chunks = session.stop(now)
    assert {c.kind for c in chunks} == {ChunkKind.DRUM_END} and chunks[0].replace
    assert not any(c.replace for c in chunks[1:])
    cut = chunks[0].start_time_s
    assert cut >= now + 0.1
    knot = int(np.argmin(np.abs(recorder.times - cut)))
    assert recorder.times[knot] == pytest.approx(cut, abs=1e-9)  # cut at a window boundary
    np.testing.assert_allclose(chunks[0].positions_rad[0], recorder.positions[knot])
    np.testing.assert_allclose(chunks[0].velocities_rad_s[0], recorder.velocities[knot])
    recorder.add(chunks)
    assert all(h.command_time_s <= cut + 1e-9 for h in session.commanded_hits)
    assert session.resume_point is None and session.stop(now + 1) == []
    np.testing.assert_allclose(chunks[-1].positions_rad[-1], robot.ready_rad, atol=1e-12)
    assert chunks[-1].end_time_s - cut == pytest.approx(4.0)


def test_stop_during_drum_start_turns_back_at_once(robot, play_list):
    session, recorder = _start(robot, play_list)
    chunks = session.stop(START_S + 2.0)
    assert chunks[0].replace and chunks[0].start_time_s == pytest.approx(START_S + 2.1)
    recorder.add(chunks)  # checks the first point against the commanded state there
    assert session.commanded_hits == ()


@pytest.mark.parametrize(
    ('instrument', 'hand', 'limb', 'drum'),
    [
        ('ride', None, Hand.RIGHT, 6),
        ('ride', 'left', Hand.LEFT, 6),
        ('closed hihat', None, Hand.LEFT, 5),
        ('open hihat', 'right', Hand.RIGHT, 9),
        ('bass', None, Hand.KICK, 0),
    ],
)
def test_hit_strikes_once_at_the_commanded_time(robot, model, instrument, hand, limb, drum):
    session = PlaySession(robot)
    chunks = session.hit(
        instrument, now_s=START_S, current_positions_rad=robot.ready_rad, velocity=6, hand=hand
    )
    assert chunks[0].kind is ChunkKind.DRUM_START and chunks[-1].kind is ChunkKind.DRUM_END
    Recorder(robot).add(chunks)
    (hit,) = session.commanded_hits
    assert (hit.hit.hand, hit.hit.instrument_id, hit.instrument) == (limb, drum, instrument)
    assert hit.command_time_s == pytest.approx(START_S + 0.1 + 4.0 + 1.0)
    window = next(c for c in chunks if c.hits)
    assert window.times_s[-1] == hit.command_time_s
    if limb is Hand.KICK:
        assert window.positions_rad[-1, robot.index('right_pedal')] == pytest.approx(
            math.radians(-20.0)
        )
    else:
        assert hit.hit.velocity == 6
        tips = model.stick_tip_positions(window.positions_rad[-1])
        tip = tips[0] if limb is Hand.RIGHT else tips[1]
        target = robot.target(limb.value, drum).position_m
        assert np.linalg.norm(tip - target) < 1e-9


def test_hit_rejects_bad_requests(robot, play_list):
    session = PlaySession(robot)
    with pytest.raises(ValueError, match='velocity'):
        session.hit('snare', now_s=0.0, current_positions_rad=robot.ready_rad, velocity=9)
    with pytest.raises(ValueError, match='pedal'):
        session.hit('bass', now_s=0.0, current_positions_rad=robot.ready_rad, hand='left')
    busy, _ = _start(robot, play_list)
    with pytest.raises(SessionBusyError):
        busy.hit('snare', now_s=START_S + 1, current_positions_rad=robot.ready_rad)


def _far(robot):
    targets = dict(robot.targets)
    targets[('left', 4)] = StrikeTarget((0.0, 1.5, 0.2), 0.1)
    return dataclasses.replace(robot, targets=targets)


def test_unreachable_hit_raises_and_moves_nothing(robot):
    session = PlaySession(_far(robot))
    with pytest.raises(PlayAborted) as caught:
        session.hit('top', now_s=0.0, current_positions_rad=robot.ready_rad)
    assert caught.value.bar == 0
    assert session.finished(0.0)
    assert session.hit('snare', now_s=0.0, current_positions_rad=robot.ready_rad)


def test_ik_failure_while_playing_aborts_cleanly_to_ready(robot, play_list):
    session = PlaySession(_far(robot), play_list)
    recorder = Recorder(robot)
    recorder.add(session.start('fills', now_s=START_S, current_positions_rad=robot.ready_rad))
    _run(session, recorder, START_S)
    aborted = session.aborted
    assert isinstance(aborted, PlayAborted) and aborted.play_id == 'fills'
    assert aborted.bar is not None and aborted.bar >= 1
    assert recorder.chunks[-1].kind is ChunkKind.DRUM_END
    np.testing.assert_allclose(recorder.positions[-1], robot.ready_rad, atol=1e-12)
    assert all(h.hit.score_time_s < aborted.score_time_s for h in session.commanded_hits)


def test_improv_chains_the_folder_without_a_pause(robot, play_list):
    session, recorder = _start(robot, play_list, improv=True)
    _run(session, recorder, START_S, until=START_S + 45.0)
    ids = [h.play_id for h in session.commanded_hits]
    drive = 'rock_drive'  # the next file of rock/, named by its play-list id
    assert ids[0] == 'rock' and drive in ids
    first = ids.index(drive)
    gap = (
        session.commanded_hits[first].hit.score_time_s
        - session.commanded_hits[first - 1].hit.score_time_s
    )
    assert gap == pytest.approx(0.6 * 100 / 112)  # the new score's first beat, no rests
    assert recorder.chunks[-1].kind is ChunkKind.WINDOW  # still playing


def test_next_score_in_folder(tmp_path):
    for name in ('b.txt', 'a.txt', 'c.txt', 'notes.md'):
        (tmp_path / name).write_text('bpm\t100\nend\n')
    a, b, c = (tmp_path / name for name in ('a.txt', 'b.txt', 'c.txt'))
    assert next_score_in_folder(tmp_path) == a
    assert next_score_in_folder(tmp_path, a) == b
    assert next_score_in_folder(tmp_path, c) == a
    assert next_score_in_folder(tmp_path, a, recent=[b]) == c
    assert next_score_in_folder(tmp_path, a, recent=[c, b, a]) == c
    (tmp_path / 'only').mkdir()
    (tmp_path / 'only' / 'x.txt').write_text('')
    assert next_score_in_folder(tmp_path / 'only', tmp_path / 'only' / 'x.txt').name == 'x.txt'
    with pytest.raises(FileNotFoundError):
        next_score_in_folder(tmp_path / 'missing')


def test_score_clock_changes_speed_without_losing_time():
    clock = ScoreClock(100.0, 1.0)
    assert clock.wall_at(2.0) == 102.0 and clock.score_at(99.0) == -1.0
    clock.change(4.0, 2.0)
    assert clock.wall_at(4.0) == 104.0 and clock.wall_at(6.0) == 105.0
    assert clock.score_at(105.0) == 6.0 and clock.speed_at(3.9) == 1.0
    clock.change(5.0, 0.5)
    assert clock.wall_at(5.0) == 104.5 and clock.wall_at(6.0) == 106.5
    clock.change(4.5, 1.0)  # drops the later change
    assert clock.wall_at(6.0) == pytest.approx(104.25 + 1.5)


def test_velocity_delta_shifts_every_stroke_of_the_next_score_within_1_to_7(robot, play_list):
    plain, _ = _start(robot, play_list)
    louder = PlaySession(robot, play_list)
    louder.velocity_delta = 2
    louder.start('rock', now_s=START_S, current_positions_rad=robot.ready_rad)
    softer = PlaySession(robot, play_list)
    softer.velocity_delta = -6
    softer.start('rock', now_s=START_S, current_positions_rad=robot.ready_rad)
    now = START_S + 60.0
    for session in (plain, louder, softer):
        session.poll(now)
    pairs = [
        (p.hit.velocity, loud.hit.velocity, soft.hit.velocity)
        for p, loud, soft in zip(
            plain.due_hits(now), louder.due_hits(now), softer.due_hits(now), strict=True
        )
        if p.hit.hand.value != 'kick'
    ]
    assert {velocity for velocity, _, _ in pairs} == {3, 4, 5, 6}
    assert all(loud == min(7, velocity + 2) and soft == 1 for velocity, loud, soft in pairs)


@pytest.mark.parametrize('delta', [7, -7, 1.5, True, '2'])
def test_a_velocity_delta_beyond_the_intensity_range_is_refused(delta):
    with pytest.raises(ValueError, match=r'velocity_delta must be an integer in -6\.\.6'):
        check_velocity_delta(delta)
