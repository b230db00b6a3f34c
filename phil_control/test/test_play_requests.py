"""PLAY takes play-list ids only: paths are refused with the valid ids and never opened; a play
list keeps its scores in its folder; improv and RESUME stay in it too; `write_play_list`."""

from __future__ import annotations

import json
import os
import re
import sys
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from phil_control.core.play import PlayRobot, PlaySession, ResumePoint
from phil_control.core.score import (
    PlayListError,
    load_play_list,
    load_upstream_play_list,
    write_play_list,
)
from phil_description.core import default_robot_model

MARKER = 'outside-the-play-list-7d21e'
START_S = 10.0


def score_text(bars: int = 2, bpm: int = 120, comment: str = '') -> str:
    """A playable score: count-in bar 0, `bars` bars of 8th hi-hat / backbeat / kick, rests."""
    rows = [f'# {comment}'] if comment else []
    rows += [f'bpm\t{bpm}'] + ['0\t0.6\t0\t0\t0\t0\t0\t0'] * 4
    for bar in range(1, bars + 1):
        for eighth in range(8):
            left, kick = (1 if eighth in (2, 6) else 0), (1 if eighth in (0, 4) else 0)
            rows.append(
                f'{bar}\t{0.6 if bar == 1 and eighth == 0 else 0.3}\t5\t{left}\t5\t'
                f'{6 * left}\t{kick}\t1'
            )
    rows += [f'{bars + 1}\t0.6\t0\t0\t0\t0\t0\t0'] * 4 + ['end']
    return '\n'.join(rows) + '\n'


@pytest.fixture(scope='module')
def robot():
    return PlayRobot.from_model(default_robot_model())


@pytest.fixture
def layout(tmp_path):
    """scores/ (the play list's folder: groove/a.txt, groove/b.txt, groove/extra.txt without an
    entry) and outside/secret.txt, a playable score with a marker line."""
    scores, outside = tmp_path / 'scores', tmp_path / 'outside'
    (scores / 'groove').mkdir(parents=True)
    outside.mkdir()
    for name in ('a', 'b', 'extra'):
        (scores / 'groove' / f'{name}.txt').write_text(score_text())
    (outside / 'secret.txt').write_text(score_text(comment=MARKER))
    write_play_list(scores, {'a': 'groove/a.txt', 'b': 'groove/b.txt'})
    return scores, outside


@contextmanager
def opened_files():
    """Record every file opened (Python's ``open`` audit event: builtins.open, io.open, os.open
    and pathlib alike, on every Python version)."""
    opened: list[str] = []
    _RECORDERS.append(opened)
    try:
        yield opened
    finally:
        _RECORDERS.remove(opened)


_RECORDERS: list[list[str]] = []


def _record_open(event: str, args: tuple) -> None:
    if event != 'open' or not _RECORDERS:
        return
    path = args[0]
    name = f'fd {path}' if isinstance(path, int) else os.fspath(path)
    if not str(name).endswith(_MODULE_FILES):  # the import system loading a module (a codec)
        _RECORDERS[-1].append(name)


_MODULE_FILES = ('.py', '.pyc', '.so')


sys.addaudithook(_record_open)  # a hook stays for the process; it records only when asked


def _start(session, robot, score, **kwargs):
    return session.start(score, now_s=START_S, current_positions_rad=robot.ready_rad, **kwargs)


def _requests(scores: Path, outside: Path) -> list[tuple[str, str]]:
    """(request, expected problem)."""
    path, unknown = 'is not a play id: scores are played by id, not by path', 'unknown play id'
    return [
        (str(outside / 'secret.txt'), path),  # absolute, outside
        (str(scores / 'groove' / 'a.txt'), path),  # absolute, inside, listed
        ('groove/a.txt', path),  # relative, inside
        (f'../{outside.name}/secret.txt', path),  # up and out
        ('..', path),
        ('/etc/passwd', path),
        ('/proc/self/environ', path),
        ('../../../../etc/hostname', path),
        ('groove\\a.txt', path),
        ('a.txt', unknown),  # a file name of the folder is no id
        ('nope', unknown),
    ]


def test_a_path_or_unknown_id_is_refused_with_the_valid_ids_and_nothing_is_opened(robot, layout):
    scores, outside = layout
    play_list = load_play_list(scores / 'play_list.yaml')
    session = PlaySession(robot, play_list)
    for request, problem in _requests(scores, outside):
        with opened_files() as opened, pytest.raises(PlayListError) as caught:
            _start(session, robot, request)
        reason = str(caught.value)
        assert opened == [], (request, opened)
        assert problem in reason and reason.endswith('; known ids: a, b'), reason
        assert MARKER not in reason
        assert session.finished(START_S) and session.commanded_hits == ()


def test_an_id_is_played_and_only_its_file_is_opened(robot, layout):
    scores, _ = layout
    session = PlaySession(robot, load_play_list(scores / 'play_list.yaml'))
    with opened_files() as opened:
        chunks = _start(session, robot, 'a')
    assert chunks and [Path(path) for path in opened] == [(scores / 'groove' / 'a.txt').resolve()]


def test_a_long_or_odd_request_is_quoted_bounded(robot, layout):
    scores, _ = layout
    session = PlaySession(robot, load_play_list(scores / 'play_list.yaml'))
    for request in ('x' * 5000, '/' + 'y' * 5000, 'a\x00b', 'é' * 300):
        with pytest.raises(PlayListError) as caught:
            _start(session, robot, request)
        assert len(str(caught.value)) < 400 and 'known ids: a, b' in str(caught.value)
    with pytest.raises(PlayListError, match=r'unknown play id "\[\'a\'\]"'):
        load_play_list(scores / 'play_list.yaml').entry(['a'])


def test_without_a_play_list_nothing_can_be_played(robot, layout):
    _, outside = layout
    session = PlaySession(robot)
    with opened_files() as opened, pytest.raises(PlayListError, match='no play list'):
        _start(session, robot, str(outside / 'secret.txt'))
    assert opened == []


@pytest.mark.parametrize(
    ('score', 'problem'),
    [
        ('../outside/secret.txt', r"'score' must not go up with '\.\.'"),
        ('groove/../groove/a.txt', r"'score' must not go up with '\.\.'"),
        ('/etc/passwd', r"'score' must be relative to the play list's folder"),
        ('escape/secret.txt', r"'score' resolves to .*secret\.txt, outside the play list's"),
        ('evil.txt', r"'score' resolves to .*secret\.txt, outside the play list's"),
    ],
)
def test_a_play_list_entry_outside_its_folder_is_an_error(layout, score, problem):
    scores, outside = layout
    (scores / 'escape').symlink_to(outside, target_is_directory=True)
    (scores / 'evil.txt').symlink_to(outside / 'secret.txt')
    path = scores / 'list.yaml'
    path.write_text(
        json.dumps({'bad': {'score': score, 'init_note_right': 5, 'init_note_left': 1}})
    )
    with opened_files() as opened:
        play_list = load_play_list(path)
    assert opened == [str(path)]  # only the play list itself
    with opened_files() as opened, pytest.raises(PlayListError) as caught:
        play_list.entry('bad')
    assert opened == []
    assert f"{path}, line 1: entry 'bad': " in str(caught.value)
    assert re.search(problem, str(caught.value)), str(caught.value)


def test_a_symlink_inside_the_folder_is_fine(robot, layout):
    scores, _ = layout
    (scores / 'alias.txt').symlink_to(scores / 'groove' / 'b.txt')
    play_list = load_play_list(write_play_list(scores, {'alias': 'alias.txt'}))
    assert _start(PlaySession(robot, play_list), robot, 'alias')


@pytest.mark.parametrize('play_id', ['a/b', '..', 'x\\y', '../up'])
def test_a_play_id_that_looks_like_a_path_is_an_error(layout, play_id):
    scores, _ = layout
    path = scores / 'list.yaml'
    path.write_text(
        json.dumps({play_id: {'score': 'groove/a.txt', 'init_note_right': 5, 'init_note_left': 1}})
    )
    assert re.search(
        r"must not contain '/', '\\' or '\.\.'", load_play_list(path).problems[play_id]
    )


def test_an_upstream_play_list_keeps_its_scores_in_its_scores_folder(tmp_path):
    config, data = tmp_path / 'config', tmp_path / 'data' / 'scores'
    config.mkdir()
    data.mkdir(parents=True)
    (data / 'Fill.txt').write_text(score_text())
    (tmp_path / 'secret.txt').write_text(score_text())
    path = config / 'play_list.json'
    for name, problem in (('../../secret', 'must not go up'), ('/etc/passwd', 'must be relative')):
        entry = {'score': name, 'audio': '', 'init_note_r': 5, 'init_note_l': 1}
        path.write_text(json.dumps({'play_list': {'X': entry}}))
        with pytest.raises(PlayListError, match=rf"entry 'X': 'score' {problem}"):
            load_upstream_play_list(path).entry('X')
    entry = {'score': 'Fill', 'audio': '', 'init_note_r': 5, 'init_note_l': 1}
    path.write_text(json.dumps({'play_list': {'F': entry}}))
    assert load_upstream_play_list(path).root == data.resolve()


def test_a_yaml_error_names_the_place_without_quoting_the_file(tmp_path):
    path = tmp_path / 'play_list.yaml'
    path.write_text(f'{MARKER}: [unclosed\n')
    with pytest.raises(PlayListError, match=r'not valid YAML at line 2, column 1') as caught:
        load_play_list(path).entry(MARKER)
    assert str(caught.value).count(MARKER) == 1  # the id asked for; nothing of the file


def _run(session, now, until):
    chunks = []
    while not session.finished(now) and now < until:
        now += 0.05
        chunks += session.poll(now)
    return now, chunks


def test_improv_skips_a_symlink_out_of_the_folder_without_opening_it(robot, layout):
    scores, outside = layout
    (scores / 'groove' / 'aa.txt').symlink_to(outside / 'secret.txt')  # next after a.txt
    session = PlaySession(robot, load_play_list(scores / 'play_list.yaml'))
    with opened_files() as opened:
        _start(session, robot, 'a', improv=True)
        _run(session, START_S, START_S + 40.0)
    resolved = {Path(path).resolve() for path in opened}
    assert (outside / 'secret.txt').resolve() not in resolved
    assert resolved == {
        (scores / 'groove' / f'{name}.txt').resolve() for name in ('a', 'b', 'extra')
    }
    ids = [hit.play_id for hit in session.commanded_hits]
    assert ids[0] == 'a' and 'b' in ids and 'groove/extra.txt' in ids  # a file without an id


def test_resume_continues_a_chained_score_that_has_no_id(robot, layout):
    scores, _ = layout
    session = PlaySession(robot, load_play_list(scores / 'play_list.yaml'))
    _start(session, robot, 'b', improv=True)  # b.txt, then extra.txt (no entry), then a.txt
    now = START_S
    while 'groove/extra.txt' not in {hit.play_id for hit in session.due_hits(now)}:
        now, _ = _run(session, now, now + 0.05)
    point, _ = session.pause(now)
    assert point == ResumePoint('groove/extra.txt', point.bar, scores / 'groove' / 'extra.txt')
    _run(session, now, now + 30.0)
    resumed = session.resume(point, now_s=now + 30.0, current_positions_rad=robot.ready_rad)
    assert resumed and session.resume_point is None
    now, chunks = _run(session, now + 30.0, now + 80.0)
    hits = session.commanded_hits
    assert hits[0].play_id == 'groove/extra.txt' and hits[0].hit.bar == point.bar
    assert session.finished(now) and np.allclose(chunks[-1].positions_rad[-1], robot.ready_rad)
    with pytest.raises(PlayListError, match='is not a play id'):  # not without its point
        session.start('groove/extra.txt', now_s=now, current_positions_rad=robot.ready_rad)


def test_write_play_list_round_trips_through_the_loader(tmp_path):
    (tmp_path / 'songs').mkdir()
    (tmp_path / 'songs' / 'x.txt').write_text(score_text())
    path = write_play_list(
        tmp_path,
        {'ON': 'songs/x.txt', '1': tmp_path / 'songs' / 'x.txt'},
        audio={'ON': 'track'},
        init_notes=(8, 2),
    )
    assert path == tmp_path / 'play_list.yaml'
    play_list = load_play_list(path)
    assert list(play_list) == ['ON', '1']  # YAML booleans and numbers are quoted
    assert {entry.score_path for entry in play_list.entries.values()} == {
        (tmp_path / 'songs' / 'x.txt').resolve()
    }
    assert play_list['ON'].audio == 'track' and play_list['1'].audio == ''
    assert (play_list['1'].init_note_right, play_list['1'].init_note_left) == (8, 2)
    assert play_list.id_of(tmp_path / 'songs' / 'x.txt') == 'ON'


@pytest.mark.parametrize(
    ('kwargs', 'problem'),
    [
        ({'scores': {}}, 'at least one score'),
        ({'scores': {'x': '/etc/passwd'}}, 'outside the play list folder'),
        ({'scores': {'x': 'x.txt'}, 'audio': {'y': 't'}}, 'audio given for ids without'),
        ({'scores': {'x': 'x.txt'}, 'init_notes': (0, 1)}, r'init notes \(0, 1\)'),
    ],
)
def test_write_play_list_refuses_bad_entries(tmp_path, kwargs, problem):
    with pytest.raises(PlayListError, match=problem):
        write_play_list(tmp_path, **kwargs)
    assert not (tmp_path / 'play_list.yaml').exists()
