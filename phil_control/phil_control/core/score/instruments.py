"""Drum and instrument tables of the Phil kit, as plain data.

Two id spaces share the numbers 1..9:

* **Score drum ids** (columns 3/4 of a score row): 0 = no drum, 1..8 the kit, 9 = the open hi-hat
  coordinate. A score row names the hi-hat as 5 and its closed/open state (column 8) picks the
  coordinate actually struck (see `coordinate_id`).
* **HIT instrument ids** (the `HIT|<name>` command): the same numbers, plus 0 = bass drum (kick).

The HIT hand rule follows Gen-2 `make_drum_hit`: ids 2, 3, 6, 7 are struck by the right stick,
1, 4, 5, 8, 9 by the left stick, 0 by the bass pedal; every HIT strikes with velocity 5 and id 5
also closes the hi-hat pedal.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

NO_DRUM = 0
MIN_DRUM_ID = 0
MAX_DRUM_ID = 9
HIHAT_DRUM_ID = 5
OPEN_HIHAT_DRUM_ID = 9

SCORE_DRUM_NAMES: Mapping[int, str] = MappingProxyType(
    {
        0: 'none',
        1: 'snare',
        2: 'floor tom',
        3: 'mid tom',
        4: 'top tom',
        5: 'hi-hat (closed coordinate)',
        6: 'ride',
        7: 'right crash',
        8: 'left crash',
        9: 'hi-hat (open coordinate)',
    }
)

BASS_INSTRUMENT_ID = 0
HIT_INSTRUMENT_IDS: Mapping[str, int] = MappingProxyType(
    {
        'bass': 0,
        'snare': 1,
        'floor': 2,
        'mid': 3,
        'top': 4,
        'closed hihat': 5,
        'ride': 6,
        'right crash': 7,
        'left crash': 8,
        'open hihat': 9,
    }
)
RIGHT_HAND_INSTRUMENT_IDS = frozenset({2, 3, 6, 7})
LEFT_HAND_INSTRUMENT_IDS = frozenset({1, 4, 5, 8, 9})
HIT_VELOCITY = 5


class Hand(enum.Enum):
    """Which limb strikes an instrument."""

    RIGHT = 'right'
    LEFT = 'left'
    KICK = 'kick'


class UnknownInstrumentError(ValueError):
    """An instrument name or id that is not in the table."""


@dataclass(frozen=True)
class HitAssignment:
    """How a `HIT|<name>` command strikes its instrument.

    Attributes:
        name: The instrument name as given in the command.
        instrument_id: HIT id 0..9 (0 = bass drum); for ids 1..9 also the score drum id.
        hand: The limb that strikes.
        velocity: Strike intensity 1..7 (always `HIT_VELOCITY`).
        hihat_closed: True when the hi-hat pedal is closed for the strike (id 5 only).
    """

    name: str
    instrument_id: int
    hand: Hand
    velocity: int
    hihat_closed: bool


def hit_instrument_id(name: str) -> int:
    """Look up the HIT instrument id of an exact instrument name.

    Args:
        name: One of the keys of `HIT_INSTRUMENT_IDS`, e.g. 'closed hihat' (case and spacing
            must match, as upstream compares exact strings).

    Returns:
        The instrument id 0..9.

    Raises:
        UnknownInstrumentError: The name is not in the table; the message lists the valid names.
    """
    try:
        return HIT_INSTRUMENT_IDS[name]
    except KeyError:
        valid = ', '.join(repr(known) for known in HIT_INSTRUMENT_IDS)
        raise UnknownInstrumentError(
            f'unknown instrument {name!r}; valid instruments: {valid}'
        ) from None


def hit_hand(instrument_id: int) -> Hand:
    """Return the limb that strikes a HIT instrument id.

    Raises:
        UnknownInstrumentError: The id is outside 0..9.
    """
    if instrument_id == BASS_INSTRUMENT_ID:
        return Hand.KICK
    if instrument_id in RIGHT_HAND_INSTRUMENT_IDS:
        return Hand.RIGHT
    if instrument_id in LEFT_HAND_INSTRUMENT_IDS:
        return Hand.LEFT
    raise UnknownInstrumentError(
        f'unknown instrument id {instrument_id!r}; valid ids: {MIN_DRUM_ID}..{MAX_DRUM_ID}'
    )


def hit_assignment(name: str) -> HitAssignment:
    """Resolve a `HIT|<name>` target into the limb, velocity and hi-hat state to use.

    Raises:
        UnknownInstrumentError: The name is not in the table.
    """
    instrument_id = hit_instrument_id(name)
    return HitAssignment(
        name=name,
        instrument_id=instrument_id,
        hand=hit_hand(instrument_id),
        velocity=HIT_VELOCITY,
        hihat_closed=instrument_id == HIHAT_DRUM_ID,
    )


def drum_name(drum_id: int) -> str:
    """Return the human-readable name of a score drum id (0 = 'none').

    Raises:
        UnknownInstrumentError: The id is outside 0..9.
    """
    try:
        return SCORE_DRUM_NAMES[drum_id]
    except KeyError:
        raise UnknownInstrumentError(
            f'unknown drum id {drum_id!r}; valid ids: {MIN_DRUM_ID}..{MAX_DRUM_ID}'
        ) from None


def coordinate_id(drum_id: int, hihat_closed: bool) -> int:
    """Return the drum-coordinate id a stick actually strikes.

    A score names the hi-hat as drum 5 whatever the pedal does; with the pedal open the cymbal
    sits higher, so the open coordinate (id 9) is used instead.

    Args:
        drum_id: Score drum id 0..9.
        hihat_closed: Column 8 of the same score row.

    Returns:
        `drum_id`, except 9 for a hi-hat strike with the pedal open.
    """
    if drum_id == HIHAT_DRUM_ID and not hihat_closed:
        return OPEN_HIHAT_DRUM_ID
    return drum_id
