"""Compile the bus loop's per-tick modules with mypyc for this interpreter (``make setup``).

Usage: ``<venv>/bin/python tools/build_compiled.py [--force | --clean]``. Does nothing when the
build for this interpreter is up to date (phil_hardware/phil_hardware/compiled.py says which
modules and how staleness is found). ``--clean`` removes this interpreter's build (the modules
then run as Python). A failed build fails ``make setup``: the tests must not quietly run the
sources where the robot would run the build.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def load_compiled_module():
    # By path: importing the package would already choose between build and sources.
    spec = importlib.util.spec_from_file_location(
        'phil_compiled_build', ROOT / 'phil_hardware' / 'phil_hardware' / 'compiled.py'
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def clean(compiled) -> None:
    suffix = compiled.extension_suffix()
    for module in (*compiled.COMPILED_MODULES, compiled.GROUP_NAME + '__mypyc'):
        compiled.source_path(module).with_suffix(suffix).unlink(missing_ok=True)
    compiled.stamp_path().unlink(missing_ok=True)


def build(compiled) -> None:
    from mypyc.build import mypycify
    from setuptools import setup

    sources = [
        str(compiled.source_path(m).relative_to(compiled.SOURCE_ROOT))
        for m in compiled.COMPILED_MODULES
    ]
    hashes = compiled.source_hashes()
    with tempfile.TemporaryDirectory(prefix='phil-mypyc-') as tmp:
        os.chdir(compiled.SOURCE_ROOT)
        # The other cores' types (phil_description) are read, not compiled.
        os.environ['MYPYPATH'] = str(ROOT / 'phil_description')
        extensions = mypycify(
            ['--ignore-missing-imports', '--follow-imports=silent', *sources],
            opt_level='3',
            group_name=compiled.GROUP_NAME,
            target_dir=str(Path(tmp) / 'c'),
        )
        setup(
            name='phil_hardware_compiled',
            ext_modules=extensions,
            script_args=[
                *('-q', 'build_ext', '--inplace'),
                *('--build-temp', str(Path(tmp) / 'o'), '--build-lib', str(Path(tmp) / 'lib')),
            ],
        )
    compiled.stamp_path().write_text(json.dumps(hashes, indent=1, sort_keys=True) + '\n')


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--force', action='store_true', help='build even when up to date')
    parser.add_argument('--clean', action='store_true', help="remove this interpreter's build")
    args = parser.parse_args()
    compiled = load_compiled_module()
    if args.clean:
        clean(compiled)
        return 0
    built = compiled.built_modules()
    if (
        not args.force
        and len(built) == len(compiled.COMPILED_MODULES)
        and not compiled.stale_modules()
    ):
        return 0
    print(f'[setup] compiling the bus loop tick (mypyc, {sys.version.split()[0]})', flush=True)
    clean(compiled)
    build(compiled)
    return 0


if __name__ == '__main__':
    sys.exit(main())
