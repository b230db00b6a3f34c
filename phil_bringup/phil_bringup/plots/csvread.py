"""Reading the run logs' text: a header-checked CSV reader that names file and line for every
problem and tolerates a last line a crash cut short (see :mod:`phil_bringup.plots.runlog`)."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np


class RunLogError(ValueError):
    """A log file that cannot be read; ``str()`` is ``<path>:<line>: <reason>``."""

    def __init__(self, path: Path, line: int | None, reason: str) -> None:
        self.path, self.line, self.reason = Path(path), line, reason
        where = f'{self.path}:{line}' if line is not None else str(self.path)
        super().__init__(f'{where}: {reason}')


# ---------------------------------------------------------------------------------- records


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding='utf-8')
    except UnicodeDecodeError as error:
        raise RunLogError(
            path, None, f'not UTF-8 text ({error.reason} at byte {error.start})'
        ) from None


def read_csv(
    path: Path,
    numeric: Sequence[str],
    text: Sequence[str] = (),
    blank_as_nan: bool = False,
    optional: Sequence[str] = (),
    warnings: list[str] | None = None,
) -> dict[str, np.ndarray | tuple[str, ...]]:
    """Read a CSV file with a header into columns.

    Args:
        path: The file.
        numeric: Columns parsed as floats ('nan' allowed).
        text: Columns kept as strings.
        blank_as_nan: An empty numeric field is NaN (else an error).
        optional: Columns of ``numeric`` / ``text`` that may be absent from the header
            (they come back empty).
        warnings: Gets a message when a cut-off last line is dropped.

    Returns:
        Column name -> float array or tuple of strings, and ``_line``: the line of every row.

    Raises:
        RunLogError: Missing columns, a row with the wrong number of fields, a value that is
            not a number; naming the file and the line.
    """
    content = read_text(path)
    header, rows, lines = _split_rows(path, content)
    if header is None:
        return _no_rows(numeric, text)
    absent = [name for name in (*numeric, *text) if name not in header and name not in optional]
    if absent:
        raise RunLogError(
            path, 1, f'header lacks column(s) {", ".join(absent)} (header: {",".join(header)})'
        )
    rules = _RowRules(
        header, [(name, header.index(name)) for name in numeric if name in header], blank_as_nan
    )
    if rows and not content.endswith(('\n', '\r')):
        reason = rules.problem(rows[-1])
        if reason is not None:  # a crash cut the last line short
            if warnings is not None:
                warnings.append(f'{path}:{lines[-1]}: last line cut off ({reason}); ignored')
            rows.pop()
            lines.pop()
    if any(len(row) != len(header) for row in rows):
        rules.raise_first_problem(path, rows, lines)
    columns = _numeric_columns(path, rows, lines, rules)
    for name in numeric:
        if name not in header:
            columns[name] = np.full(len(rows), math.nan)
    for name in text:
        if name not in header:
            columns[name] = ('',) * len(rows)
            continue
        position = header.index(name)
        columns[name] = tuple(row[position] for row in rows)
    columns['_line'] = np.array(lines, dtype=int)
    return columns


def _split_rows(path: Path, content: str) -> tuple[list[str] | None, list[list[str]], list[int]]:
    """The header (None: an empty file), the data rows and the line of each; blank lines are
    skipped."""
    reader = csv.reader(io.StringIO(content, newline=''))
    rows: list[list[str]] = []
    lines: list[int] = []
    header: list[str] | None = None
    try:
        for row in reader:
            if header is None:
                header = [name.strip() for name in row]
                continue
            if not row:
                continue  # blank line
            rows.append(row)
            lines.append(reader.line_num)
    except csv.Error as error:
        raise RunLogError(path, reader.line_num, f'not CSV: {error}') from None
    return header, rows, lines


def _no_rows(numeric: Sequence[str], text: Sequence[str]) -> dict[str, np.ndarray | tuple]:
    """The columns of a file without even a header: every one empty."""
    columns: dict[str, np.ndarray | tuple[str, ...]] = {}
    for name in numeric:
        columns[name] = np.empty(0)
    for name in text:
        columns[name] = ()
    columns['_line'] = np.empty(0, dtype=int)
    return columns


@dataclass(frozen=True)
class _RowRules:
    """What a data row must hold: one field per header column, a number in every numeric one
    (``positions``: name and index of the numeric columns the header has)."""

    header: list[str]
    positions: list[tuple[str, int]]
    blank_as_nan: bool

    def problem(self, row: list[str]) -> str | None:
        """Why ``row`` cannot be read, or None."""
        width = len(self.header)
        if len(row) != width:
            return f'expected {width} fields ({",".join(self.header)}), got {len(row)}'
        for name, position in self.positions:
            value = row[position].strip()
            if self.blank_as_nan and not value:
                continue
            try:
                float(value)
            except ValueError:
                return f'column {name}: {value!r} is not a number'
        return None

    def raise_first_problem(self, path: Path, rows: list[list[str]], lines: list[int]) -> None:
        """Raise :class:`RunLogError` at the first row that cannot be read (none: return)."""
        for row, line in zip(rows, lines, strict=True):
            reason = self.problem(row)
            if reason is not None:
                raise RunLogError(path, line, reason)


def _numeric_columns(
    path: Path, rows: list[list[str]], lines: list[int], rules: _RowRules
) -> dict[str, np.ndarray | tuple[str, ...]]:
    """The float arrays of the numeric columns the header has, in one conversion each."""
    columns: dict[str, np.ndarray | tuple[str, ...]] = {}
    for name, position in rules.positions:
        values = [row[position].strip() for row in rows]
        if rules.blank_as_nan:
            values = [value or 'nan' for value in values]
        try:
            array = np.array(values, dtype=float).reshape(len(rows))
        except ValueError:
            # Raises naming the line; else numpy was pickier than float().
            rules.raise_first_problem(path, rows, lines)
            array = np.array([float(value) for value in values])
        columns[name] = array
    return columns


def csv_header(path: Path) -> list[str]:
    first = read_text(path).partition('\n')[0]
    return [name.strip() for name in next(csv.reader([first]), [])]
