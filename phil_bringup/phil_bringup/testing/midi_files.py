"""General MIDI drum files built with mido, for the tests and benchmarks of `phil import-midi`."""

from __future__ import annotations

from pathlib import Path

import mido

TICKS_PER_BEAT = 480
DRUM_CHANNEL = 9  # channel 10, counted from 0


def write_drum_midi(path: Path, notes, tempi=((0, 120.0),), channel: int = DRUM_CHANNEL) -> Path:
    """A type-0 MIDI file: ``notes`` (beat, note, velocity), ``tempi`` (beat, bpm); ``path``."""
    events = [
        (beat, mido.MetaMessage('set_tempo', tempo=mido.bpm2tempo(bpm))) for beat, bpm in tempi
    ]
    for beat, note, velocity in notes:
        events.append(
            (beat, mido.Message('note_on', channel=channel, note=note, velocity=velocity))
        )
        events.append((beat + 0.1, mido.Message('note_off', channel=channel, note=note)))
    track, now = mido.MidiTrack(), 0
    for beat, message in sorted(events, key=lambda item: item[0]):
        tick = round(beat * TICKS_PER_BEAT)
        track.append(message.copy(time=tick - now))
        now = tick
    midi = mido.MidiFile(type=0, ticks_per_beat=TICKS_PER_BEAT)
    midi.tracks.append(track)
    midi.save(path)
    return path


def rock_beat(bars: int = 4) -> list[tuple[float, int, int]]:
    """8th hi-hat, snare on 2 and 4, kick on 1 and 3, a crash with the first kick: (beat,
    note, velocity) each."""
    notes = [(0, 49, 110)]
    for bar in range(bars):
        for eighth in range(8):
            beat = bar * 4 + eighth / 2
            notes.append((beat, 42, 80 if eighth % 2 else 100))
            if eighth in (0, 4):
                notes.append((beat, 36, 100))
            if eighth in (2, 6):
                notes.append((beat, 38, 120))
    return notes
