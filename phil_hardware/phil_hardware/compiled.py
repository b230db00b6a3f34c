"""The bus loop's per-tick path, compiled by mypyc where ``make setup`` built it.

The modules in :data:`COMPILED_MODULES` are plain, typed Python. ``tools/build_compiled.py``
(run by ``make setup`` for each venv) compiles them in place with mypyc: one extension module
per source file, next to it, for that interpreter only (``*.cpython-311-*.so``), plus the shared
runtime ``phil_hardware/_tick__mypyc``. An interpreter without a build (CPython 3.10 in
``make test-cores``) imports the sources, so the tests run both forms.

A build records each source's SHA-256 in ``compiled-<interpreter tag>.json``. When a source has
changed since (edited, not yet rebuilt), or when ``PHIL_PURE_PYTHON=1``, :func:`prefer_sources`
makes the interpreter import every compiled module from its source instead: never the machine
code of an older source. This module imports nothing of the package (the build loads it by
path).
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
#: The package's root directory (the one holding ``phil_hardware/``), where mypyc runs.
SOURCE_ROOT = PACKAGE_DIR.parent
#: Dotted module names compiled together (they call each other natively).
COMPILED_MODULES = (
    'phil_hardware.core.bus_controller.base',
    'phil_hardware.core.bus_controller.controller',
    'phil_hardware.core.bus_controller.dynamixel',
    'phil_hardware.core.bus_controller.epos4',
    'phil_hardware.core.bus_controller.epos4_family',
    'phil_hardware.core.bus_controller.feedback',
    'phil_hardware.core.bus_controller.sequences',
    'phil_hardware.core.bus_controller.state',
    'phil_hardware.core.bus_controller.tmotor',
    'phil_hardware.core.chunk_queue',
    'phil_hardware.core.codecs.dynamixel_packet',
    'phil_hardware.core.codecs.epos4_cyclic',
    'phil_hardware.core.codecs.frame',
    'phil_hardware.core.codecs.tmotor',
    'phil_hardware.core.safety',
    'phil_hardware.core.transport.can_bus',
    'phil_hardware.core.transport.udp_fast_path',
)
#: mypyc's shared runtime of the group (``<group>__mypyc``).
GROUP_NAME = 'phil_hardware._tick'
PURE_PYTHON_VARIABLE = 'PHIL_PURE_PYTHON'


def source_path(module: str) -> Path:
    return SOURCE_ROOT.joinpath(*module.split('.')).with_suffix('.py')


def extension_suffix() -> str:
    """This interpreter's extension-module suffix, e.g. ``.cpython-311-x86_64-linux-gnu.so``."""
    return importlib.machinery.EXTENSION_SUFFIXES[0]


def stamp_path(suffix: str | None = None) -> Path:
    """Where a build for the interpreter with ``suffix`` records its sources' hashes."""
    tag = (suffix or extension_suffix()).strip('.').removesuffix('.so')
    return PACKAGE_DIR / f'compiled-{tag}.json'


def source_hashes() -> dict[str, str]:
    """SHA-256 of each compiled module's source, by module name."""
    return {
        module: hashlib.sha256(source_path(module).read_bytes()).hexdigest()
        for module in COMPILED_MODULES
    }


def built_modules(suffix: str | None = None) -> list[str]:
    """The modules with an extension module for the interpreter with ``suffix``."""
    suffix = suffix or extension_suffix()
    return [m for m in COMPILED_MODULES if source_path(m).with_suffix(suffix).exists()]


def stale_modules(suffix: str | None = None) -> list[str]:
    """Built modules whose source differs from the one their build recorded (all of them
    when the record is missing or unreadable)."""
    built = built_modules(suffix)
    if not built:
        return []
    try:
        recorded = json.loads(stamp_path(suffix).read_text())
    except (OSError, ValueError):
        return built
    current = source_hashes()
    return [m for m in built if recorded.get(m) != current[m]]


class _SourceFirst(importlib.abc.MetaPathFinder):
    """Finds the compiled modules' sources, ahead of the extension modules beside them."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in COMPILED_MODULES:
            return None
        return importlib.util.spec_from_file_location(fullname, source_path(fullname))


def prefer_sources() -> str:
    """Import the compiled modules from their sources when asked to or when a build is stale.

    Returns:
        Why the sources are used ('' when the build, if any, is used).
    """
    if os.environ.get(PURE_PYTHON_VARIABLE, '') not in ('', '0'):
        why = f'{PURE_PYTHON_VARIABLE} is set'
    else:
        stale = stale_modules()
        if not stale:
            return ''
        names = ', '.join(m.rsplit('.', 1)[1] for m in stale)
        why = f'the build is older than the sources of {names}; `make setup` rebuilds it'
        sys.stderr.write(f'phil_hardware: the compiled modules run as Python: {why}\n')
    if not any(isinstance(finder, _SourceFirst) for finder in sys.meta_path):
        sys.meta_path.insert(0, _SourceFirst())
    return why


def compiled_in_use() -> bool:
    """Whether the compiled modules are the ones this process imports."""
    return bool(built_modules()) and not any(
        isinstance(finder, _SourceFirst) for finder in sys.meta_path
    )
