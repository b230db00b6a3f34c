"""Shared-memory exchange between the bus loop (writer) and the hardware node (reader).

One ``multiprocessing.shared_memory`` block:

* control words written by the node (its heartbeat counter: the loop latches a fault when it
  stops counting while the drives are active; ESTOP has a word of its own,
  ``phil_description.core.estop_word``, that any process of the graph can reach);
* the state snapshot, written by the loop under a **seqlock** (sequence odd while writing) plus a
  CRC-32 of the payload, so a reader never accepts a torn copy even on a weakly ordered CPU.
  Numbers live in one float64 vector with named slots (no allocation on the writer's side);
  rarely changing text (faults, missing motors, messages) is JSON, rewritten only on change;
* optionally a ring of per-tick lateness samples for benchmarks.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import struct
import time
import zlib
from collections.abc import Sequence
from multiprocessing import shared_memory

import numpy as np

SHARED_BLOCK_PREFIX = 'phil_bus_loop_'
JOINT_FIELDS = (
    'position_rad',
    'velocity_rad_s',
    'current_a',
    'torque_mnm',
    'temperature_c',
    'target_rad',
    'target_velocity_rad_s',
    'mode',
    'statusword',
    'error_code',
    'connected',
    'present',
    'last_feedback_s',
    'feedback_count',
)
SCALAR_FIELDS = (
    'time_s',
    'publish_count',
    'ticks',
    'lifecycle',
    'realtime',
    'estop',
    'holding',
    'tick_p50_s',
    'tick_p99_s',
    'tick_max_s',
    'tick_window',
    'work_p99_s',
    'work_max_s',
    'overruns',
    'missed_ticks',
    'loop_errors',
    'queued_chunks',
    'queue_end_s',
    'active_sequence',
    'chunks_accepted',
    'chunks_rejected',
    'chunks_superseded',
    'frames_rejected',
    'frames_unexpected',
    'frames_skipped',
    'sdo_aborts',
    'mode_switches',
    'dxl_missed_replies',
    'commands_handled',
    'resets_granted',
    'reset_granted_s',
    'trace_count',
    'estop_seen',
    'estop_seen_s',
    'text_version',
)
BUS_FIELDS = (
    'frames_sent',
    'frames_received',
    'bits_sent',
    'bits_received',
    'send_errors',
    'receive_errors',
    'echoes',
)
LIFECYCLE_CODES = (
    'unconfigured',
    'configuring',
    'inactive',
    'activating',
    'active',
    'deactivating',
    'finalized',
)

_HEADER_WORDS = 8  # seq, crc, text_len, ...
_CONTROL_WORDS = 8  # node_heartbeat, ...
TEXT_CAPACITY = 32 * 1024
_SEQ, _CRC, _TEXT_LEN = 0, 1, 2
NODE_HEARTBEAT = 0


class SnapshotLayout:
    """Named slots of the float64 state vector for ``joint_count`` joints and ``buses``."""

    def __init__(self, joint_count: int, buses: Sequence[str], trace_capacity: int = 0) -> None:
        """Compute offsets and sizes."""
        self.joint_count = joint_count
        self.buses = tuple(buses)
        self.trace_capacity = trace_capacity
        self.slots: dict[str, slice] = {}
        offset = 0
        for name in JOINT_FIELDS:
            self.slots[name] = slice(offset, offset + joint_count)
            offset += joint_count
        for name in SCALAR_FIELDS:
            self.slots[name] = slice(offset, offset + 1)
            offset += 1
        for bus in self.buses:
            for name in BUS_FIELDS:
                self.slots[f'{bus}.{name}'] = slice(offset, offset + 1)
                offset += 1
        self.value_count = offset
        self.control_offset = 0
        self.header_offset = _CONTROL_WORDS * 8
        self.values_offset = self.header_offset + _HEADER_WORDS * 8
        self.text_offset = self.values_offset + self.value_count * 8
        self.trace_offset = self.text_offset + TEXT_CAPACITY
        self.size = self.trace_offset + trace_capacity * 8

    def index(self, name: str) -> int:
        """Position of a scalar slot."""
        return self.slots[name].start


class StateExchange:
    """The shared block, seen from either side. Create in the node, attach in the loop."""

    def __init__(
        self, layout: SnapshotLayout, name: str | None = None, create: bool = True
    ) -> None:
        """Create (zeroed) or attach the shared block.

        Args:
            layout: Slot layout (both sides build it from the same configuration).
            name: Block name to attach to (ignored when creating: a unique ``phil_bus_loop_<pid>_``
                name is chosen, so ``/dev/shm`` tells whose block it is).
            create: Create a new block (node side) or attach an existing one (loop side).
        """
        self.layout = layout
        if create:
            unique = f'{SHARED_BLOCK_PREFIX}{os.getpid()}_{secrets.token_hex(4)}'
            self.shm = shared_memory.SharedMemory(unique, create=True, size=layout.size)
            self.shm.buf[: layout.size] = bytes(layout.size)
        else:
            self.shm = shared_memory.SharedMemory(name=name)
        buf = self.shm.buf
        # Plain Python ints through memoryviews: a numpy uint64 scalar update costs ~2.5 us.
        self.control = buf[layout.control_offset : layout.header_offset].cast('Q')
        self.header = buf[layout.header_offset : layout.values_offset].cast('Q')
        self.values = np.ndarray((layout.value_count,), np.float64, buf, layout.values_offset)
        self.trace = np.ndarray((layout.trace_capacity,), np.float64, buf, layout.trace_offset)
        self._payload = buf[layout.values_offset : layout.trace_offset]
        self._values_bytes = buf[layout.values_offset : layout.text_offset]
        self._values_struct = struct.Struct(f'={layout.value_count}d')
        self._text = buf[layout.text_offset : layout.trace_offset]
        self._owner = create
        self._text_len = 0

    @property
    def name(self) -> str:
        """Block name to pass to the other process."""
        return self.shm.name

    # -- writer (bus loop) ------------------------------------------------------------------

    def begin_write(self) -> None:
        """Mark the snapshot as being written (sequence odd)."""
        self.header[_SEQ] += 1

    def write_text(self, text: str) -> None:
        """Replace the JSON text part (call between begin/end)."""
        data = text.encode()
        if len(data) > TEXT_CAPACITY:
            data = json.dumps({'error': 'status text too long', 'size': len(data)}).encode()
        self._text[: len(data)] = data
        self._text_len = len(data)
        self.header[_TEXT_LEN] = len(data)

    def write_values(self, values: Sequence[float]) -> None:
        """Replace the whole number vector, slot order (call between begin/end): one pack
        of Python numbers costs a fraction of numpy's conversion of the same list."""
        self._values_struct.pack_into(self._values_bytes, 0, *values)

    def end_write(self) -> None:
        """Seal the snapshot: CRC of the payload, then sequence even."""
        crc = zlib.crc32(self._values_bytes)
        crc = zlib.crc32(self._text[: self._text_len], crc)
        self.header[_CRC] = crc
        self.header[_SEQ] += 1

    def node_heartbeats(self) -> int:
        """Heartbeats the node has counted so far."""
        return self.control[NODE_HEARTBEAT]

    # -- reader (node) ----------------------------------------------------------------------

    def beat(self) -> None:
        """Count one heartbeat of the node (it is alive and its command thread runs)."""
        self.control[NODE_HEARTBEAT] += 1

    def read(self, attempts: int = 200) -> tuple[np.ndarray, dict] | None:
        """Copy a consistent snapshot: (values, text dict), or None if none was published.

        Retries while the writer is mid-update; each attempt copies ~35 kB at most.
        """
        layout = self.layout
        for attempt in range(attempts):
            first = self.header[_SEQ]
            if first == 0:
                return None
            if first % 2:
                time.sleep(0) if attempt < 50 else time.sleep(0.0001)
                continue
            text_len = min(self.header[_TEXT_LEN], TEXT_CAPACITY)
            values = bytes(self._values_bytes)
            text = bytes(self._text[:text_len])
            crc = self.header[_CRC]
            if self.header[_SEQ] != first:
                continue
            if zlib.crc32(text, zlib.crc32(values)) != crc:
                continue
            array = np.frombuffer(values, dtype=np.float64, count=layout.value_count)
            return array, (json.loads(text) if text else {})
        return None

    def close(self) -> None:
        """Detach; the creating side also removes the block."""
        for view in ('values', 'trace'):
            setattr(self, view, None)
        for memory in (self.control, self.header, self._payload, self._values_bytes, self._text):
            memory.release()
        self.shm.close()
        if self._owner:
            with contextlib.suppress(FileNotFoundError):
                self.shm.unlink()
