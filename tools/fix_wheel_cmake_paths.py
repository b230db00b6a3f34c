"""Point the ROS wheels' CMake export files at this machine's Python and numpy headers.

The PyPI ROS wheels are built in a manylinux container; their exported CMake files name that
container's include directories, and CMake refuses a target that "includes non-existent path".
"""

from __future__ import annotations

import re
import sys
import sysconfig
from pathlib import Path

import numpy

# The builder's CPython (cp311 for Kilted's wheels, cp312 for Jazzy's on 3.12, ...).
BUILDER_PYTHON = r'/opt/python/cp3\d+-cp3\d+'
BUILDER_NUMPY_INCLUDE = re.compile(
    BUILDER_PYTHON + r'/lib/python3\.\d+/site-packages/numpy/_core/include'
)
BUILDER_PYTHON_INCLUDE = re.compile(BUILDER_PYTHON + r'/include/python3\.\d+')


def fix_prefix(prefix: Path) -> int:
    """Rewrite the builder paths under ``prefix/share/*/cmake``; return how many files changed."""
    replacements = {
        BUILDER_NUMPY_INCLUDE: numpy.get_include(),
        BUILDER_PYTHON_INCLUDE: sysconfig.get_paths()['include'],
    }
    changed = 0
    for cmake_file in sorted(prefix.glob('share/*/cmake/*.cmake')):
        text = cmake_file.read_text()
        fixed = text
        for old, new in replacements.items():
            fixed = old.sub(lambda _match, new=new: new, fixed)
        if fixed != text:
            cmake_file.write_text(fixed)
            changed += 1
    return changed


if __name__ == '__main__':
    venv = Path(sys.argv[1] if len(sys.argv) > 1 else sys.prefix)
    count = fix_prefix(venv)
    print(f'[setup] fixed builder include paths in {count} CMake file(s) under {venv}')
