"""Split the Gen-1 byte stream into messages: one text command per line, or a JSON block.

Lines end with ``\\n`` (a ``\\r`` before it is dropped) and are bounded as the Gen-2 port's
(`LineFramer`). A line that starts with ``{`` opens a JSON block, which takes the following lines
until its braces balance (braces inside JSON strings do not count), as the Gen-1 controller
accumulated them; a block is bounded to ``MAX_BLOCK_BYTES`` (a longer one is one error, and
its lines are skipped up to its closing brace). A block carries
``{"commands": ["r", "look:0,90", ...]}`` or ``{"command": "r"}``; each command is a text
command as on its own line.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from phil_control.core.protocol.framing import FramedLine, LineFramer

MAX_LINE_BYTES = 4096
#: Largest JSON block, bytes: far more than a brain's command list.
MAX_BLOCK_BYTES = 65536


@dataclass(frozen=True)
class Gen1Message:
    """One message: its command texts in order, or why it is not one.

    Attributes:
        text: The message as received (a line, or a block's lines joined by newlines).
        commands: The text commands it carries ([] when `error`).
        error: What is wrong with it, '' when nothing.
    """

    text: str
    commands: tuple[str, ...] = ()
    error: str = ''


def _brace_balance(text: str, depth: int, in_string: bool, escaped: bool):
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == '\\':
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == '{':
            depth += 1
        elif char == '}':
            depth -= 1
    return depth, in_string, escaped


def block_commands(text: str) -> Gen1Message:
    """The commands of a complete JSON block (``commands`` list or one ``command``)."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        return Gen1Message(
            text,
            error=f'JSON block is not valid JSON: {error.msg} '
            f'(line {error.lineno}, column {error.colno})',
        )
    if isinstance(document, dict) and 'commands' in document:
        commands = document['commands']
        if isinstance(commands, list) and all(isinstance(item, str) for item in commands):
            return Gen1Message(text, tuple(commands))
        return Gen1Message(text, error='JSON block: "commands" must be a list of strings')
    if isinstance(document, dict) and isinstance(document.get('command'), str):
        return Gen1Message(text, (document['command'],))
    return Gen1Message(
        text, error='JSON block carries neither "commands" (a list) nor "command" (a string)'
    )


class Gen1Splitter:
    """Incremental splitter for one connection (not thread-safe)."""

    def __init__(self) -> None:
        self._lines = LineFramer(MAX_LINE_BYTES)
        self._block: list[str] = []
        self._block_bytes = 0
        self._scan = (0, False, False)  # brace depth, inside a string, after a backslash
        self._overflowed = False  # the block passed the bound: skipped to its closing brace

    @property
    def pending_bytes(self) -> int:
        """Bytes held of an unfinished line or block."""
        return self._lines.pending_bytes + self._block_bytes

    def feed(self, data: bytes) -> list[Gen1Message]:
        """Add received bytes; the messages they complete, in order."""
        messages = []
        for event in self._lines.feed(data):
            if not isinstance(event, FramedLine):
                messages.append(Gen1Message('', error=f'line longer than {MAX_LINE_BYTES} bytes'))
                continue
            message = self._line(event.data.decode('utf-8', errors='replace'))
            if message is not None:
                messages.append(message)
        return messages

    def _line(self, line: str) -> Gen1Message | None:
        if not self._block and not self._overflowed:
            line = line.strip()
            if not line:
                return None
            if not line.startswith('{'):
                return Gen1Message(line, (line,))
        self._scan = _brace_balance(line, *self._scan)
        ended = self._scan[0] <= 0
        if self._overflowed:
            if ended:
                self._reset()
            return None
        self._block.append(line)
        self._block_bytes += len(line.encode()) + 1
        if self._block_bytes > MAX_BLOCK_BYTES:
            scan = self._scan
            self._reset()
            self._overflowed, self._scan = not ended, scan
            return Gen1Message('', error=f'JSON block longer than {MAX_BLOCK_BYTES} bytes')
        if not ended:
            return None
        text = '\n'.join(self._block)
        self._reset()
        return block_commands(text)

    def _reset(self) -> None:
        self._block, self._block_bytes, self._scan = [], 0, (0, False, False)
        self._overflowed = False
