"""The one declaration of Phil's node set, used by robot.launch.py and by the launcher that
runs the graph without a ROS install. Adding a node here adds it to both."""

from __future__ import annotations

import shlex
from collections.abc import Collection
from dataclasses import dataclass, field

import yaml


@dataclass(frozen=True)
class NodeSpec:
    """One node (or helper process) of the graph.

    Attributes:
        package: the ROS package that installs the executable (``lib/<package>/<executable>``).
        executable: the console-script name.
        name: the node (or process) name.
        parameter_file: file in ``phil_bringup/config`` with its ``ros__parameters``, or ''.
        sim_parameter_file: replaces ``parameter_file`` against the simulated robot, or ''.
        sim_only: start it only against the simulated robot (the device simulators).
        ros_node: a ROS node (takes --ros-args); False for plain processes.
        arguments: extra command-line arguments.
        niceness: scheduling niceness; negative runs it ahead of ordinary processes. Without
            the privilege the process runs at 0 and its output says so.
        rt_priority: SCHED_RR priority (1..99) of the whole process, ahead of every
            time-sharing process; 0 = time-sharing at ``niceness``. Refused (no CAP_SYS_NICE or
            rtprio limit): time-sharing at ``niceness``, and its output says so.
        motion_path: the node carries motion to the drives (planner, trajectory generator,
            score player, hardware): its death or silence latches a FAULT.
        watches: whose heartbeats the node watches (its ``watched_nodes`` parameter):
            ``'motion_path'`` the other motion-path nodes, ``'graph'`` every other ROS node,
            '' none.
        process: the process it shares with the other nodes of that name when the graph is
            composed (launcher ``--composed``, ``composed:=true``); '' its own process always.
            The process's executable (``phil_bringup/<process>``) builds exactly those nodes.
        members: for a composed process, the nodes it runs (each keeps its own name and
            parameter file); () for a single node.
        option: started only when this launch option is on (``gen1``); '' always. Nobody
            watches such a node: nothing on the motion path depends on it.
    """

    package: str
    executable: str
    name: str
    parameter_file: str = ''
    sim_parameter_file: str = ''
    sim_only: bool = False
    ros_node: bool = True
    arguments: tuple[str, ...] = field(default_factory=tuple)
    niceness: int = 0
    rt_priority: int = 0
    motion_path: bool = False
    watches: str = ''
    process: str = ''
    members: tuple[NodeSpec, ...] = field(default_factory=tuple)
    option: str = ''

    def parameter_file_for(self, sim: bool) -> str:
        return self.sim_parameter_file if sim and self.sim_parameter_file else self.parameter_file


#: Scheduling of the processes a command crosses (TCP bridge -> planner -> trajectory generator
#: -> hardware node) and of the score player beside them. SCHED_RR: a command preempts every
#: time-sharing process and the device simulators, and waits only for the TCP bridge and the
#: bus loop, whose SCHED_FIFO priority (hardware parameter ``sched_priority``, 40) is higher,
#: so its 1 ms tick always goes first. Measured on
#: the 2-core development VM, TCP -> first motion frame: niceness 0 p50 25 ms; niceness -10
#: p50 22 ms, p99 47-67 ms; SCHED_RR 10 p50 12 ms, p99 17 ms. The niceness is the fallback
#: when real-time scheduling is refused.
COMMAND_PATH_RT_PRIORITY = 10
COMMAND_PATH_NICENESS = -10
#: The device simulators stand for drives, which never wait for the host: SCHED_RR above the
#: command path (below the TCP bridge, where ESTOP arrives, and the bus loop). Below it, with
#: the graph filling both cores while a song plays (bus loop 0.7 of a core, simulator 0.6,
#: command path 0.6), a burst of the command path's work silenced the simulated drives for
#: 1 s in about one fresh graph in ten: FEEDBACK_TIMEOUT. Input pacing cannot cap that work.
#: The price is the simulated robot's command latency (the command path now waits for the
#: simulator's work too); on the robot the drives take no CPU, and nothing changes there.
SIMULATOR_RT_PRIORITY = 20
#: The TCP bridge is where an ESTOP line arrives (it adds to the ESTOP word itself): ahead of
#: the command path and the simulated drives, so the line is read at once (its own work is
#: capped by ``max_lines_per_s``). At the command
#: path's priority it waited for a round-robin slice of a busy peer: TCP ESTOP -> latched p99
#: 100-300 ms. It does little work of its own; the planner does the deciding.
ESTOP_PATH_RT_PRIORITY = 25
#: The TCP bridge, the planner, the trajectory generator and the score player in one process
#: when the graph is composed. It runs at the highest priority of its nodes (the TCP bridge's,
#: ESTOP_PATH_RT_PRIORITY): the TCP server thread that reads an ESTOP line needs the one
#: Python lock (GIL) of the process, and the thread holding it (the executor, deciding for the
#: command path) must run as soon as the line arrives. Below the simulator it could wait for
#: the simulator's bursts while holding the lock: the ESTOP would wait with it.
COMMAND_PATH_PROCESS = 'command_path'

#: Start order: the simulated devices first (the hardware node discovers them at start-up).
NODE_SET: tuple[NodeSpec, ...] = (
    # Real devices never wait for a busy host: the simulator runs ahead of the command path
    # (below the TCP bridge and the bus loop).
    NodeSpec(
        'phil_hardware',
        'device_simulator',
        'device_simulator',
        sim_only=True,
        ros_node=False,
        # /phil/sim/impacts (the control tower's detected strokes) from a process of its own;
        # the true joint states at 10 Hz only: nothing in the graph needs more.
        arguments=('--ros', '--joint-state-hz', '10'),
        niceness=-10,
        rt_priority=SIMULATOR_RT_PRIORITY,
    ),
    NodeSpec(
        'phil_bringup',
        'description_publisher',
        'description_publisher',
        parameter_file='description.yaml',
    ),
    NodeSpec(
        'phil_hardware',
        'hardware',
        'hardware',
        parameter_file='hardware.yaml',
        sim_parameter_file='hardware_sim.yaml',
        niceness=COMMAND_PATH_NICENESS,
        rt_priority=COMMAND_PATH_RT_PRIORITY,
        motion_path=True,
        watches='motion_path',
    ),
    NodeSpec(
        'phil_control',
        'trajectory_generator',
        'trajectory_generator',
        parameter_file='trajectory_generator.yaml',
        niceness=COMMAND_PATH_NICENESS,
        rt_priority=COMMAND_PATH_RT_PRIORITY,
        motion_path=True,
        process=COMMAND_PATH_PROCESS,
    ),
    # On the motion path too: a burst of commands must not starve the windows it generates a
    # bar ahead, nor its heartbeat (a 1000-line flood at time-sharing priority kept it silent
    # past the liveness timeout: a FAULT).
    NodeSpec(
        'phil_control',
        'score_player',
        'score_player',
        parameter_file='score_player.yaml',
        sim_parameter_file='score_player_sim.yaml',
        niceness=COMMAND_PATH_NICENESS,
        rt_priority=COMMAND_PATH_RT_PRIORITY,
        motion_path=True,
        watches='motion_path',
        process=COMMAND_PATH_PROCESS,
    ),
    NodeSpec(
        'phil_control',
        'behavior_planner',
        'behavior_planner',
        parameter_file='behavior_planner.yaml',
        niceness=COMMAND_PATH_NICENESS,
        rt_priority=COMMAND_PATH_RT_PRIORITY,
        motion_path=True,
        watches='graph',
        process=COMMAND_PATH_PROCESS,
    ),
    NodeSpec(
        'phil_control',
        'tcp_bridge',
        'tcp_bridge',
        parameter_file='tcp_bridge.yaml',
        niceness=COMMAND_PATH_NICENESS,
        rt_priority=ESTOP_PATH_RT_PRIORITY,
        process=COMMAND_PATH_PROCESS,
    ),
    # The page of the running robot: off the command path, a client of the planner.
    NodeSpec(
        'phil_bringup',
        'control_tower',
        'control_tower',
        parameter_file='control_tower.yaml',
    ),
    # The Gen-1 brain's port (9999): a client of the planner as the brain is of the TCP bridge.
    NodeSpec(
        'phil_control',
        'gen1_bridge',
        'gen1_bridge',
        parameter_file='gen1_bridge.yaml',
        niceness=COMMAND_PATH_NICENESS,
        option='gen1',
    ),
)


def sched_prefix(spec: NodeSpec) -> list[str]:
    """The command prefix that starts ``spec`` with its scheduling: SCHED_RR at
    ``rt_priority`` (``chrt``) if that is allowed, else time-sharing at its ``niceness``
    (``nice`` runs the command at the normal priority, with a warning, when that is refused
    too). Both fallbacks are said on the process's output."""
    nice = ['nice', '-n', str(spec.niceness)] if spec.niceness else []
    if not spec.rt_priority:
        return nice
    priority = spec.rt_priority
    refused = (
        f'phil: SCHED_RR priority {priority} refused; running time-sharing at niceness '
        f'{spec.niceness}'
    )
    script = (
        f'chrt -r {priority} true 2>/dev/null && exec chrt -r {priority} "$@"; '
        f'echo {shlex.quote(refused)} >&2; exec {shlex.join(nice)} "$@"'
    )
    return ['sh', '-c', script, spec.name]


def nodes_for(sim: bool, options: Collection[str] = ()) -> list[NodeSpec]:
    """The processes to start for the simulated (``sim``) or the real robot with the launch
    ``options`` on (``gen1``), in start order."""
    return [
        node
        for node in NODE_SET
        if (sim or not node.sim_only) and (not node.option or node.option in options)
    ]


def processes_for(
    sim: bool, composed: bool = False, options: Collection[str] = ()
) -> list[NodeSpec]:
    """The processes to start, in start order: ``nodes_for(sim)``, or with ``composed`` the
    nodes of each shared ``process`` as one spec (at its first node's place) whose ``members``
    are those nodes: SCHED_RR at their highest ``rt_priority``, at their lowest niceness."""
    nodes = nodes_for(sim, options)
    if not composed:
        return nodes
    processes: list[NodeSpec] = []
    for node in nodes:
        if not node.process:
            processes.append(node)
        elif all(spec.name != node.process for spec in processes):
            processes.append(composed_process(node.process, nodes))
    return processes


def composed_process(process: str, nodes: list[NodeSpec]) -> NodeSpec:
    """The spec of the shared ``process`` that runs the ``nodes`` declared to be in it."""
    members = tuple(node for node in nodes if node.process == process)
    return NodeSpec(
        'phil_bringup',
        process,
        process,
        niceness=min(node.niceness for node in members),
        rt_priority=max(node.rt_priority for node in members),
        motion_path=any(node.motion_path for node in members),
        members=members,
    )


def watched_nodes(
    spec: NodeSpec, specs: list[NodeSpec] | tuple[NodeSpec, ...] = NODE_SET
) -> list[str]:
    """The ``watched_nodes`` parameter of ``spec`` (see ``NodeSpec.watches``)."""
    others = [
        other for other in specs if other.ros_node and other.name != spec.name and not other.option
    ]
    if spec.watches == 'motion_path':
        return [other.name for other in others if other.motion_path]
    if spec.watches == 'graph':
        return [other.name for other in others]
    return []


def composed_parameters_yaml(parameters: dict[str, dict[str, object]]) -> str:
    """A parameter file setting each node's ``parameters`` (keyed by node name): the one way
    to give the nodes of a shared process values of their own (``-p`` sets every node)."""
    return yaml.safe_dump(
        {node: {'ros__parameters': values} for node, values in parameters.items()},
        sort_keys=False,
    )
