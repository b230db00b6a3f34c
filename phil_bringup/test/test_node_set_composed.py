"""The composed command path is declared once, in the node set: ``process='command_path'`` on
the TCP bridge, the planner, the trajectory generator and the score player. Separate
processes stay the default; composed, the four run as one process whose command line gives
each node its own parameter file and the launcher's values by node name."""

import pytest
import yaml

from phil_bringup.core.node_set import (
    COMMAND_PATH_NICENESS,
    COMMAND_PATH_PROCESS,
    ESTOP_PATH_RT_PRIORITY,
    NODE_SET,
    composed_parameters_yaml,
    nodes_for,
    processes_for,
    watched_nodes,
)

MEMBERS = ('trajectory_generator', 'score_player', 'behavior_planner', 'tcp_bridge')


def composed(sim: bool = True):
    [process] = [spec for spec in processes_for(sim, composed=True) if spec.members]
    return process


@pytest.mark.parametrize('sim', [True, False])
def test_separate_processes_are_the_default_and_unchanged(sim):
    assert processes_for(sim) == nodes_for(sim)
    assert all(not spec.members for spec in processes_for(sim))


@pytest.mark.parametrize('sim', [True, False])
def test_composed_the_command_path_is_one_process_in_place_of_its_nodes(sim):
    separate = nodes_for(sim)
    processes = processes_for(sim, composed=True)
    process = composed(sim)
    assert tuple(member.name for member in process.members) == MEMBERS
    # In place of its first node; the other processes keep their order.
    first = next(i for i, spec in enumerate(separate) if spec.name in MEMBERS)
    assert [spec.name for spec in processes] == [
        *(spec.name for spec in separate[:first]),
        COMMAND_PATH_PROCESS,
        *(spec.name for spec in separate[first:] if spec.name not in MEMBERS),
    ]
    # The other processes are exactly the separate mode's.
    assert [spec for spec in processes if not spec.members] == [
        spec for spec in separate if not spec.process
    ]
    assert (process.package, process.executable, process.name) == (
        'phil_bringup',
        'command_path',
        'command_path',
    )
    assert process.ros_node and process.motion_path and not process.process


def test_the_composed_process_runs_at_the_estop_path_priority():
    """The TCP server thread that reads ESTOP shares the process's Python lock with the
    executor: the whole process runs at the TCP bridge's priority, under the bus loop."""
    by_name = {spec.name: spec for spec in NODE_SET}
    process = composed()
    assert process.rt_priority == ESTOP_PATH_RT_PRIORITY == by_name['tcp_bridge'].rt_priority
    assert process.rt_priority > by_name['device_simulator'].rt_priority
    assert process.niceness == COMMAND_PATH_NICENESS


def test_the_members_keep_their_watches():
    for member in composed().members:
        assert watched_nodes(member) == watched_nodes(
            next(spec for spec in NODE_SET if spec.name == member.name)
        )


def test_composed_parameters_are_keyed_by_node_name():
    text = composed_parameters_yaml({'tcp_bridge': {'port': 1951}, 'score_player': {'sim': True}})
    assert yaml.safe_load(text) == {
        'tcp_bridge': {'ros__parameters': {'port': 1951}},
        'score_player': {'ros__parameters': {'sim': True}},
    }


def test_the_composed_command_gives_each_node_its_file_and_values(tmp_path):
    pytest.importorskip('ament_index_python')
    from phil_bringup.process_commands import composed_command

    overrides = {'tcp_bridge': {'port': '1999', 'reply_timeout_s': '5.0'}}
    command = composed_command(composed(), True, tmp_path / 'logs', overrides, tmp_path)
    assert command[0].endswith('lib/phil_bringup/command_path')
    assert command[1:4] == ['--ros-args', '--enclave', '/phil/command_path']
    assert '-r' not in command and '-p' not in command  # both would apply to every node
    files = [command[i + 1] for i, word in enumerate(command) if word == '--params-file']
    assert [file.rsplit('/', 1)[-1] for file in files] == [
        'trajectory_generator.yaml',
        'score_player_sim.yaml',
        'behavior_planner.yaml',
        'tcp_bridge.yaml',
        'command_path.launcher.yaml',
    ]
    values = yaml.safe_load((tmp_path / 'command_path.launcher.yaml').read_text())
    assert list(values) == list(MEMBERS)
    bridge = values['tcp_bridge']['ros__parameters']
    assert bridge == {
        'sim': True,
        'port': 1999,
        'reply_timeout_s': 5.0,
        'log_dir': str(tmp_path / 'logs'),
    }
    planner = values['behavior_planner']['ros__parameters']
    assert planner['watched_nodes'] == watched_nodes(composed().members[2])


def test_the_composed_executable_builds_exactly_the_declared_members():
    pytest.importorskip('rclpy')
    from phil_bringup.command_path_node import COMMAND_PATH_NODES

    assert set(COMMAND_PATH_NODES) == set(MEMBERS)
    # Destroyed in reverse order: the planner first, while every reader of the graph
    # shutdown it sent still exists (it waits until they all hold it).
    assert list(COMMAND_PATH_NODES)[-1] == 'behavior_planner'
