"""Read a YAML file with errors that name the file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from phil_description.core.errors import DescriptionError


def load_yaml_mapping(path: Path | str, top_key: str) -> dict[str, Any]:
    """Load ``path`` and return the mapping under ``top_key``.

    Raises:
        DescriptionError: unreadable file, YAML syntax error (with line and column), or the
            top-level key missing or not a mapping.
    """
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as error:
        raise DescriptionError(str(path), '', f'cannot read file ({error.strerror})') from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, 'problem_mark', None)
        where = f'line {mark.line + 1}, column {mark.column + 1}' if mark else 'YAML'
        problem = getattr(error, 'problem', None) or str(error)
        raise DescriptionError(str(path), where, f'YAML syntax error: {problem}') from None
    if not isinstance(data, dict) or not isinstance(data.get(top_key), dict):
        raise DescriptionError(str(path), top_key, f'expected a mapping under {top_key!r}')
    return data[top_key]
