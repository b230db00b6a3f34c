"""Tests of the YAML play list and the upstream play_list.json reader."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from phil_control.core.score.parser import load_score
from phil_control.core.score.playlist import PlayListError
from phil_control.core.score.playlist_reader import load_play_list, load_upstream_play_list

UPSTREAM = Path(__file__).resolve().parents[2].parent / 'shared' / 'reference' / 'upstream'
GEN2 = UPSTREAM / 'Phil-drum-robot@176f39a' / 'drumrobot_server'
GEN2_LATER_PLAY_LIST = UPSTREAM / 'Phil-drum-robot@376fd97/drumrobot_server/config/play_list.json'
CONVERTER_SCORES = UPSTREAM / 'Phil-drum-robot@47210ac' / 'drumrobot_server' / 'data' / 'scores'
requires_upstream = pytest.mark.skipif(
    not UPSTREAM.is_dir(), reason=f'upstream reference data not found at {UPSTREAM}'
)

SCORE_TEXT = 'bpm\t100\n1\t0.6\t1\t0\t5\t0\t0\t0\nend\n'
PLAY_LIST_TEXT = """\
# demo play list
BF:
  score: songs/fill.txt
  audio: ''
  init_note_right: 8
  init_note_left: 1
TI:
  score: songs/this_is_me.txt
  audio: TIM
  init_note_right: 8
  init_note_left: 1
SOLO:
  score: songs/fill.txt
  audio:
  init_note_right: 5
  init_note_left: 5
"""


@pytest.fixture
def play_list_dir(tmp_path):
    songs = tmp_path / 'songs'
    songs.mkdir()
    (songs / 'fill.txt').write_text(SCORE_TEXT)
    (songs / 'this_is_me.txt').write_text(SCORE_TEXT)
    return tmp_path


def write_play_list(folder, text):
    path = folder / 'play_list.yaml'
    path.write_text(text)
    return path


def test_loads_entries_with_scores_relative_to_the_play_list(play_list_dir):
    play_list = load_play_list(write_play_list(play_list_dir, PLAY_LIST_TEXT))
    assert list(play_list) == ['BF', 'TI', 'SOLO']
    assert len(play_list) == 3
    fill = play_list['BF']
    assert fill.play_id == 'BF'
    assert fill.score_path == (play_list_dir / 'songs' / 'fill.txt').resolve()
    assert (fill.audio, fill.init_note_right, fill.init_note_left) == ('', 8, 1)
    assert play_list['TI'].audio == 'TIM'
    assert play_list['SOLO'].audio == ''
    assert 'TI' in play_list and 'XX' not in play_list
    assert len(load_score(fill.score_path).events) == 1


def test_unknown_play_id_lists_the_known_ids(play_list_dir):
    play_list = load_play_list(write_play_list(play_list_dir, PLAY_LIST_TEXT))
    with pytest.raises(PlayListError, match=r"unknown play id 'XX'; known ids: BF, TI, SOLO"):
        play_list.entry('XX')


def refusal(play_list, play_id: str) -> str:
    """The reason ``play_id`` is refused (the entry must be refused)."""
    with pytest.raises(PlayListError) as caught:
        play_list.entry(play_id)
    return str(caught.value)


def test_missing_score_file_names_the_entry_and_refuses_only_it(play_list_dir):
    (play_list_dir / 'songs' / 'this_is_me.txt').unlink()
    path = write_play_list(play_list_dir, PLAY_LIST_TEXT)
    play_list = load_play_list(path)
    assert re.search(
        r"play_list\.yaml, line 7: entry 'TI': score file not found", refusal(play_list, 'TI')
    )
    assert list(play_list) == ['BF', 'SOLO']  # the others play
    assert load_play_list(path, require_scores=False)['TI'].score_path.name == 'this_is_me.txt'


ENTRY = {'score': 'songs/fill.txt', 'init_note_right': 8, 'init_note_left': 1}


@pytest.mark.parametrize(
    ('changes', 'expected'),
    [
        ({'score': '/abs/fill.txt'}, r"'score' must be relative to the play list's folder"),
        ({'score': ''}, r"'score' must be a non-empty string"),
        ({'score': 3}, r"'score' must be a non-empty string, got 3"),
        ({'audio': 7}, r"'audio' must be a string, got 7"),
        ({'init_note_right': 0}, r"'init_note_right' = 0 is out of range 1\.\.9"),
        ({'init_note_left': 10}, r"'init_note_left' = 10 is out of range 1\.\.9"),
        ({'init_note_left': True}, r"'init_note_left' must be an integer drum id, got True"),
        ({'init_note_right': 'snare'}, r"'init_note_right' must be an integer drum id"),
        (
            {'init_note_r': 8},
            r'unknown key\(s\) init_note_r; allowed: aliases, audio, init_note_left',
        ),
        ({'init_note_left': None}, r"'init_note_left' must be an integer drum id, got None"),
    ],
)
def test_invalid_entries_name_file_line_and_entry(play_list_dir, changes, expected):
    entry = {**ENTRY, **changes}
    path = write_play_list(play_list_dir, json.dumps({'BF': entry, 'OK': ENTRY}))
    play_list = load_play_list(path)
    assert re.search(rf"play_list\.yaml, line 1: entry 'BF': {expected}", refusal(play_list, 'BF'))
    assert list(play_list) == ['OK']


def test_missing_keys_are_listed(play_list_dir):
    path = write_play_list(play_list_dir, json.dumps({'BF': {'score': 'songs/fill.txt'}}))
    assert re.search(
        r"entry 'BF': missing key\(s\) init_note_right, init", refusal(load_play_list(path), 'BF')
    )


BROKEN_ENTRY_TEXT = PLAY_LIST_TEXT.replace(
    '  score: songs/this_is_me.txt', '  score: [songs/this_is_me.txt'
)


def test_a_yaml_syntax_error_refuses_only_the_entry_it_is_in(play_list_dir):
    play_list = load_play_list(write_play_list(play_list_dir, BROKEN_ENTRY_TEXT))
    assert list(play_list) == ['BF', 'SOLO']
    assert play_list['SOLO'].init_note_right == 5
    assert re.search(
        r'play_list\.yaml, line 7: the entry there is not valid YAML at line 9',
        refusal(play_list, 'TI'),
    )
    # An entry that did not parse is listed by its line, its text not repeated.
    assert refusal(play_list, 'XX').endswith('refused (bad entries): line 7')


@pytest.mark.parametrize(
    ('text', 'expected'),
    [
        ('', r'expected a non-empty mapping of play id to entry'),
        ('- BF\n', r'expected a non-empty mapping of play id to entry'),
        ('  indented: [unclosed\n', r'not valid YAML at line 2, column 1'),
    ],
)
def test_malformed_documents_are_rejected(play_list_dir, text, expected):
    with pytest.raises(PlayListError, match=rf'play_list\.yaml: {expected}'):
        load_play_list(write_play_list(play_list_dir, text))


@pytest.mark.parametrize(
    ('text', 'play_id', 'expected'),
    [
        (
            '1:\n  score: songs/fill.txt\n',
            '1',
            r'line 1: entry 1: play id 1 must be a non-empty string \(quote',
        ),
        (
            'ON:\n  score: songs/fill.txt\n',
            'True',
            r'entry True: play id True must be a non-empty string',
        ),  # YAML's key: no line
        ('BF: songs/fill.txt\n', 'BF', r"line 1: entry 'BF': expected a mapping, got str"),
        ('BF: [unclosed\n', 'BF', r'line 1: the entry there is not valid YAML'),
    ],
)
def test_malformed_entries_are_refused(play_list_dir, text, play_id, expected):
    play_list = load_play_list(write_play_list(play_list_dir, text))
    assert not play_list.entries
    assert re.search(rf'play_list\.yaml[:,] {expected}', play_list.problems[play_id])


def test_an_alias_plays_its_entry_and_a_taken_alias_refuses_only_its_entry(play_list_dir):
    text = PLAY_LIST_TEXT.replace(
        '  audio: TIM\n', '  audio: TIM\n  aliases: [TIM, this_is_me]\n'
    ).replace('  init_note_right: 5\n', '  aliases: [TIM, BF]\n  init_note_right: 5\n')
    play_list = load_play_list(write_play_list(play_list_dir, text))
    assert play_list.entry('TIM') is play_list['TI']
    assert play_list.entry('this_is_me').play_id == 'TI'
    assert play_list['TI'].aliases == ('TIM', 'this_is_me')
    assert 'SOLO' not in play_list
    assert re.search(
        r"line 13: entry 'SOLO': alias\(es\) 'TIM', 'BF' already name an entry",
        play_list.problems['SOLO'],
    )


@pytest.mark.parametrize('aliases', ['TIM', '[1]', "['../x']", "['']"])
def test_aliases_must_be_a_list_of_names(play_list_dir, aliases):
    text = 'BF:\n  score: songs/fill.txt\n  init_note_right: 8\n  init_note_left: 1\n'
    play_list = load_play_list(write_play_list(play_list_dir, text + f'  aliases: {aliases}\n'))
    assert "'aliases' must be a list of names" in play_list.problems['BF']


def test_the_project_play_list_plays_the_gen1_brains_songs():
    play_list = load_play_list(Path(__file__).resolve().parents[2] / 'scores' / 'play_list.yaml')
    for song in ('TIM', 'TY_short', 'BI', 'test_one'):
        assert play_list.entry(song).play_id in play_list


def test_upstream_json_format_is_read_from_a_synthetic_tree(tmp_path):
    config = tmp_path / 'config'
    scores = tmp_path / 'data' / 'scores'
    config.mkdir()
    scores.mkdir(parents=True)
    (scores / 'Fill.txt').write_text(SCORE_TEXT)
    entry = {'score': 'Fill', 'audio': 'BI', 'init_note_r': 5, 'init_note_l': 1}
    path = config / 'play_list.json'
    path.write_text(json.dumps({'play_list': {'BI': entry}}))
    play_list = load_upstream_play_list(path)
    assert play_list['BI'].score_path == (scores / 'Fill.txt').resolve()
    assert (play_list['BI'].audio, play_list['BI'].init_note_right) == ('BI', 5)

    path.write_text(json.dumps({'BI': entry}))
    with pytest.raises(PlayListError, match=r"single key 'play_list'"):
        load_upstream_play_list(path)


@requires_upstream
def test_upstream_play_list_at_176f39a_resolves_and_parses_every_score():
    play_list = load_upstream_play_list(GEN2 / 'config' / 'play_list.json')
    assert list(play_list) == ['BI', 'BF', 'DS', 'TI', 'TY', 'WS']
    assert play_list['BI'].audio == 'BI' and play_list['TI'].audio == 'TIM'
    assert play_list['BF'].audio == ''
    notes = {
        play_id: (entry.init_note_right, entry.init_note_left)
        for play_id, entry in play_list.entries.items()
    }
    assert notes == {
        'BI': (5, 1),
        'BF': (8, 1),
        'DS': (8, 1),
        'TI': (8, 1),
        'TY': (5, 1),
        'WS': (5, 1),
    }
    for entry in play_list.entries.values():
        assert load_score(entry.score_path).events


@requires_upstream
def test_upstream_play_list_at_376fd97_lists_35_entries():
    play_list = load_upstream_play_list(GEN2_LATER_PLAY_LIST, require_scores=False)
    assert len(play_list) == 35
    assert play_list['R3'].score_path.name == '1_rock_100_beat_4-4.txt'
    assert (play_list['R4'].init_note_right, play_list['R4'].init_note_left) == (5, 5)
    assert play_list['F1e'].score_path == play_list['F1'].score_path


@requires_upstream
def test_upstream_play_list_with_missing_scores_names_each_missing_entry():
    play_list = load_upstream_play_list(GEN2_LATER_PLAY_LIST, scores_dir=CONVERTER_SCORES)
    assert re.search(r"entry 'BI': score file not found: .*BabyINeedYou", refusal(play_list, 'BI'))
    assert len(play_list.entries) + len(play_list.problems) == 35
