"""Size-capped, rotating text and CSV log files, ROS-free.

A log that grows past ``max_bytes`` is renamed ``<name>.1`` (an older ``<name>.1`` becomes
``<name>.2``, and so on up to ``keep`` old files; the oldest is deleted) and a fresh ``<name>``
is started with the same header, so every file reads on its own. Disk use of one log is at
most about ``(keep + 1) * max_bytes``, whatever the process writes and however long it runs.

Opening a log starts it afresh: an existing ``<name>`` and its old ``<name>.N`` files are
replaced, as a plain ``open(path, 'w')`` would replace the file.

Writers are thread-safe; each write is one ``write()`` call on the file and, by default, is
flushed at once, so a crash loses nothing that was written. Writes after ``close()`` are ignored.
"""

from __future__ import annotations

import csv
import io
import os
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

#: Default size at which a log is rotated, bytes.
DEFAULT_MAX_BYTES = 20 * 1024 * 1024
#: Default number of rotated files kept beside the current one.
DEFAULT_KEEP = 1


def rotated_path(path: Path, index: int) -> Path:
    """``<path>.<index>``: the ``index``-th older file of a rotating log (1 = the newest)."""
    return path.with_name(f'{path.name}.{index}')


class CappedTextLog:
    """A text file that is rotated when it would exceed ``max_bytes``.

    Args:
        path: The file; its folder is created.
        header: Written at the top of every file (e.g. a CSV header line with its newline).
        max_bytes: Size at which the file is rotated (a single write larger than this still
            goes out whole, into a file of its own).
        keep: Rotated files kept (``<name>.1`` ... ``<name>.<keep>``); 0 keeps none.
        flush: Flush after every write (off for a high-rate log that is flushed at close).

    Raises:
        ValueError: ``max_bytes`` not above the header's size, or ``keep`` negative.
        OSError: The file cannot be created.
    """

    def __init__(
        self,
        path: Path | str,
        header: str = '',
        max_bytes: int = DEFAULT_MAX_BYTES,
        keep: int = DEFAULT_KEEP,
        flush: bool = True,
    ) -> None:
        self.path = Path(path)
        self._header = header.encode('utf-8')
        if max_bytes <= len(self._header):
            raise ValueError(
                f'{self.path.name}: max_bytes {max_bytes} must exceed the '
                f'header ({len(self._header)} bytes)'
            )
        if keep < 0:
            raise ValueError(f'{self.path.name}: keep must be >= 0, got {keep}')
        self.max_bytes = max_bytes
        self.keep = keep
        self._flush = flush
        self._lock = threading.Lock()
        self.rotations = 0
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for index in range(1, keep + 1):  # the old files of an earlier run are not this log's
            rotated_path(self.path, index).unlink(missing_ok=True)
        self._file = self._open()

    def _open(self) -> io.BufferedWriter:
        file = self.path.open('wb')
        file.write(self._header)
        file.flush()
        self._size = len(self._header)
        return file

    def write(self, text: str) -> None:
        """Append ``text`` (rotating first if it would not fit)."""
        data = text.encode('utf-8', 'replace')
        with self._lock:
            if self._file.closed:
                return
            if self._size + len(data) > self.max_bytes and self._size > len(self._header):
                self._rotate()
            self._file.write(data)
            self._size += len(data)
            if self._flush:
                self._file.flush()

    def flush(self) -> None:
        """Push buffered writes to the file."""
        with self._lock:
            if not self._file.closed:
                self._file.flush()

    def _rotate(self) -> None:
        self._file.close()
        if self.keep == 0:
            self.path.unlink(missing_ok=True)
        else:
            rotated_path(self.path, self.keep).unlink(missing_ok=True)
            for index in range(self.keep - 1, 0, -1):
                older = rotated_path(self.path, index)
                if older.exists():
                    os.replace(older, rotated_path(self.path, index + 1))
            os.replace(self.path, rotated_path(self.path, 1))
        self.rotations += 1
        self._file = self._open()

    @property
    def closed(self) -> bool:
        return self._file.closed

    def close(self) -> None:
        """Flush and close (idempotent; later writes are ignored)."""
        with self._lock:
            self._file.close()

    def __enter__(self) -> CappedTextLog:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def csv_text(rows: Iterable[Sequence[object]]) -> str:
    """``rows`` formatted as CSV lines (``csv.writer`` rules, ``\\r\\n`` line ends)."""
    buffer = io.StringIO()
    csv.writer(buffer).writerows(rows)
    return buffer.getvalue()


class CappedCsvLog(CappedTextLog):
    """A `CappedTextLog` of CSV rows; every file starts with ``columns``.

    Args:
        path: The file; its folder is created.
        columns: The header row.
        max_bytes, keep, flush: As for `CappedTextLog`.
    """

    def __init__(
        self,
        path: Path | str,
        columns: Sequence[str],
        max_bytes: int = DEFAULT_MAX_BYTES,
        keep: int = DEFAULT_KEEP,
        flush: bool = True,
    ) -> None:
        self.columns = tuple(columns)
        super().__init__(path, csv_text([self.columns]), max_bytes, keep, flush)

    def writerow(self, row: Sequence[object]) -> None:
        """Append one row."""
        self.write(csv_text([row]))

    def writerows(self, rows: Iterable[Sequence[object]]) -> None:
        """Append rows in one write (a batch is never split over two files)."""
        text = csv_text(rows)
        if text:
            self.write(text)
