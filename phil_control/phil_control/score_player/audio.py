"""Audio tracks played along with a score, behind a small pluggable interface.

The score player arms a track at every PLAY (``None`` disarms: silent play), asks for it to
start at score time 0 (the end of DRUM START) and stops it on stop, pause, cancel and abort.
Playback speed does not change the audio (as upstream).

Implementations:
    SilentPlayer: Plays nothing (the default).
    CommandAudioPlayer: Plays a WAV file with a system command (``paplay`` or ``aplay``) in a
        child process, started from a helper thread at the requested instant.

No ROS here: the node injects its clock and a warning function.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

#: Commands tried, in order, when the audio command is 'auto'.
AUTO_COMMANDS = ('paplay', 'aplay')
#: Default file suffix of a track named without one in the play list.
TRACK_SUFFIX = '.wav'
# Longest sleep of the start thread between clock checks, s (bounds the reaction to stop()).
_WAIT_SLICE_S = 0.05
# Time a terminated player process gets before it is killed, s.
_TERMINATE_TIMEOUT_S = 1.0


@runtime_checkable
class AudioPlayer(Protocol):
    """What the score player needs from an audio back end. Calls come from one thread."""

    def arm(self, track: Path | None) -> None:
        """Select the track of the next play (stops any track still playing); None = silent."""

    def start_at(self, time_s: float) -> None:
        """Start the armed track at ``time_s`` on the player's clock (s); returns at once."""

    def stop(self) -> None:
        """Stop the track now (or cancel a pending start); harmless when nothing plays."""


class SilentPlayer:
    """An `AudioPlayer` that plays nothing."""

    def arm(self, track: Path | None) -> None:
        """Ignore the track."""

    def start_at(self, time_s: float) -> None:
        """Do nothing."""

    def stop(self) -> None:
        """Do nothing."""


class CommandAudioPlayer:
    """Plays the armed track with ``command + [track]`` in a child process.

    The process is started by a helper thread when ``clock_s()`` reaches the requested time
    (within ``_WAIT_SLICE_S`` plus the time the command needs to open the sound device); the
    caller never blocks. Output of the command is discarded. Thread-safe.

    Args:
        command: Program and leading arguments, e.g. ``['aplay', '-q']``.
        clock_s: The clock ``start_at`` times are on, s (default CLOCK_MONOTONIC).
        warn: Called with a message when the command cannot be started.
    """

    def __init__(
        self,
        command: Sequence[str],
        clock_s: Callable[[], float] = time.monotonic,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        if not command:
            raise ValueError('CommandAudioPlayer needs a command')
        self.command = tuple(command)
        self._clock_s = clock_s
        self._warn = warn or (lambda _message: None)
        self._lock = threading.Lock()
        self._track: Path | None = None
        self._cancel = threading.Event()
        self._thread: threading.Thread | None = None
        self._process: subprocess.Popen | None = None

    @property
    def playing(self) -> bool:
        """True while a player process runs."""
        with self._lock:
            return self._process is not None and self._process.poll() is None

    def arm(self, track: Path | None) -> None:
        """Stop what plays and select ``track`` (None: the next start plays nothing)."""
        self.stop()
        with self._lock:
            self._track = track

    def start_at(self, time_s: float) -> None:
        """Start the armed track at ``time_s`` (helper thread); ignored when none is armed."""
        with self._lock:
            track = self._track
            if track is None:
                return
            self._cancel = cancel = threading.Event()
            self._thread = threading.Thread(
                target=self._run, args=(track, time_s, cancel), name='audio-start', daemon=True
            )
            self._thread.start()

    def stop(self) -> None:
        """Cancel a pending start and end the player process (terminate, then kill)."""
        with self._lock:
            self._cancel.set()
            process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(_TERMINATE_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def close(self, timeout_s: float = 1.0) -> None:
        """`stop` and wait for the helper thread to end."""
        self.stop()
        thread = self._thread
        if thread is not None:
            thread.join(timeout_s)

    def _run(self, track: Path, time_s: float, cancel: threading.Event) -> None:
        while (remaining := time_s - self._clock_s()) > 0.0:
            if cancel.wait(min(remaining, _WAIT_SLICE_S)):
                return
        with self._lock:
            if cancel.is_set():
                return
            try:
                self._process = subprocess.Popen(
                    [*self.command, str(track)],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            except OSError as error:
                self._warn(f'audio: cannot run {self.command[0]!r} for {track}: {error}')


def find_audio_command(setting: str) -> list[str] | None:
    """The player command for the ``audio_command`` parameter.

    Args:
        setting: '' (silent), 'auto' (the first of `AUTO_COMMANDS` on the PATH) or a command
            line whose first word is looked up on the PATH (e.g. 'aplay -q').

    Returns:
        The command split into words, or None when silent or nothing usable is installed.
    """
    words = setting.split()
    if not words:
        return None
    if words == ['auto']:
        found = next((name for name in AUTO_COMMANDS if shutil.which(name)), None)
        return [found] if found is not None else None
    return words if shutil.which(words[0]) else None


def track_path(audio_dir: Path, name: str) -> Path:
    """Where a play-list track name lives: ``audio_dir/name``, with `TRACK_SUFFIX` added when
    the name has no suffix (upstream names tracks without one, e.g. 'BI')."""
    path = Path(name)
    if not path.suffix:
        path = path.with_name(path.name + TRACK_SUFFIX)
    return path if path.is_absolute() else audio_dir / path


def make_audio_player(
    setting: str, clock_s: Callable[[], float], warn: Callable[[str], None]
) -> AudioPlayer:
    """The player for the ``audio_command`` parameter (see `find_audio_command`): a
    `CommandAudioPlayer` on ``clock_s``, or a `SilentPlayer` (warned when a command was asked
    for but is not installed)."""
    command = find_audio_command(setting)
    if command is None:
        if setting:
            warn(f'audio_command {setting!r}: no such player installed; playing silent')
        return SilentPlayer()
    return CommandAudioPlayer(command, clock_s=clock_s, warn=warn)


class TrackFinder:
    """Play-list track names -> existing audio files; a missing file is warned about once.

    Args:
        audio_dir: Folder of the tracks.
        warn: Called with a message the first time a track is missing.
    """

    def __init__(self, audio_dir: Path, warn: Callable[[str], None]) -> None:
        self.audio_dir = audio_dir
        self._warn = warn
        self._missing: set[Path] = set()

    def __call__(self, name: str) -> Path | None:
        """The file of track ``name``; None when the name is '' or the file is absent."""
        if not name:
            return None
        path = track_path(self.audio_dir, name)
        if path.is_file():
            return path
        if path not in self._missing:
            self._missing.add(path)
            self._warn(f'audio track {name!r} not found at {path}; playing silent')
        return None
