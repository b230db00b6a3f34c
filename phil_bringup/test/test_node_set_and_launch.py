"""robot.launch.py and the launcher serve one node set whose executables and files exist.

launch_ros is not installable on every machine, so the launch file is checked as source:
it parses, it builds its nodes from NODE_SET, and everything NODE_SET names is installed.
"""

import ast
import os
from pathlib import Path

import pytest
from workspace import ROOT

from phil_bringup.core.node_set import NODE_SET, nodes_for

LAUNCH_FILE = ROOT / 'phil_bringup' / 'launch' / 'robot.launch.py'


def installed_prefix(package: str) -> Path:
    from ament_index_python.packages import get_package_prefix

    return Path(get_package_prefix(package))


def test_launch_file_is_valid_python_built_from_the_node_set():
    tree = ast.parse(LAUNCH_FILE.read_text(), filename=str(LAUNCH_FILE))
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                for alias in node.names}
    assert 'nodes_for' in imported
    functions = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
    assert 'generate_launch_description' in functions
    arguments = {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant)}
    assert {'sim', 'rviz', 'tcp_address', 'tcp_port', 'log_dir', 'rt_priority'} <= arguments
    assert 'nice_prefix' in imported  # every process at its declared niceness


def test_every_node_of_the_set_is_an_installed_executable():
    if 'AMENT_PREFIX_PATH' not in os.environ:
        pytest.skip('workspace not built/sourced')
    for spec in NODE_SET:
        executable = installed_prefix(spec.package) / 'lib' / spec.package / spec.executable
        assert executable.is_file() and os.access(executable, os.X_OK), executable


def test_every_parameter_file_exists_and_configures_its_node():
    import yaml

    for spec in NODE_SET:
        for file_name in {spec.parameter_file_for(False), spec.parameter_file_for(True)} - {''}:
            path = ROOT / 'phil_bringup' / 'config' / file_name
            assert path.is_file(), path
            assert 'ros__parameters' in yaml.safe_load(path.read_text())[spec.name]


def test_parameter_files_only_set_parameters_the_nodes_declare():
    """A typo in a YAML key would silently do nothing; every key must be declared."""
    import yaml

    declared = {
        'hardware': set(__import__('phil_hardware.hardware_node',
                                   fromlist=['PARAMETERS']).PARAMETERS),
    }
    for spec in NODE_SET:
        if spec.name not in declared:
            continue
        for file_name in {spec.parameter_file_for(False), spec.parameter_file_for(True)} - {''}:
            keys = yaml.safe_load((ROOT / 'phil_bringup' / 'config' / file_name).read_text())
            unknown = set(keys[spec.name]['ros__parameters']) - declared[spec.name]
            assert not unknown, f'{file_name}: unknown parameters {unknown}'


def test_the_command_path_runs_ahead_of_ordinary_processes():
    from phil_bringup.core.node_set import COMMAND_PATH_NICENESS, nice_prefix

    by_name = {spec.name: spec for spec in NODE_SET}
    for name in ('tcp_bridge', 'behavior_planner', 'trajectory_generator', 'hardware'):
        assert by_name[name].niceness == COMMAND_PATH_NICENESS < 0
        assert nice_prefix(by_name[name]) == ['nice', '-n', str(COMMAND_PATH_NICENESS)]
    assert nice_prefix(by_name['description_publisher']) == []


def test_real_robot_set_excludes_simulator_processes():
    assert all(not spec.sim_only for spec in nodes_for(sim=False))
    assert len(nodes_for(sim=True)) >= len(nodes_for(sim=False))
