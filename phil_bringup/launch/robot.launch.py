"""Phil: the whole robot on a ROS 2 install.

    ros2 launch phil_bringup robot.launch.py [sim:=true] [rviz:=true]

The node set comes from phil_bringup.core.node_set, the same declaration the launcher uses
on machines without ROS launch.
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.conditions import IfCondition
from launch.substitutions import Command, LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

from phil_bringup.core.node_set import NODE_SET

ARGUMENTS = {
    'sim': ('false', 'Drive the device simulators instead of can0..3 and /dev/ttyUSB0.'),
    'rviz': ('false', 'Start rviz2 with the robot and drum-kit display.'),
}


def generate_launch_description() -> LaunchDescription:
    sim = LaunchConfiguration('sim')
    description_share = FindPackageShare('phil_description')
    bringup_share = FindPackageShare('phil_bringup')
    robot_description = ParameterValue(
        Command(['xacro ', PathJoinSubstitution([description_share, 'urdf', 'phil.urdf.xacro']),
                 ' sim:=', sim]),
        value_type=str)
    actions = [DeclareLaunchArgument(name, default_value=default, description=description)
               for name, (default, description) in ARGUMENTS.items()]
    actions.append(Node(package='robot_state_publisher', executable='robot_state_publisher',
                        parameters=[{'robot_description': robot_description}]))
    for spec in NODE_SET:
        parameters = [{'sim': ParameterValue(sim, value_type=bool)}]
        if spec.parameter_file:
            parameters.insert(0, PathJoinSubstitution([bringup_share, 'config',
                                                       spec.parameter_file]))
        if spec.package == 'phil_description':
            # robot_state_publisher already publishes /robot_description here.
            parameters.append({'publish_robot_description': False})
        actions.append(Node(package=spec.package, executable=spec.executable, name=spec.name,
                            parameters=parameters, arguments=list(spec.arguments),
                            condition=IfCondition(sim) if spec.sim_only else None,
                            output='screen'))
    actions.append(Node(package='rviz2', executable='rviz2',
                        arguments=['-d', PathJoinSubstitution([description_share, 'rviz',
                                                               'phil.rviz'])],
                        condition=IfCondition(LaunchConfiguration('rviz'))))
    return LaunchDescription(actions)
