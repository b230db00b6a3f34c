"""Score core of phil_control (no ROS): instrument table, score text format, play lists, windows.

Modules:
    instruments: Drum ids, HIT instrument names and the HIT hand rule.
    model: `ScoreEvent`, `Score`, `BpmChange`, `Terminator`, `ScoreError`.
    limits: The physical and cost limits every score is held to, `check_score_limits`.
    parser: `parse_score`, `load_score`.
    writer: `format_score`.
    playlist: `PlayList` and its entries; scores by play id only, from the list's folder only.
    playlist_reader: YAML play lists (project) and upstream `play_list.json`, `PlayListFile`.
    playlist_writer: `write_play_list`, a play list for a folder of score files.
    windows: Sliding look-ahead windows, sample counts with carry, playback speed.
"""

from __future__ import annotations

from phil_control.core.score.instruments import (
    HIT_INSTRUMENT_IDS,
    SCORE_DRUM_NAMES,
    Hand,
    HitAssignment,
    UnknownInstrumentError,
    coordinate_id,
    drum_name,
    hit_assignment,
    hit_hand,
    hit_instrument_id,
)
from phil_control.core.score.model import BpmChange, Score, ScoreError, ScoreEvent, Terminator
from phil_control.core.score.parser import load_score, parse_score
from phil_control.core.score.playlist import PlayList, PlayListEntry, PlayListError
from phil_control.core.score.playlist_reader import (
    PlayListFile,
    load_play_list,
    load_upstream_play_list,
)
from phil_control.core.score.playlist_writer import write_play_list
from phil_control.core.score.windows import (
    SampleCount,
    SpeedError,
    Window,
    build_windows,
    count_samples,
    count_window_samples,
    make_dummy_event,
    normalize_speed,
    score_time_step_s,
    score_to_wall_time,
    wall_to_score_time,
)
from phil_control.core.score.writer import format_score

__all__ = [
    'HIT_INSTRUMENT_IDS',
    'SCORE_DRUM_NAMES',
    'BpmChange',
    'Hand',
    'HitAssignment',
    'PlayList',
    'PlayListEntry',
    'PlayListError',
    'PlayListFile',
    'SampleCount',
    'Score',
    'ScoreError',
    'ScoreEvent',
    'SpeedError',
    'Terminator',
    'UnknownInstrumentError',
    'Window',
    'build_windows',
    'coordinate_id',
    'count_samples',
    'count_window_samples',
    'drum_name',
    'format_score',
    'hit_assignment',
    'hit_hand',
    'hit_instrument_id',
    'load_play_list',
    'load_score',
    'load_upstream_play_list',
    'make_dummy_event',
    'normalize_speed',
    'parse_score',
    'score_time_step_s',
    'score_to_wall_time',
    'wall_to_score_time',
    'write_play_list',
]
