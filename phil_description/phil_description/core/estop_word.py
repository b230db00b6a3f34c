"""The ESTOP word: an emergency stop that reaches the bus loop without any node in between.

An 8-byte counter in a file of ``/dev/shm`` (mode 0600) named after the ROS domain and the
hardware node. The hardware node creates it; its real-time bus loop maps it and compares it with
the count it last saw on every tick (and while a lifecycle sequence waits), so a change latches
ESTOP within one tick. Anyone of the same user on the machine may add one (the TCP bridge on an
``ESTOP`` line, the behavior planner on ``/phil/estop``, the hardware node on
``/hardware/estop``): stopping is always allowed, and it works while every node between the
brain and the bus loop is dead, stopped or busy.

Several writers can add at the same moment and one increment may be lost; the count still
changes, which is all the loop looks at.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import re
import struct
from pathlib import Path

ESTOP_WORD_DIR = Path('/dev/shm')
_WORD = struct.Struct('<Q')
_UNSAFE = re.compile(r'[^A-Za-z0-9_]+')


def estop_word_name(domain_id: int, hardware_node: str, graph_tag: str = '') -> str:
    """The word's file name for a hardware node (fully qualified name) in a ROS domain, of
    the graph ``graph_tag`` names (``GraphKey.tag``): two graphs on one machine never share a
    word, even in one domain (one graph's hardware node would remove the other's)."""
    node = _UNSAFE.sub('_', hardware_node.strip('/')) or 'hardware'
    graph = f'_g{_UNSAFE.sub("_", graph_tag)}' if graph_tag else ''
    return f'phil_estop_d{int(domain_id)}_{node}{graph}'


class EstopWord:
    """A mapped ESTOP word. Use :meth:`create` (hardware node) or :meth:`attach` (readers and
    writers); :meth:`close` when done."""

    def __init__(self, path: Path, descriptor: int, owner: bool) -> None:
        self.path = path
        self._map = mmap.mmap(descriptor, _WORD.size)
        os.close(descriptor)
        self._owner = owner

    @classmethod
    def create(cls, name: str, directory: Path = ESTOP_WORD_DIR) -> EstopWord:
        """Create the word, or take over one a crashed process left behind (its count stays,
        readers compare with the count they saw first)."""
        path = directory / name
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        if os.fstat(descriptor).st_size < _WORD.size:
            os.ftruncate(descriptor, _WORD.size)
        return cls(path, descriptor, owner=True)

    @classmethod
    def attach(cls, name: str, directory: Path = ESTOP_WORD_DIR) -> EstopWord:
        """Map an existing word.

        Raises:
            FileNotFoundError: No hardware node made it (not running, or another domain).
        """
        path = directory / name
        descriptor = os.open(path, os.O_RDWR)
        if os.fstat(descriptor).st_size < _WORD.size:
            os.close(descriptor)
            raise FileNotFoundError(f'{path} is not an ESTOP word')
        return cls(path, descriptor, owner=False)

    def count(self) -> int:
        """The current count."""
        return _WORD.unpack_from(self._map)[0]

    def trigger(self) -> None:
        """Request an emergency stop."""
        _WORD.pack_into(self._map, 0, (self.count() + 1) & 0xFFFF_FFFF_FFFF_FFFF)

    def close(self) -> None:
        """Unmap; the creator also removes the file (idempotent)."""
        if self._map.closed:
            return
        self._map.close()
        if self._owner:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()

    def __enter__(self) -> EstopWord:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def trigger_estop(name: str, directory: Path = ESTOP_WORD_DIR) -> str:
    """Add one to the named word; '' when done, else why not (no such word)."""
    try:
        with EstopWord.attach(name, directory) as word:
            word.trigger()
    except OSError as error:
        return f'no ESTOP word {name} ({error.strerror or error}); is the hardware node running?'
    return ''
