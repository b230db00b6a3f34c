"""The workspace's set-up tools: which ROS 2 and which trees (tools/workspace.sh), and the
rewrite of the ROS wheels' CMake files (tools/fix_wheel_cmake_paths.py)."""

from __future__ import annotations

import importlib.util
import os
import subprocess

import pytest
from workspace import ROOT

CHOSEN = ('ROS_DISTRO', 'PHIL_ROS')


def _select(environ: dict[str, str]) -> subprocess.CompletedProcess:
    """Source tools/workspace.sh and print what phil_select_ros chose."""
    script = (
        f'source {ROOT}/tools/workspace.sh && phil_select_ros && '
        'echo "$phil_ros $phil_mode $phil_python_version $phil_requirements_ros" && '
        'echo "${phil_venv#$phil_root/} ${phil_build#$phil_root/} '
        '${phil_install#$phil_root/} ${phil_log#$phil_root/}"'
    )
    base = {key: value for key, value in os.environ.items() if key not in CHOSEN}
    return subprocess.run(
        ['bash', '-c', script], env={**base, **environ}, capture_output=True, text=True, timeout=30
    )


@pytest.mark.parametrize(
    ('environ', 'chosen', 'trees'),
    [
        ({}, 'kilted pypi-kilted 3.11 requirements-ros-kilted.txt', '.venv build install log'),
        (
            {'PHIL_ROS': 'jazzy'},
            'jazzy pypi-jazzy 3.12 requirements-ros-jazzy.txt',
            '.venv-jazzy build-jazzy install-jazzy log-jazzy',
        ),
        ({'ROS_DISTRO': 'humble'}, 'humble system-humble', '.venv build install log'),
        (
            {'ROS_DISTRO': 'jazzy', 'PHIL_ROS': 'jazzy'},
            'jazzy system-jazzy',
            '.venv build install log',
        ),
    ],
    ids=['default-kilted', 'jazzy-wheels', 'sourced-humble', 'sourced-jazzy-asked'],
)
def test_each_choice_has_its_python_and_its_trees(environ, chosen, trees):
    done = _select(environ)
    assert done.returncode == 0, done.stderr
    assert [line.split() for line in done.stdout.splitlines()] == [chosen.split(), trees.split()]
    for requirements in chosen.split()[3:]:
        assert (ROOT / requirements).is_file()


@pytest.mark.parametrize(
    ('environ', 'said'),
    [
        ({'PHIL_ROS': 'rolling'}, 'ROS=rolling: the PyPI wheels here are kilted'),
        (
            {'ROS_DISTRO': 'humble', 'PHIL_ROS': 'jazzy'},
            'ROS=jazzy was asked for, but ROS 2 humble',
        ),
    ],
    ids=['unknown-distro', 'other-distro-sourced'],
)
def test_a_choice_that_cannot_be_had_is_refused_by_name(environ, said):
    done = _select(environ)
    assert done.returncode != 0
    assert said in done.stderr
    assert done.stdout == ''


def test_a_missing_interpreter_is_named_with_how_to_get_it():
    script = f'source {ROOT}/tools/workspace.sh && phil_find_python 3.99 "ROS 2 Future"'
    done = subprocess.run(['bash', '-c', script], capture_output=True, text=True, timeout=30)
    assert done.returncode != 0 and done.stdout == ''
    assert 'ROS 2 Future needs CPython 3.99' in done.stderr
    assert 'pyenv install 3.99' in done.stderr


def test_the_wheels_builder_paths_become_this_machines(tmp_path):
    spec = importlib.util.spec_from_file_location(
        'fix_wheel_cmake_paths', ROOT / 'tools' / 'fix_wheel_cmake_paths.py'
    )
    fixer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fixer)
    include = fixer.sysconfig.get_paths()['include']
    numpy_include = fixer.numpy.get_include()
    exports = tmp_path / 'share' / 'std_msgs' / 'cmake'
    exports.mkdir(parents=True)
    for tag, version in (('cp311', '3.11'), ('cp312', '3.12')):  # Kilted's and Jazzy's wheels
        builder = f'/opt/python/{tag}-{tag}'
        (exports / f'export_{tag}.cmake').write_text(
            f'INTERFACE_INCLUDE_DIRECTORIES "{builder}/include/python{version};'
            f'{builder}/lib/python{version}/site-packages/numpy/_core/include"\n'
        )
    (exports / 'untouched.cmake').write_text('set(x /opt/other)\n')
    assert fixer.fix_prefix(tmp_path) == 2
    for tag in ('cp311', 'cp312'):
        assert (exports / f'export_{tag}.cmake').read_text() == (
            f'INTERFACE_INCLUDE_DIRECTORIES "{include};{numpy_include}"\n'
        )
    assert (exports / 'untouched.cmake').read_text() == 'set(x /opt/other)\n'
    assert fixer.fix_prefix(tmp_path) == 0


def test_a_shell_that_had_the_other_choice_sourced_forgets_its_trees():
    """Kilted's workspace sourced, then Jazzy's asked for: Kilted's install, build and venv
    leave every path variable (their message libraries crash Jazzy's Python), while entries
    outside the workspace and Jazzy's own stay, in order."""
    kilted = [f'{ROOT}/install/phil_msgs/lib', f'{ROOT}/.venv/bin', f'{ROOT}/build/phil_ros']
    jazzy = f'{ROOT}/install-jazzy/phil_msgs/lib'
    variables = {
        'LD_LIBRARY_PATH': ':'.join([kilted[0], '/usr/lib/extra', jazzy]),
        'PATH': ':'.join([kilted[1], '/usr/bin', f'{ROOT}/build_tools/bin', '/bin']),
        'PYTHONPATH': kilted[2],
        'COLCON_PREFIX_PATH': f'{ROOT}/install',
        '_OLD_VIRTUAL_PATH': ':'.join([kilted[1], '/usr/bin']),  # what deactivate restores
        'CMAKE_PREFIX_PATH': '/opt/a:',  # nothing to drop: left exactly as it was
    }
    script = (
        f'source {ROOT}/tools/workspace.sh && phil_select_ros && phil_forget_other_trees && '
        + ' && '.join(f'echo "{name}=${{{name}-unset}}"' for name in variables)
    )
    done = subprocess.run(
        ['/bin/bash', '-c', script],
        env={**variables, 'PHIL_ROS': 'jazzy'},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f'LD_LIBRARY_PATH=/usr/lib/extra:{jazzy}',
        f'PATH=/usr/bin:{ROOT}/build_tools/bin:/bin',
        'PYTHONPATH=unset',
        'COLCON_PREFIX_PATH=unset',
        '_OLD_VIRTUAL_PATH=/usr/bin',
        'CMAKE_PREFIX_PATH=/opt/a:',
    ]
