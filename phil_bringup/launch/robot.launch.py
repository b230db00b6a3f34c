"""Phil: the whole robot on a ROS 2 install.

    ros2 launch phil_bringup robot.launch.py [sim:=true] [rviz:=true] [tcp_port:=1951]
        [tcp_address:=127.0.0.1] [log_dir:=/path] [rt_priority:=40] [network:=false]
        [composed:=false] [gen1:=false] [gen1_port:=9999] [tower_port:=8080]

The node set comes from phil_bringup.core.node_set, the same declaration the launcher uses
on machines without ROS launch (composed:=true runs the command path's nodes in one process,
as the launcher's --composed does). DDS stays on loopback unless network:=true (the rules of
phil_bringup.core.dds_scope, shared with the launcher).
"""

import os
import shlex
import tempfile

from launch import LaunchDescription
from launch.actions import (
    DeclareLaunchArgument,
    ExecuteProcess,
    LogInfo,
    OpaqueFunction,
    SetEnvironmentVariable,
    UnsetEnvironmentVariable,
)
from launch.conditions import IfCondition
from launch.substitutions import Command, LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

from phil_bringup.core.dds_scope import LOOPBACK_PROFILE, dds_scope, enclave_of
from phil_bringup.core.node_set import (
    composed_parameters_yaml,
    processes_for,
    sched_prefix,
    watched_nodes,
)
from phil_description.core.graph_key import GRAPH_KEY_ENV, GraphKey

ARGUMENTS = {
    'sim': ('false', 'Drive the device simulators instead of can0..3 and /dev/ttyUSB0.'),
    'rviz': ('false', 'Start rviz2 with the robot and drum-kit display.'),
    'tcp_address': ('127.0.0.1', 'Address the brain TCP server binds to.'),
    'tcp_port': ('1951', 'Port of the brain TCP server.'),
    'tower_port': ('8080', 'HTTP port of the control tower page (on tcp_address).'),
    'gen1': ('false', "Also serve the Gen-1 brain's protocol (gen1_bridge, on tcp_address)."),
    'gen1_port': ('9999', "Port of the Gen-1 brain's protocol."),
    'log_dir': ('', 'Run folder for CSV logs (empty: no logs).'),
    'rt_priority': ('40', 'SCHED_FIFO priority of the bus loop (0: normal scheduler).'),
    'network': (
        'false',
        'DDS on every network interface instead of loopback only: anyone on '
        'the network can join the graph (secure it with SROS2).',
    ),
    'composed': (
        'false',
        'Run tcp_bridge, behavior_planner, trajectory_generator and score_player in one '
        'process on one executor.',
    ),
}


def dds_setup(context):
    """DDS on loopback only unless network:=true, for every process of this launch
    (robot_state_publisher and rviz included: this runs before them)."""
    network = LaunchConfiguration('network').perform(context).lower() in ('true', '1')
    profile = f'{FindPackageShare("phil_bringup").perform(context)}/config/{LOOPBACK_PROFILE}'
    scope = dds_scope(getattr(context, 'environment', os.environ), profile, network)
    actions = [
        UnsetEnvironmentVariable(name) if value is None else SetEnvironmentVariable(name, value)
        for name, value in scope.changes.items()
    ]
    if scope.warning:
        actions.append(LogInfo(msg=scope.warning))
    return actions


def launch_setup(context):
    sim = LaunchConfiguration('sim').perform(context).lower() in ('true', '1')
    composed = LaunchConfiguration('composed').perform(context).lower() in ('true', '1')
    gen1 = LaunchConfiguration('gen1').perform(context).lower() in ('true', '1')
    log_dir = LaunchConfiguration('log_dir').perform(context)
    bringup_share = FindPackageShare('phil_bringup').perform(context)
    actions = []
    for spec in processes_for(sim, composed, ('gen1',) if gen1 else ()):
        if spec.members:
            actions.append(composed_node(spec, sim, log_dir, bringup_share, context))
            continue
        if not spec.ros_node:
            command = [spec.executable, *spec.arguments]
            if log_dir:
                command += ['--impacts-jsonl', f'{log_dir}/impacts.jsonl']
            actions.append(
                ExecuteProcess(
                    cmd=[*sched_prefix(spec), 'ros2', 'run', spec.package, *command],
                    name=spec.name,
                    output='screen',
                )
            )
            continue
        parameters = []
        if spec.parameter_file_for(sim):
            parameters.append(f'{bringup_share}/config/{spec.parameter_file_for(sim)}')
        parameters.append(node_overrides(spec, sim, log_dir, context))
        actions.append(
            Node(
                package=spec.package,
                executable=spec.executable,
                name=spec.name,
                parameters=parameters,
                arguments=list(spec.arguments),
                ros_arguments=['--enclave', enclave_of(spec.name)],
                prefix=shlex.join(sched_prefix(spec)) or None,
                output='screen',
            )
        )
    return actions


def node_overrides(spec, sim, log_dir, context):
    """The values this launch sets on a node over its parameter file."""
    overrides = {'sim': sim}
    if spec.watches:
        overrides['watched_nodes'] = watched_nodes(spec)
    if log_dir:
        overrides['log_dir'] = log_dir
    if spec.name in ('tcp_bridge', 'gen1_bridge', 'control_tower'):
        port = {'tcp_bridge': 'tcp_port', 'gen1_bridge': 'gen1_port'}.get(spec.name, 'tower_port')
        overrides['address'] = LaunchConfiguration('tcp_address').perform(context)
        overrides['port'] = int(LaunchConfiguration(port).perform(context))
    if spec.name == 'hardware':
        overrides['sched_priority'] = int(LaunchConfiguration('rt_priority').perform(context))
    if spec.name == 'description_publisher':
        # robot_state_publisher publishes /robot_description here.
        overrides['publish_robot_description'] = False
    return overrides


def composed_node(process, sim, log_dir, bringup_share, context):
    """The composed ``process``: its executable with every member's parameter file, then one
    file keyed by node name with this launch's values (a dict parameter would be written for
    every node of the process, ``/**``). No name remapping: each node keeps its own name."""
    parameters = [
        f'{bringup_share}/config/{member.parameter_file_for(sim)}'
        for member in process.members
        if member.parameter_file_for(sim)
    ]
    values = {
        member.name: node_overrides(member, sim, log_dir, context) for member in process.members
    }
    with tempfile.NamedTemporaryFile(
        'w', prefix=f'phil-{process.name}-', suffix='.yaml', delete=False
    ) as values_file:
        values_file.write(composed_parameters_yaml(values))
    return Node(
        package=process.package,
        executable=process.executable,
        parameters=[*parameters, values_file.name],
        ros_arguments=['--enclave', enclave_of(process.name)],
        prefix=shlex.join(sched_prefix(process)) or None,
        output='screen',
    )


def generate_launch_description() -> LaunchDescription:
    description_share = FindPackageShare('phil_description')
    robot_description = ParameterValue(
        Command(
            [
                'xacro ',
                PathJoinSubstitution([description_share, 'urdf', 'phil.urdf.xacro']),
                ' sim:=',
                LaunchConfiguration('sim'),
            ]
        ),
        value_type=str,
    )
    actions = [
        DeclareLaunchArgument(name, default_value=default, description=description)
        for name, (default, description) in ARGUMENTS.items()
    ]
    actions.append(OpaqueFunction(function=dds_setup))
    # One key for the nodes of this launch, fresh each time unless the user set one (to run
    # further nodes by hand): the graph's own messages are signed with it.
    actions.append(
        SetEnvironmentVariable(GRAPH_KEY_ENV, os.environ.get(GRAPH_KEY_ENV) or GraphKey.generate())
    )
    actions.append(
        Node(
            package='robot_state_publisher',
            executable='robot_state_publisher',
            parameters=[{'robot_description': robot_description}],
            ros_arguments=['--enclave', enclave_of('robot_state_publisher')],
        )
    )
    actions.append(OpaqueFunction(function=launch_setup))
    actions.append(
        Node(
            package='rviz2',
            executable='rviz2',
            arguments=['-d', PathJoinSubstitution([description_share, 'rviz', 'phil.rviz'])],
            ros_arguments=['--enclave', enclave_of('rviz')],
            condition=IfCondition(LaunchConfiguration('rviz')),
        )
    )
    return LaunchDescription(actions)
