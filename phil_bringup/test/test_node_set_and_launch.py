"""robot.launch.py and the launcher serve one node set whose executables and files exist.

launch_ros is not installable on every machine, so the launch file is checked as source:
it parses, it builds its nodes from NODE_SET, and everything NODE_SET names is installed.
"""

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
from workspace import ROOT

from phil_bringup.core.node_set import NODE_SET, nodes_for, processes_for, watched_nodes
from phil_bringup.launch_options import node_overrides, parse_arguments

LAUNCH_FILE = ROOT / 'phil_bringup' / 'launch' / 'robot.launch.py'
COMMAND_PATH = ('behavior_planner', 'trajectory_generator', 'score_player', 'hardware')


def installed_prefix(package: str) -> Path:
    from ament_index_python.packages import get_package_prefix

    return Path(get_package_prefix(package))


def test_launch_file_is_valid_python_built_from_the_node_set():
    tree = ast.parse(LAUNCH_FILE.read_text(), filename=str(LAUNCH_FILE))
    imported = {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert 'processes_for' in imported  # the node set, separate or composed
    functions = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
    assert 'generate_launch_description' in functions
    arguments = {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant)}
    assert {
        'sim',
        'rviz',
        'tcp_address',
        'tcp_port',
        'log_dir',
        'rt_priority',
        'network',
        'gen1',
        'gen1_port',
        'tower_port',
    } <= arguments
    assert 'sched_prefix' in imported  # every process with its declared scheduling
    # DDS on loopback by the launcher's rules, set before any process starts; SROS2 enclaves.
    assert {
        'dds_scope',
        'SetEnvironmentVariable',
        'UnsetEnvironmentVariable',
        'enclave_of',
    } <= imported
    assert 'dds_setup' in functions
    generate = next(
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and node.name == 'generate_launch_description'
    )
    first_line = {
        name: min(
            node.lineno
            for node in ast.walk(generate)
            if isinstance(node, ast.Name) and node.id == name
        )
        for name in ('dds_setup', 'Node')
    }
    assert first_line['dds_setup'] < first_line['Node'], 'a node would start before the DDS set-up'


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

    declared = {name: set(parameters) for name, parameters in node_parameters().items()}
    for spec in NODE_SET:
        if spec.name not in declared:
            continue
        for file_name in {spec.parameter_file_for(False), spec.parameter_file_for(True)} - {''}:
            keys = yaml.safe_load((ROOT / 'phil_bringup' / 'config' / file_name).read_text())
            unknown = set(keys[spec.name]['ros__parameters']) - declared[spec.name]
            assert not unknown, f'{file_name}: unknown parameters {unknown}'


def node_parameters() -> dict[str, dict]:
    """Each node's parameters (name -> (default, description)) by node name."""
    from phil_bringup.description_publisher.config import PARAMETERS as DESCRIPTION
    from phil_control.behavior_planner.config import PARAMETERS as BEHAVIOR_PLANNER
    from phil_control.score_player.config import PARAMETERS as SCORE_PLAYER
    from phil_control.tcp_bridge.config import PARAMETERS as TCP_BRIDGE
    from phil_control.trajectory_generator.config import PARAMETERS as TRAJECTORY_GENERATOR
    from phil_hardware.hardware.config import PARAMETERS as HARDWARE

    return {
        'behavior_planner': BEHAVIOR_PLANNER,
        'description_publisher': DESCRIPTION,
        'hardware': HARDWARE,
        'score_player': SCORE_PLAYER,
        'tcp_bridge': TCP_BRIDGE,
        'trajectory_generator': TRAJECTORY_GENERATOR,
    }


def test_a_sim_file_holds_only_what_differs_from_the_robot_file():
    """The sim file is passed instead of the robot file: it can leave out what the robot uses
    only while the robot file sets nothing but the node's defaults."""
    import yaml

    def parameters(file_name: str) -> dict:
        path = ROOT / 'phil_bringup' / 'config' / file_name
        return yaml.safe_load(path.read_text())[spec.name]['ros__parameters']

    defaults = node_parameters()
    checked = 0
    for spec in NODE_SET:
        if not spec.sim_parameter_file:
            continue
        robot, sim = parameters(spec.parameter_file), parameters(spec.sim_parameter_file)
        for name, value in robot.items():
            assert value == defaults[spec.name][name][0], (
                f'{spec.parameter_file}: {name} is not the default; the sim file would lose it'
            )
        for name, value in sim.items():
            assert value != robot.get(name, defaults[spec.name][name][0]), (
                f'{spec.sim_parameter_file}: {name} repeats the robot value'
            )
        checked += 1
    assert checked == 2  # hardware, score_player


def hardware_sched_priority(file_name: str) -> int:
    """The bus loop's priority with ``file_name``: its value, else the node's default."""
    import yaml

    parameters = yaml.safe_load((ROOT / 'phil_bringup' / 'config' / file_name).read_text())
    default = node_parameters()['hardware']['sched_priority'][0]
    return parameters['hardware']['ros__parameters'].get('sched_priority', default)


def test_the_command_path_runs_real_time_below_the_bus_loop():
    from phil_bringup.core.node_set import (
        COMMAND_PATH_NICENESS,
        COMMAND_PATH_RT_PRIORITY,
        sched_prefix,
    )

    by_name = {spec.name: spec for spec in NODE_SET}
    for name in COMMAND_PATH:
        assert by_name[name].rt_priority == COMMAND_PATH_RT_PRIORITY > 0
        assert by_name[name].niceness == COMMAND_PATH_NICENESS < 0
    for file_name in ('hardware.yaml', 'hardware_sim.yaml'):
        # The bus loop's 1 ms tick preempts every command-path process.
        assert hardware_sched_priority(file_name) > COMMAND_PATH_RT_PRIORITY, file_name
    # The simulated drives never wait for the command path; the ESTOP line is read ahead of
    # everything but the bus loop that latches it.
    bus_loop = hardware_sched_priority('hardware_sim.yaml')
    assert (
        COMMAND_PATH_RT_PRIORITY
        < by_name['device_simulator'].rt_priority
        < by_name['tcp_bridge'].rt_priority
        < bus_loop
    )
    assert by_name['tcp_bridge'].niceness == COMMAND_PATH_NICENESS
    assert sched_prefix(by_name['description_publisher']) == []


def _scheduling_under(prefix: list[str], env: dict | None = None):
    """(policy, priority, niceness, stderr) of a Python process started behind ``prefix``."""
    probe = (
        'import os; print(os.sched_getscheduler(0), os.sched_getparam(0).sched_priority, '
        'os.getpriority(os.PRIO_PROCESS, 0))'
    )
    done = subprocess.run(
        [*prefix, sys.executable, '-c', probe], capture_output=True, text=True, timeout=60, env=env
    )
    assert done.returncode == 0, done.stderr
    policy, priority, niceness = (int(word) for word in done.stdout.split())
    return policy, priority, niceness, done.stderr


def test_sched_prefix_starts_the_command_round_robin_or_says_why_not():
    from phil_bringup.core.node_set import sched_prefix

    spec = {spec.name: spec for spec in NODE_SET}['behavior_planner']
    allowed = (
        subprocess.run(
            ['chrt', '-r', str(spec.rt_priority), 'true'], capture_output=True
        ).returncode
        == 0
    )
    policy, priority, _, stderr = _scheduling_under(sched_prefix(spec))
    if allowed:
        assert (policy, priority) == (os.SCHED_RR, spec.rt_priority), stderr
    else:
        assert policy == os.SCHED_OTHER and 'SCHED_RR priority 10 refused' in stderr


def test_sched_prefix_falls_back_to_the_niceness_when_real_time_is_refused(tmp_path):
    from phil_bringup.core.node_set import sched_prefix

    spec = {spec.name: spec for spec in NODE_SET}['hardware']
    refusing = tmp_path / 'chrt'  # a chrt that is never allowed
    refusing.write_text('#!/bin/sh\necho "chrt: Operation not permitted" >&2\nexit 1\n')
    refusing.chmod(0o755)
    env = {**os.environ, 'PATH': f'{tmp_path}:{os.environ["PATH"]}'}
    policy, _, niceness, stderr = _scheduling_under(sched_prefix(spec), env)
    assert policy == os.SCHED_OTHER
    assert 'SCHED_RR priority 10 refused; running time-sharing at niceness -10' in stderr
    assert niceness == (spec.niceness if os.geteuid() == 0 else 0), stderr


def test_real_robot_set_excludes_simulator_processes():
    assert all(not spec.sim_only for spec in nodes_for(sim=False))
    assert len(nodes_for(sim=True)) >= len(nodes_for(sim=False))


def test_the_gen1_bridge_runs_only_when_asked_and_nobody_watches_it():
    names = [spec.name for spec in nodes_for(sim=True)]
    assert 'gen1_bridge' not in names and 'tcp_bridge' in names
    with_gen1 = [spec.name for spec in nodes_for(sim=True, options=('gen1',))]
    assert with_gen1 == [*names, 'gen1_bridge']
    composed = [spec.name for spec in processes_for(True, composed=True, options=('gen1',))]
    assert composed[-1] == 'gen1_bridge' and 'command_path' in composed
    assert all('gen1_bridge' not in watched_nodes(spec) for spec in NODE_SET)
    args = parse_arguments(['--gen1', '--gen1-port', '9998', '--tcp-address', '0.0.0.0'])
    assert node_overrides(args, set(with_gen1))['gen1_bridge'] == {
        'port': '9998',
        'address': '0.0.0.0',
    }
    assert not parse_arguments([]).gen1
