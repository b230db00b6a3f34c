"""Audio players: the command player runs a real child process at the requested instant."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from phil_control.score_player.audio import (
    AudioPlayer,
    CommandAudioPlayer,
    SilentPlayer,
    TrackFinder,
    find_audio_command,
    make_audio_player,
    track_path,
)

# A stand-in player: marks that it started (file <track>.started), then plays for a long time.
FAKE_PLAYER = [
    sys.executable,
    '-c',
    'import sys, time; open(sys.argv[1] + ".started", "w").close(); time.sleep(60)',
]


class ManualClock:
    def __init__(self) -> None:
        self.now_s = 100.0

    def __call__(self) -> float:
        return self.now_s


def _wait(predicate, timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.01)
    return bool(predicate())


@pytest.fixture
def player():
    clock = ManualClock()
    warnings: list[str] = []
    created = CommandAudioPlayer(FAKE_PLAYER, clock_s=clock, warn=warnings.append)
    created.clock, created.warnings = clock, warnings
    yield created
    created.close()


def test_players_implement_the_protocol(player):
    assert isinstance(SilentPlayer(), AudioPlayer)
    assert isinstance(player, AudioPlayer)


def test_track_starts_at_the_requested_time_and_stop_ends_it(player, tmp_path):
    track = tmp_path / 'song.wav'
    player.arm(track)
    player.start_at(player.clock.now_s + 1.0)
    assert not _wait(lambda: player.playing, 0.2)  # the clock has not reached the start yet
    player.clock.now_s += 1.0
    assert _wait(lambda: player.playing)
    assert _wait(lambda: Path(f'{track}.started').exists())
    process = player._process
    player.stop()
    assert not player.playing and process.poll() is not None
    assert player.warnings == []


def test_stop_before_the_start_cancels_it(player, tmp_path):
    track = tmp_path / 'song.wav'
    player.arm(track)
    player.start_at(player.clock.now_s + 1.0)
    player.stop()
    player.clock.now_s += 2.0
    assert not _wait(lambda: player.playing, 0.3)
    assert not Path(f'{track}.started').exists()


def test_arming_another_track_stops_the_current_one(player, tmp_path):
    player.arm(tmp_path / 'first.wav')
    player.start_at(player.clock.now_s)
    assert _wait(lambda: player.playing)
    player.arm(None)
    assert not player.playing
    player.start_at(player.clock.now_s)  # nothing armed: silent
    assert not _wait(lambda: player.playing, 0.2)


def test_a_missing_program_is_reported(tmp_path):
    warnings: list[str] = []
    player = CommandAudioPlayer([str(tmp_path / 'no-such-player')], warn=warnings.append)
    player.arm(tmp_path / 'song.wav')
    player.start_at(0.0)
    assert _wait(lambda: warnings)
    assert 'no-such-player' in warnings[0] and 'song.wav' in warnings[0]
    player.close()


def test_find_audio_command(tmp_path, monkeypatch):
    fake = tmp_path / 'aplay'
    fake.write_text('#!/bin/sh\n')
    fake.chmod(0o755)
    monkeypatch.setenv('PATH', str(tmp_path))
    assert find_audio_command('') is None
    assert find_audio_command('auto') == ['aplay']
    assert find_audio_command('aplay -q') == ['aplay', '-q']
    assert find_audio_command('paplay') is None
    warnings: list[str] = []
    assert isinstance(make_audio_player('paplay', time.monotonic, warnings.append), SilentPlayer)
    assert 'paplay' in warnings[0]
    assert isinstance(
        make_audio_player('auto', time.monotonic, warnings.append), CommandAudioPlayer
    )
    assert isinstance(make_audio_player('', time.monotonic, warnings.append), SilentPlayer)
    assert len(warnings) == 1


def test_track_names_resolve_in_the_audio_folder_and_missing_ones_warn_once(tmp_path):
    assert track_path(tmp_path, 'BI') == tmp_path / 'BI.wav'
    assert track_path(tmp_path, 'song.ogg') == tmp_path / 'song.ogg'
    assert track_path(tmp_path, '/abs/song.wav') == Path('/abs/song.wav')
    (tmp_path / 'BI.wav').write_bytes(b'RIFF')
    warnings: list[str] = []
    find = TrackFinder(tmp_path, warnings.append)
    assert find('BI') == tmp_path / 'BI.wav'
    assert find('') is None and warnings == []
    assert find('TIM') is None and find('TIM') is None
    assert len(warnings) == 1 and 'TIM' in warnings[0]
