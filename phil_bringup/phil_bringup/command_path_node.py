"""The command path in one process: the TCP bridge, the behavior planner, the trajectory
generator and the score player (``process='command_path'`` in
:data:`phil_bringup.core.node_set.NODE_SET`) on one executor, each node with its own name and
parameters (``--params-file`` per node; a file keyed by a node's name applies to it alone).

The launcher starts it with ``--composed``, ``robot.launch.py`` with ``composed:=true``.
Liveness still holds: every node sends its own heartbeat (with the process's pid), so a watcher
sees all four down when the process dies or its executor hangs.
"""

from __future__ import annotations

from phil_control.behavior_planner.node import BehaviorPlanner
from phil_control.score_player.node import ScorePlayer
from phil_control.tcp_bridge.node import TcpBridge
from phil_control.trajectory_generator.node import TrajectoryGenerator
from phil_ros.executors import waiting_executor
from phil_ros.node_runner import run_nodes

#: Built in this order, destroyed in reverse: the planner first, while every node it sent the
#: graph shutdown to still has its reader (its destroy_node waits until they all hold it).
COMMAND_PATH_NODES = {
    'trajectory_generator': TrajectoryGenerator,
    'score_player': ScorePlayer,
    'tcp_bridge': TcpBridge,
    'behavior_planner': BehaviorPlanner,
}


def main(args: list[str] | None = None) -> None:
    # A SingleThreadedExecutor: the planner's, the generator's and the score player's
    # coroutines await (an EventsExecutor would keep a CPU busy while they wait).
    run_nodes(COMMAND_PATH_NODES, args, make_executor=waiting_executor)


if __name__ == '__main__':
    main()
