"""The drum kit as data, read from the URDF's <drum_kit> element and its strike frames."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from phil_description.core.errors import DescriptionError

HANDS = ('right', 'left')


@dataclass(frozen=True)
class StrikePoint:
    """Where one stick tip meets a pad (kinematic frame, m) and the wrist angle there (rad)."""

    hand: str
    link: str
    position_m: np.ndarray = field(compare=False)
    wrist_angle_rad: float


@dataclass(frozen=True)
class Instrument:
    """One instrument of the kit."""

    name: str
    id: int
    kind: str
    radius_m: float
    link: str
    center_m: np.ndarray = field(compare=False)  # pad centre, kinematic frame
    pedal_joint: str  # '' when played by sticks only
    strikes: dict[str, StrikePoint]  # by hand; empty for the bass drum


@dataclass(frozen=True)
class DrumKit:
    """All instruments, by name and by HIT id."""

    instruments: tuple[Instrument, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(instrument.name for instrument in self.instruments)

    def by_name(self, name: str) -> Instrument:
        """Look an instrument up by name; the error lists the valid names."""
        for instrument in self.instruments:
            if instrument.name == name:
                return instrument
        raise KeyError(f'unknown instrument {name!r}; valid: {", ".join(self.names)}')

    def by_id(self, instrument_id: int) -> Instrument:
        for instrument in self.instruments:
            if instrument.id == instrument_id:
                return instrument
        ids = ', '.join(str(instrument.id) for instrument in self.instruments)
        raise KeyError(f'unknown instrument id {instrument_id!r}; valid: {ids}')


def parse_kit(
    element: ET.Element | None,
    source: str,
    links: tuple[str, ...],
    movable_joints: tuple[str, ...],
    position_of: Callable[[str], np.ndarray],
) -> DrumKit:
    """Build the DrumKit from <drum_kit>; ``position_of(link)`` gives a link's position in
    the kit frame.

    Raises:
        DescriptionError: missing element or attribute, duplicate name/id, unknown link or
            pedal joint, bad hand name, non-finite wrist angle.
    """
    if element is None:
        raise DescriptionError(source, 'drum_kit', 'the URDF has no <drum_kit> element')
    reader = _KitReader(source, links, movable_joints, position_of)
    instruments = [reader.instrument(record) for record in element.findall('instrument')]
    for key in ('name', 'id'):
        values = [getattr(instrument, key) for instrument in instruments]
        duplicates = sorted({str(v) for v in values if values.count(v) > 1})
        if duplicates:
            raise DescriptionError(
                source, 'drum_kit', f'duplicate instrument {key}(s): {", ".join(duplicates)}'
            )
    if not instruments:
        raise DescriptionError(source, 'drum_kit', 'has no instruments')
    return DrumKit(instruments=tuple(instruments))


@dataclass(frozen=True)
class _KitReader:
    """Reads the <instrument> records of <drum_kit> against the URDF's links and movable
    joints; every error names the file (``source``) and the record."""

    source: str
    links: tuple[str, ...]
    movable_joints: tuple[str, ...]
    position_of: Callable[[str], np.ndarray]

    def attribute(self, node: ET.Element, key: str, where: str) -> str:
        value = node.get(key)
        if value is None:
            raise DescriptionError(self.source, where, f'attribute {key!r} is missing')
        return value

    def link_of(self, node: ET.Element, where: str) -> str:
        link = self.attribute(node, 'link', where)
        if link not in self.links:
            raise DescriptionError(self.source, where, f'link {link!r} is not in the URDF')
        return link

    def instrument(self, record: ET.Element) -> Instrument:
        name = record.get('name', '')
        item = f'drum_kit instrument {name!r}'
        try:
            instrument_id = int(self.attribute(record, 'id', item))
            radius_m = float(self.attribute(record, 'radius_m', item))
        except ValueError as error:
            raise DescriptionError(self.source, item, f'bad number ({error})') from None
        pedal = record.get('pedal', '')
        if pedal and pedal not in self.movable_joints:
            raise DescriptionError(self.source, item, f'pedal joint {pedal!r} is not a URDF joint')
        strikes = self.strikes(record, item)
        link = self.link_of(record, item)
        return Instrument(
            name=name,
            id=instrument_id,
            kind=self.attribute(record, 'kind', item),
            radius_m=radius_m,
            link=link,
            center_m=self.position_of(link),
            pedal_joint=pedal,
            strikes=strikes,
        )

    def strikes(self, record: ET.Element, item: str) -> dict[str, StrikePoint]:
        """The instrument's strike points by hand: none (bass drum) or one for each hand."""
        strikes = {}
        for strike in record.findall('strike'):
            hand = self.attribute(strike, 'hand', item)
            where = f'{item} strike {hand!r}'
            if hand not in HANDS or hand in strikes:
                raise DescriptionError(
                    self.source, where, f'hand must be one of {HANDS}, once each'
                )
            wrist = float(self.attribute(strike, 'wrist_angle_rad', where))
            if not math.isfinite(wrist):
                raise DescriptionError(self.source, where, 'wrist angle is not finite')
            link = self.link_of(strike, where)
            strikes[hand] = StrikePoint(
                hand=hand, link=link, position_m=self.position_of(link), wrist_angle_rad=wrist
            )
        if strikes and set(strikes) != set(HANDS):
            raise DescriptionError(self.source, item, 'needs a strike point for both hands')
        return strikes
