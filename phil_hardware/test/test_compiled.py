"""The compiled bus loop tick: used where it was built and fresh, never after its sources change.

The build itself is tested by the rest of the suite, which imports it wherever ``make setup``
built it (the Kilted and Jazzy venvs); ``make test-cores`` runs the same tests on the sources.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from phil_hardware import compiled

PURE = compiled.PURE_PYTHON_VARIABLE


def test_each_compiled_module_comes_from_the_build_where_there_is_one():
    suffix = compiled.extension_suffix()
    built = compiled.built_modules()
    pure = os.environ.get(PURE, '') not in ('', '0')
    build_used = bool(built) and not pure and not compiled.stale_modules()
    for module in compiled.COMPILED_MODULES:
        path = importlib.import_module(module).__file__
        if build_used and module in built:
            assert path.endswith(suffix), module
        else:
            assert path.endswith('.py'), module
    assert compiled.compiled_in_use() == build_used


@pytest.fixture
def package_copy(tmp_path: Path) -> Path:
    """A ``phil_hardware`` package of its own: the real ``__init__`` and ``compiled``, a source
    per compiled module that says it is one, and in place of each build an extension module
    that cannot load (importing it fails), with a record of the sources' hashes."""
    package = tmp_path / 'phil_hardware'
    package.mkdir()
    for name in ('__init__.py', 'compiled.py'):
        shutil.copy(compiled.PACKAGE_DIR / name, package / name)
    suffix = compiled.extension_suffix()
    hashes = {}
    for module in compiled.COMPILED_MODULES:
        source = tmp_path.joinpath(*module.split('.')).with_suffix('.py')
        source.parent.mkdir(parents=True, exist_ok=True)
        for parent in source.relative_to(tmp_path).parents:
            if parent != Path('.'):
                (tmp_path / parent / '__init__.py').touch()
        source.write_text("FORM = 'source'\n")
        source.with_suffix(suffix).write_bytes(b'not machine code')
        hashes[module] = hashlib.sha256(source.read_bytes()).hexdigest()
    (package / f'compiled-{suffix.strip(".").removesuffix(".so")}.json').write_text(
        json.dumps(hashes)
    )
    return tmp_path


def import_form(root: Path, module: str, **env: str) -> subprocess.CompletedProcess:
    code = f'import {module} as m; print(m.FORM)'
    environment = {**os.environ, 'PYTHONPATH': str(root), PURE: '', **env}
    return subprocess.run(
        [sys.executable, '-c', code],
        cwd=root,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_fresh_build_is_what_gets_imported(package_copy):
    result = import_form(package_copy, 'phil_hardware.core.safety')
    # The stand-in extension module was loaded (and could not be).
    assert result.returncode != 0
    assert 'safety' in result.stderr


def test_a_source_changed_since_the_build_is_imported_instead_and_named(package_copy):
    source = package_copy / 'phil_hardware' / 'core' / 'codecs' / 'frame.py'
    source.write_text("FORM = 'source'  # edited\n")
    result = import_form(package_copy, 'phil_hardware.core.safety')
    assert result.returncode == 0, result.stderr
    # Every compiled module, not just the edited one: they call each other natively.
    assert result.stdout.strip() == 'source'
    assert 'the build is older than the sources of frame' in result.stderr
    assert 'make setup' in result.stderr


def test_a_missing_record_counts_as_stale(package_copy):
    next((package_copy / 'phil_hardware').glob('compiled-*.json')).unlink()
    result = import_form(package_copy, 'phil_hardware.core.transport.can_bus')
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == 'source'


def test_pure_python_is_imported_on_request(package_copy):
    result = import_form(package_copy, 'phil_hardware.core.chunk_queue', **{PURE: '1'})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == 'source'
    assert result.stderr == ''
