"""Show Phil and the drum kit in rviz, with sliders to move the joints (real ROS 2 install)."""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.conditions import IfCondition
from launch.substitutions import Command, LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare


def generate_launch_description() -> LaunchDescription:
    description_share = FindPackageShare('phil_description')
    robot_description = ParameterValue(
        Command(['xacro ', PathJoinSubstitution([description_share, 'urdf', 'phil.urdf.xacro'])]),
        value_type=str,
    )
    return LaunchDescription(
        [
            DeclareLaunchArgument(
                'gui',
                default_value='true',
                description='Start joint_state_publisher_gui to move the joints.',
            ),
            Node(
                package='robot_state_publisher',
                executable='robot_state_publisher',
                parameters=[{'robot_description': robot_description}],
            ),
            Node(
                package='joint_state_publisher_gui',
                executable='joint_state_publisher_gui',
                condition=IfCondition(LaunchConfiguration('gui')),
            ),
            Node(
                package='phil_bringup',
                executable='description_publisher',
                parameters=[{'publish_robot_description': False}],
            ),
            Node(
                package='rviz2',
                executable='rviz2',
                arguments=['-d', PathJoinSubstitution([description_share, 'rviz', 'phil.rviz'])],
            ),
        ]
    )
