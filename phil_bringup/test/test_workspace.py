"""The workspace entry points: README commands, Makefile targets, CI script, colcon.meta."""

import json
import os
import re
import subprocess
import sys

import pytest
from workspace import ROOT


def readme_commands():
    return re.findall(r'^\s*(make [\w-]+)\s*$', (ROOT / 'README.md').read_text(), re.MULTILINE)


def test_readme_names_the_run_and_test_commands():
    commands = readme_commands()
    assert 'make run' in commands and 'make test-all' in commands


def test_ci_runs_exactly_the_readme_test_command():
    lines = [
        line.strip()
        for line in (ROOT / '.ci' / 'run').read_text().splitlines()
        if line.strip() and not line.startswith('#')
    ]
    assert lines[-1] == 'make test-all'
    assert 'make test-all' in readme_commands()


def test_the_test_command_runs_the_three_suites():
    suites = (ROOT / 'tools' / 'test_all.sh').read_text()
    for suite in ('PHIL_ROS=kilted tools/test.sh', 'PHIL_ROS=jazzy tools/test.sh'):
        assert suite in suites
    assert 'tools/test_cores.sh 3.10' in suites


def test_makefile_has_the_entry_points():
    targets = set(re.findall(r'^([a-z-]+):', (ROOT / 'Makefile').read_text(), re.MULTILINE))
    assert {'setup', 'run', 'test', 'test-all', 'test-cores', 'bench', 'lint'} <= targets


def test_colcon_meta_is_valid_and_names_real_packages():
    meta = json.loads((ROOT / 'colcon.meta').read_text())
    packages = {path.parent.name for path in ROOT.glob('*/package.xml')}
    assert set(meta['names']) <= packages
    for settings in meta['names'].values():
        # colcon reads verb options by their option name (dashes), not the Python dest.
        assert all('_' not in key for key in settings), settings


def test_colcon_meta_pytest_arguments_are_in_effect(request):
    """Under `colcon test` this package's pytest runs with the arguments from colcon.meta."""
    if '--junit-prefix=phil_bringup' not in os.environ.get('PYTEST_ADDOPTS', ''):
        pytest.skip('not running under colcon test')
    expected = json.loads((ROOT / 'colcon.meta').read_text())['names']['phil_bringup']
    timeout = next(
        arg.split('=', 1)[1] for arg in expected['pytest-args'] if arg.startswith('--timeout=')
    )
    assert float(request.config.getoption('timeout')) == float(timeout)


def write_report(path, cases):
    body = ''.join(
        f'<testcase classname="c" name="t{i}" time="0.1">{inner}</testcase>'
        for i, inner in enumerate(cases)
    )
    path.write_text(f'<testsuites><testsuite name="s">{body}</testsuite></testsuites>')


@pytest.mark.parametrize(
    ('cases', 'status', 'closing'),
    [
        (['', '<skipped/>'], 0, '1 passed, 0 failed, 1 skipped'),
        (['', '<failure message="boom"/>'], 1, '1 passed, 1 failed, 0 skipped'),
        (['<error message="crash"/>'], 1, '0 passed, 1 failed, 0 skipped'),
        ([], 1, '0 passed, 0 failed, 0 skipped'),
    ],
)
def test_summary_fails_on_any_failure_and_on_no_tests(tmp_path, cases, status, closing):
    (tmp_path / 'pkg').mkdir()
    write_report(tmp_path / 'pkg' / 'pytest.xml', cases)
    result = subprocess.run(
        [sys.executable, str(ROOT / 'tools' / 'test_summary.py'), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == status, result.stdout
    assert result.stdout.strip().splitlines()[-1] == closing
    if status and cases:
        assert 'pkg: c.t' in result.stdout


@pytest.mark.parametrize('command', [['check', '--no-cache'], ['format', '--check']])
def test_lint_and_format_pass_on_the_whole_workspace(command):
    ruff = [sys.executable, '-m', 'ruff']
    if subprocess.run([*ruff, '--version'], capture_output=True).returncode != 0:
        pytest.skip('ruff is not installed')
    result = subprocess.run(
        [*ruff, *command, str(ROOT)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stdout + result.stderr
