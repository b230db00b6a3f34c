"""Score limits: every score is held to physical and cost limits when it is read, before anything
moves; generated scores with extreme numbers are refused with a reason or played within limits."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from phil_control.core.play import ChunkKind, PlayRobot, PlaySession
from phil_control.core.play.playback import MAX_TRANSFER_CHUNK_S
from phil_control.core.score import (
    ScoreError,
    limits,
    load_play_list,
    parse_score,
    write_play_list,
)
from phil_control.core.score.limits import (
    MAX_BAR,
    MAX_EVENTS,
    MAX_PLAY_SAMPLES,
    MAX_SCORE_BYTES,
    MAX_SCORE_DURATION_S,
    MAX_WINDOW_EVENTS,
    MAX_WINDOW_SAMPLES,
)
from phil_control.core.score.parser import load_score
from phil_control.core.score.windows import SAMPLE_PERIOD_S
from phil_description.core import default_robot_model

START_S = 10.0
POLL_S = 0.05
ROW = '{bar}\t{beat}\t5\t1\t5\t4\t1\t1'


def text(*lines: str) -> str:
    return '\n'.join(lines) + '\n'


def groove(bars: int, beat: str = '0.3', bpm: str = '100') -> list[str]:
    """A `bpm` line and four rows per bar."""
    rows = [ROW.format(bar=bar, beat=beat) for bar in range(bars) for _ in 'abcd']
    return [f'bpm\t{bpm}', *rows]


@pytest.fixture(scope='module')
def robot():
    return PlayRobot.from_model(default_robot_model())


@pytest.fixture(scope='module')
def folder(tmp_path_factory):
    """A play list with one entry, 'generated', whose file each test writes."""
    folder = tmp_path_factory.mktemp('generated')
    (folder / 'generated.txt').write_text(text(*groove(1), 'end'))
    write_play_list(folder, {'generated': 'generated.txt'})
    return folder


def play(robot, folder, score_text: str, speed: float = 1.0, budget_s: float = 60.0):
    """Play `score_text` as 'generated' on a fake clock for at most `budget_s`, then stop and
    poll to the end; return the session and every chunk."""
    (folder / 'generated.txt').write_text(score_text)
    session = PlaySession(robot, load_play_list(folder / 'play_list.yaml'))
    chunks = session.start(
        'generated', now_s=START_S, current_positions_rad=robot.ready_rad, speed=speed
    )
    now = START_S
    while not session.finished(now):
        now += POLL_S
        chunks += session.poll(now) if now < START_S + budget_s else session.stop(now)
    return session, chunks


# ------------------------------------------------------------------------------ regressions
def test_beat_1e308_is_refused_before_anything_moves(robot, folder):
    with pytest.raises(
        ScoreError,
        match=r"line 2, field 2: beat '1e308' puts inf s after the "
        r'previous row at 100 bpm; the limit is 10 s',
    ):
        play(robot, folder, text('bpm\t100', ROW.format(bar=1, beat='1e308'), 'end'))


def test_bpm_0_001_is_refused_before_anything_moves(robot, folder):
    with pytest.raises(
        ScoreError,
        match=r"line 1, field 2: bpm '0\.001' is outside the limits "
        r'20\.\.400 bpm',
    ):
        play(robot, folder, text('bpm\t0.001', ROW.format(bar=1, beat='0.6'), 'end'))


@pytest.mark.parametrize(
    ('lines', 'problem'),
    [
        (groove(1, bpm='19.9'), r"line 1, field 2: bpm '19\.9' is outside the limits"),
        (groove(1, bpm='400.1'), r"line 1, field 2: bpm '400\.1' is outside the limits"),
        (
            groove(1, beat='40.1', bpm='400'),
            r"line 2, field 2: beat '40\.1' puts 10\.03 s .* the "
            r'limit is 10 s',
        ),
        ([*groove(1), ROW.format(bar=MAX_BAR + 1, beat='0.6')], r'line 6, field 1: bar '),
        (
            ['bpm\t20'] + [ROW.format(bar=1, beat='2')] * 181,
            r'line 182: the score reaches 1810\.0 '
            r's here; the limit is 1800 s',
        ),
        (
            ['bpm\t100'] + [ROW.format(bar=1, beat='0.01')] * 70,
            rf'line 2: 71 rows fall within one look-ahead window from this row on; the limit is '
            rf'{MAX_WINDOW_EVENTS} rows',
        ),
        (['bpm\t100'] + [ROW.format(bar=1, beat='0')] * 64, r'line 2: 65 rows fall within'),
    ],
)
def test_each_limit_names_the_line_and_the_limit(lines, problem):
    with pytest.raises(ScoreError, match=rf'^s, {problem}'):
        parse_score(text(*lines, 'end'), 's')


def test_a_score_at_the_limits_is_accepted():
    edge = parse_score(
        text(
            'bpm\t400',
            ROW.format(bar=MAX_BAR, beat='40'),
            'bpm\t20',
            *[ROW.format(bar=1, beat='2')] * 179,
            'end',
        )
    )
    assert edge.duration_s == pytest.approx(1800.0) and edge.events[0].bar == MAX_BAR


def test_more_than_the_limit_of_rows_is_refused():
    rows = [ROW.format(bar=1, beat='0.03')] * (MAX_EVENTS + 1)  # 20001 rows, 6 min
    with pytest.raises(ScoreError, match=rf'line {MAX_EVENTS + 2}: more than the limit of '):
        parse_score(text('bpm\t100', *rows, 'end'), 's')


def test_the_sample_limits_are_checked(monkeypatch):
    score = text(*groove(3), 'end')
    monkeypatch.setattr(limits, 'MAX_WINDOW_SAMPLES', 100)
    with pytest.raises(
        ScoreError,
        match=r'line 2: 120 samples for the interval ending at this '
        r'row at speed 0\.5; the limit is 100 samples of 5 ms',
    ):
        parse_score(score, 's')
    monkeypatch.undo()
    monkeypatch.setattr(limits, 'MAX_PLAY_SAMPLES', 1000)
    with pytest.raises(ScoreError, match=r'line 10: 1080 samples up to this row at speed 0\.5'):
        parse_score(score, 's')


def test_resume_reads_through_the_same_checks(robot, folder):
    lines = [*groove(4), 'end']
    lines[9] = ROW.format(bar=2, beat='99')  # a bar before the resume bar
    (folder / 'generated.txt').write_text(text(*lines))
    session = PlaySession(robot, load_play_list(folder / 'play_list.yaml'))
    with pytest.raises(ScoreError, match=r"line 10, field 2: beat '99' puts 99 s"):
        session.start(
            'generated', now_s=START_S, current_positions_rad=robot.ready_rad, start_bar=3
        )
    with pytest.raises(ValueError, match=r'start_bar must be an integer 0\.\.9999'):
        session.start(
            'generated',
            now_s=START_S,
            current_positions_rad=robot.ready_rad,
            start_bar=MAX_BAR + 1,
        )
    assert session.finished(START_S) and session.commanded_hits == ()


def test_improv_chains_only_scores_within_the_limits(robot, tmp_path):
    (tmp_path / 'a.txt').write_text(text(*groove(2), 'end'))
    (tmp_path / 'b.txt').write_text(text(*groove(2, bpm='0.001'), 'end'))  # refused: skipped
    (tmp_path / 'c.txt').write_text(text(*groove(2, bpm='120'), 'end'))
    play_list = load_play_list(
        write_play_list(tmp_path, {'a': 'a.txt', 'b': 'b.txt', 'c': 'c.txt'})
    )
    session = PlaySession(robot, play_list)
    session.start('a', now_s=START_S, current_positions_rad=robot.ready_rad, improv=True)
    now = START_S
    while now < START_S + 25.0:
        now += POLL_S
        session.poll(now)
    ids = [hit.play_id for hit in session.commanded_hits]
    assert ids[0] == 'a' and 'c' in ids and 'b' not in ids


def test_a_file_larger_than_the_limit_is_not_read_whole(tmp_path):
    path = tmp_path / 'big.txt'
    path.write_bytes(b'# ' + b'x' * MAX_SCORE_BYTES + b'\nend\n')
    with pytest.raises(ScoreError, match=rf'larger than the limit of {MAX_SCORE_BYTES} bytes'):
        load_score(path)
    path.write_bytes(b'bpm\t100\n\xff\xfe\nend\n')
    with pytest.raises(ScoreError, match=r'not UTF-8 text \(byte 8\)'):
        load_score(path)


def test_a_quoted_field_is_bounded():
    field = 'A' * 5000
    with pytest.raises(ScoreError) as caught:
        parse_score(text('bpm\t100', ROW.format(bar=1, beat=field), 'end'), 's')
    message = str(caught.value)
    assert len(message) < 200 and "'" + 'A' * 80 + "'... (5000 characters)" in message


def test_a_long_number_is_refused_in_linear_time():
    # An ambiguous pattern took quadratic time on a long digit run that is not a number; the
    # count of regex steps is what this guards, so the input is long enough to hang otherwise.
    field = '1' * 200_000 + 'x'
    with pytest.raises(ScoreError, match=r'is not a number'):
        parse_score(text('bpm\t100', ROW.format(bar=1, beat=field), 'end'), 's')


# ---------------------------------------------------------------------------- property test
# Valid rows and tempi, then up to two fields replaced by extreme or malformed values.
EXTREMES = [
    '0',
    '-0',
    '1e308',
    '-1e308',
    '1e-308',
    'nan',
    'inf',
    '-inf',
    '1e999',
    '0x10',
    '1_0',
    '0.001',
    '1e9',
    '19.99',
    '400.01',
    '240',
    '1e5',
    '-1',
    '1.5',
    str(MAX_BAR + 1),
    '9' * 30,
    '10',
    '99999999999',
    'x',
]
VALID_ROWS = st.tuples(
    st.integers(0, 40).map(str),
    st.floats(0.0, 1.2).map(lambda beat: f'{beat:.3f}'),
    st.integers(0, 9).map(str),
    st.sampled_from('0123458').map(str),
    st.integers(0, 7).map(str),
    st.integers(0, 7).map(str),
    st.sampled_from('01'),
    st.sampled_from('01'),
).map(list)
VALID_TEMPI = st.floats(20.0, 400.0).map(lambda bpm: ['bpm', f'{bpm:.2f}'])


@st.composite
def score_texts(draw) -> str:
    lines = draw(st.lists(VALID_ROWS | VALID_TEMPI, min_size=1, max_size=24))
    for _ in range(draw(st.integers(0, 2))):
        fields = lines[draw(st.integers(0, len(lines) - 1))]
        fields[draw(st.integers(0, len(fields) - 1))] = draw(st.sampled_from(EXTREMES))
    repeat = draw(st.sampled_from([1, 1, 1, 2, 300, 3000]))  # up to 72000 lines
    ending = draw(st.sampled_from(['end', 'end', '-1\t0\t0\t0\t0\t0\t0\t0', '']))
    return text(*(['\t'.join(fields) for fields in lines] * repeat), ending)


# Points of one window chunk: its samples, the rebound sample and the repeated first point.
MAX_WINDOW_POINTS = MAX_WINDOW_SAMPLES + 2


@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow])
@given(score_text=score_texts(), speed=st.sampled_from([0.5, 1.0, 2.0]))
def test_generated_scores_are_refused_with_a_reason_or_played_within_limits(
    robot, folder, score_text, speed
):
    try:
        score = parse_score(score_text, 'generated.txt')
    except ScoreError as error:
        event(f'refused: {re.sub(r"[0-9]+", "N", error.reason)[:40]}')
        assert re.match(r'generated\.txt(, line \d+(, field \d+)?)?: \S', str(error))
        assert len(error.reason) < 300
        with pytest.raises(ScoreError, match=re.escape(error.reason)):  # the player refuses too
            play(robot, folder, score_text, speed)
        return
    assert len(score.events) <= MAX_EVENTS and score.duration_s <= MAX_SCORE_DURATION_S
    session, chunks = play(robot, folder, score_text, speed, budget_s=20.0)
    event('aborted' if session.aborted is not None else 'played')
    lower, upper = robot.soft_lower_rad - 1e-9, robot.soft_upper_rad + 1e-9
    windows = window_points = 0
    for chunk in chunks:
        assert np.isfinite(chunk.times_s).all() and np.isfinite(chunk.positions_rad).all()
        assert np.isfinite(chunk.velocities_rad_s).all()
        assert ((chunk.positions_rad >= lower) & (chunk.positions_rad <= upper)).all()
        assert (np.abs(chunk.velocities_rad_s) <= robot.velocity_limit_rad_s * 1.001).all()
        if chunk.kind is ChunkKind.WINDOW:
            windows += 1
            window_points += chunk.times_s.size
            assert chunk.times_s.size <= MAX_WINDOW_POINTS
        else:
            span_s = chunk.times_s[-1] - chunk.times_s[0]
            assert span_s <= MAX_TRANSFER_CHUNK_S + 1e-9
            assert chunk.times_s.size <= MAX_TRANSFER_CHUNK_S / SAMPLE_PERIOD_S + 2
    assert windows <= len(score.events) + 1  # one window per row (and the release row)
    assert window_points <= MAX_PLAY_SAMPLES + 2 * windows
    assert chunks[-1].kind is ChunkKind.DRUM_END
    np.testing.assert_allclose(chunks[-1].positions_rad[-1], robot.ready_rad, atol=1e-9)
