"""``commands.csv``: every line the TCP server received and what became of it, size-capped.

Columns ``t, client, opcode, result, line, reason`` (upstream's CMD rows): t in the server's
clock, the client's connection number, the opcode ('-' if none), valid|invalid, the line as
received and the rejection reason or acceptance note. The file is rotated to ``commands.csv.1``
past ``max_bytes`` (`phil_description.core.capped_log`); the line and reason of a rejected
entry are clipped to `MAX_REJECTED_FIELD_CHARS`, so junk input (4 KB lines of garbage) costs a
few hundred bytes a line; accepted lines are logged whole.
"""

from __future__ import annotations

from pathlib import Path

from phil_control.tcp.handler import CommandLogEntry
from phil_description.core.capped_log import DEFAULT_KEEP, DEFAULT_MAX_BYTES, CappedCsvLog

COMMAND_LOG_COLUMNS = ('t', 'client', 'opcode', 'result', 'line', 'reason')
MAX_REJECTED_FIELD_CHARS = 200


def clipped(text: str, limit: int = MAX_REJECTED_FIELD_CHARS) -> str:
    """``text`` cut to ``limit`` characters, saying how many more there were."""
    if len(text) <= limit:
        return text
    return f'{text[:limit]}... ({len(text) - limit} more characters)'


class CommandCsvLog:
    """A `TcpServer` command log writing ``commands.csv`` (thread-safe, flushed per row).

    Args:
        path: The file; its folder is created, an existing file replaced.
        max_bytes: Size at which it is rotated to ``<name>.1``.
        keep: Rotated files kept.
    """

    def __init__(
        self, path: Path, max_bytes: int = DEFAULT_MAX_BYTES, keep: int = DEFAULT_KEEP
    ) -> None:
        self._log = CappedCsvLog(path, COMMAND_LOG_COLUMNS, max_bytes, keep)
        self.path = self._log.path

    def __call__(self, entry: CommandLogEntry) -> None:
        line, reason = entry.line, entry.reason
        if not entry.accepted:
            line, reason = clipped(line), clipped(reason)
        self._log.writerow(
            [
                f'{entry.time_s:.4f}',
                entry.client_id,
                entry.opcode,
                'valid' if entry.accepted else 'invalid',
                line,
                reason,
            ]
        )

    def close(self) -> None:
        self._log.close()
