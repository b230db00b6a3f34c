"""The hardware lifecycle node end to end, with nothing faked.

The node runs in-process (own rclpy Context and domain, its own SingleThreadedExecutor spun
in a thread, as in production; its command inputs have theirs); the device simulator is a real
subprocess (``python -m phil_hardware.sim``) on unique ff11:: groups and a unique PTY link,
passed to the node through ``can_channel_base`` and ``dxl_port``; the bus loop is the node's
real child process. A probe node talks to the node only through its ROS API (topics, ~/estop,
~/request signed with the graph key as the behavior planner signs it, ~/get_state); an
intruder node, which does not hold the key, tries every input.

One simulator and one node serve the whole module; the tests run in file order and walk the
lifecycle: configure-on-start -> activate -> motion -> ESTOP -> foreign inputs -> a silent
motion-path node -> faults -> deactivate/cleanup -> configure again with motors missing -> a bus
loop killed under the node.

The simulator, the node's parameters, the harness and the intruder are in
test_hardware_node_support; how the node's bus overrides map the buses is tested in
test_hardware_node_bus_overrides.
"""

from __future__ import annotations

import math
import os
import random
import signal
import sys
import time

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')

from rclpy.parameter import Parameter  # noqa: E402
from test_hardware_node_support import (  # noqa: E402
    DEG,
    MODEL,
    NAMES,
    Intruder,
    command,
    cosine_points,
    count_joint_state_stamps,
    faults,
    running_hardware,
    running_simulator,
    stamp_in,
    stamp_ns,
    wait_until,
)
from test_sim_runner import unique_group_base  # noqa: E402
from trajectory_msgs.msg import JointTrajectory  # noqa: E402

from phil_description.core.graph_key import GraphKey  # noqa: E402
from phil_msgs.msg import Fault  # noqa: E402
from phil_msgs.msg import TrajectoryChunk as ChunkMsg  # noqa: E402
from phil_msgs.srv import HardwareRequest, Trigger  # noqa: E402
from phil_ros.graph_safety import sign_message, signed_request  # noqa: E402
from phil_ros.testing import ros_test_context  # noqa: E402

pytestmark = pytest.mark.timeout(120)
#: A held joint's measured position wanders a few feedback counts on a busy machine (a TMotor
#: elbow 0.4 deg beside two CPU hogs); a refused motion in these tests would be 15 deg.
HOLD_NOISE_DEG = 1.0
STATE_TIMEOUT_S = 30.0  # bus-loop start (spawned interpreter) + discovery on a loaded machine


@pytest.fixture(scope='module')
def context():
    with ros_test_context(random.randint(1, 100)) as ctx:
        yield ctx


@pytest.fixture(scope='module')
def simulator(tmp_path_factory):
    base = unique_group_base()
    link = tmp_path_factory.mktemp('hardware_node') / 'ttyDXL'
    with running_simulator(base, link) as process:
        yield process, base, str(link)


@pytest.fixture(autouse=True)
def simulator_says_nothing(simulator):
    """The simulator writes to stderr only when something is wrong with it: a device-loop
    error or a refused niceness fails the test where it happened; a stall of its loop (the
    machine did not run it; every device was silent meanwhile) is shown with the test."""
    sim = simulator[0]
    before = len(sim.stderr().splitlines())
    yield
    lines = sim.stderr().splitlines()[before:]
    stalls = [line for line in lines if 'device loop stalled' in line]
    if stalls:
        print('\n'.join(stalls), file=sys.stderr)
    assert [line for line in lines if line not in stalls] == []


@pytest.fixture(scope='module')
def hardware(context, simulator):
    _, base, link = simulator
    with running_hardware(context, base, link) as harness:
        yield harness


def test_configure_on_start_discovers_all_13_motors_and_publishes_joint_states(hardware):
    status = hardware.wait_status(lambda s: s.lifecycle_state == 'inactive', STATE_TIMEOUT_S)
    assert faults(status) == [] and list(status.missing_motors) == []
    assert not status.realtime  # sched_priority 0: it says so, and it still runs
    assert hardware.lifecycle_state() == 'inactive'
    # Publication rate from the stamps, every message kept (counted on arrival, a busy test
    # process would measure itself): nominally 200 Hz, asserted loosely; the precise rate
    # belongs to the benchmark.
    stamps = count_joint_state_stamps(hardware.node.context, 1.0)
    assert sum(stamps[0] + 0.2e9 <= t < stamps[0] + 1.2e9 for t in stamps) >= 50
    msg = hardware.joint_states[-1]
    assert list(msg.name) == list(NAMES)
    assert len(msg.position) == 13 and np.all(np.isfinite(msg.position))
    error = np.degrees(np.abs(np.array(msg.position) - MODEL.poses['init']))
    assert error.max() < 0.5, dict(zip(NAMES, error.round(2), strict=True))


def test_activate_then_a_stamped_chunk_moves_a_tmotor_and_a_wrist_to_the_target(hardware):
    response = hardware.request('activate')
    assert response.accepted, response.reason
    hardware.wait_status(lambda s: s.lifecycle_state == 'active')
    before = hardware.fresh_positions()
    goals = {'right_elbow': 70 * DEG, 'right_wrist': 60 * DEG}
    stamp = hardware.send_chunk(goals, duration_s=0.8, delay_s=0.5, sequence=1)
    start_ns = stamp_ns(stamp)
    index = [NAMES.index(name) for name in goals]
    target = np.array(list(goals.values()))
    assert wait_until(
        lambda: np.degrees(np.abs(hardware.positions()[index] - target)).max() < 0.5, 15.0
    ), (np.degrees(hardware.positions()[index] - target), hardware.status.faults)
    time.sleep(0.3)  # settled: still there
    after = hardware.fresh_positions()
    assert np.degrees(np.abs(after[index] - target)).max() < HOLD_NOISE_DEG
    others = [i for i in range(13) if i not in index]
    assert np.degrees(np.abs(after[others] - before[others])).max() < HOLD_NOISE_DEG
    # Nothing moved before the chunk's absolute start time.
    early = [
        msg for msg in hardware.joint_states if stamp_ns(msg.header.stamp) < start_ns - 20_000_000
    ]
    assert early, 'no joint states before the chunk start'
    for msg in early[-20:]:
        moved = np.degrees(np.abs(np.array(msg.position)[index] - before[index]))
        assert moved.max() < 0.3, moved
    assert faults(hardware.status) == []


def test_joint_trajectory_moves_the_head_and_an_empty_one_holds(hardware):
    hardware.wait_status(lambda s: s.lifecycle_state == 'active')
    assert hardware.request('allow_joint_trajectory').accepted  # the planner is IDLE
    head = NAMES.index('head_yaw')
    start = hardware.position('head_yaw')
    msg = JointTrajectory(joint_names=['head_yaw'])  # stamp 0: start now
    msg.points = cosine_points([start], [20 * DEG], 0.5)
    hardware.publish(hardware.trajectories, msg)
    assert wait_until(lambda: abs(hardware.position('head_yaw') - 20 * DEG) < 0.5 * DEG, 15.0), (
        math.degrees(hardware.position('head_yaw'))
    )
    # A slow move back, stopped early by an empty trajectory.
    msg = JointTrajectory(joint_names=['head_yaw'])
    msg.points = cosine_points([20 * DEG], [-20 * DEG], 8.0)  # time to stop it half way
    hardware.publish(hardware.trajectories, msg)
    abandoned_end = time.monotonic() + 8.0
    assert wait_until(lambda: hardware.position('head_yaw') < 15 * DEG, 15.0)
    hardware.publish(hardware.trajectories, JointTrajectory())

    def settled() -> bool:
        before = hardware.fresh_positions()[head]
        time.sleep(0.3)
        return abs(hardware.fresh_positions()[head] - before) < 0.2 * DEG

    assert wait_until(settled, 15.0, 0.0), 'the head did not stop'
    held = hardware.position('head_yaw')
    assert held > -15 * DEG  # well short of the abandoned goal
    time.sleep(max(0.0, abandoned_end + 0.3 - time.monotonic()))
    later = hardware.fresh_positions()[head]  # the abandoned motion stays dropped
    assert abs(later - held) < HOLD_NOISE_DEG * DEG, (math.degrees(held), math.degrees(later))
    assert faults(hardware.status) == []


def test_estop_latches_ignores_chunks_and_reset_clears_it(hardware):
    hardware.wait_status(lambda s: s.lifecycle_state == 'active')
    response = hardware.call('estop', Trigger.Request())
    assert response.accepted
    status = hardware.wait_status(lambda s: s.estop and s.faults)
    assert (Fault.CODE_ESTOP, '') in faults(status)
    time.sleep(0.3)
    held = hardware.fresh_positions()
    elbow = NAMES.index('right_elbow')
    hardware.send_chunk({'right_elbow': held[elbow] + 15 * DEG}, 0.4, 0.05, sequence=2)
    time.sleep(1.0)
    now = hardware.fresh_positions()
    assert np.degrees(np.abs(now - held)).max() < HOLD_NOISE_DEG, np.degrees(now - held)
    assert hardware.status.estop and hardware.status.queued_chunks == 0
    asked_ns = time.time_ns()
    response = hardware.request('reset')
    assert response.accepted, response.reason
    cleared = hardware.wait_status(lambda s: not s.estop and not s.faults)
    # The status counts the RESET and says when it was granted: after it was asked, before
    # the status (1 ms of slack: the node maps the loop's monotonic clock onto ROS time).
    reset_ns = cleared.last_reset.sec * 10**9 + cleared.last_reset.nanosec
    stamp_ns = cleared.header.stamp.sec * 10**9 + cleared.header.stamp.nanosec
    assert cleared.resets_granted == 1
    assert asked_ns - 10**6 <= reset_ns <= stamp_ns + 10**6
    # Motion is possible again.
    goal = held[elbow] + 10 * DEG
    hardware.send_chunk({'right_elbow': goal}, 0.4, 0.05, sequence=3)
    assert wait_until(lambda: abs(hardware.position('right_elbow') - goal) < 0.5 * DEG, 15.0)


def test_foreign_inputs_neither_move_nor_unlatch_the_hardware(hardware):
    """Every hardware input, from a node without the graph key: chunks (unsigned, signed with
    another key), joint_trajectory while the planner does not allow it, requests (unsigned,
    another key, a replayed genuine one); there is no lifecycle service to call. Nothing moves,
    nothing resets, the lifecycle stays; ESTOP is the one input anyone may use."""
    hardware.wait_status(lambda s: s.lifecycle_state == 'active' and not s.faults)
    intruder = Intruder(hardware.node.context)
    try:
        held = hardware.fresh_positions()
        elbow = NAMES.index('right_elbow')
        refused = hardware.node.refused_inputs
        unsigned = ChunkMsg(sequence=90)
        unsigned.trajectory.header.stamp = stamp_in(0.05)
        unsigned.trajectory.joint_names = ['right_elbow']
        unsigned.trajectory.points = cosine_points([held[elbow]], [held[elbow] + 15 * DEG], 0.4)
        intruder.publish(intruder.chunks, unsigned)
        other_key = sign_message(GraphKey('not the key of this graph'), unsigned)
        intruder.publish(intruder.chunks, other_key)
        assert hardware.request('forbid_joint_trajectory').accepted  # the planner left IDLE
        head = JointTrajectory(joint_names=['head_yaw'])
        head.points = cosine_points([held[NAMES.index('head_yaw')]], [15 * DEG], 0.4)
        intruder.publish(intruder.trajectories, head)
        assert wait_until(lambda: hardware.node.refused_inputs >= refused + 3, 15.0)
        time.sleep(1.0)
        now = hardware.fresh_positions()
        assert np.degrees(np.abs(now - held)).max() < HOLD_NOISE_DEG, np.degrees(now - held)

        assert intruder.call('estop', Trigger.Request()).accepted  # anyone may stop
        hardware.wait_status(lambda s: s.estop)
        genuine = signed_request(hardware.key, HardwareRequest.Request(request='reset'))
        forged = [
            HardwareRequest.Request(request='reset', stamp_ns=time.time_ns(), nonce='x'),
            signed_request(
                GraphKey('not the key of this graph'), HardwareRequest.Request(request='reset')
            ),
        ]
        for request in forged:
            response = intruder.call('request', request)
            assert not response.accepted and 'graph key' in response.reason, response
        assert hardware.call('request', genuine).accepted  # the planner's own RESET ...
        hardware.wait_status(lambda s: not s.estop)
        assert intruder.call('estop', Trigger.Request()).accepted
        hardware.wait_status(lambda s: s.estop)
        replayed = intruder.call('request', genuine)  # ... copied off the wire
        assert not replayed.accepted and 'replayed' in replayed.reason, replayed
        # rclpy's lifecycle services would let anyone switch torque: the node offers none
        # of them but get_state.
        services = {
            name
            for name, _ in intruder.node.get_service_names_and_types()
            if name.startswith('/hardware/')
        }
        assert '/hardware/get_state' in services, services
        assert not services & {'/hardware/change_state', '/hardware/reset'}, services
        time.sleep(0.5)
        assert hardware.lifecycle_state() == 'active' and hardware.status.estop
        assert np.degrees(np.abs(hardware.fresh_positions() - held)).max() < HOLD_NOISE_DEG
    finally:
        intruder.close()
    assert hardware.request('reset').accepted
    hardware.wait_status(lambda s: not s.estop and not s.faults)


def test_a_silent_motion_path_node_latches_a_fault_naming_it_until_it_is_back(hardware):
    hardware.wait_status(lambda s: s.lifecycle_state == 'active' and not s.faults)
    hardware.beating.clear()  # the watched node stopped (killed, SIGSTOP, hung)
    try:
        status = hardware.wait_status(lambda s: s.faults, 10.0)
        [fault] = status.faults
        assert (
            fault.code == Fault.CODE_PROCESS_DIED
            and 'planner_stand_in stopped responding' in fault.reason
        ), fault
        refused = hardware.request('reset')
        assert not refused.accepted and 'planner_stand_in' in refused.reason, refused
        absent = hardware.request('nodes_ready')  # what the planner asks at start-up
        assert not absent.accepted and 'planner_stand_in' in absent.reason, absent
    finally:
        hardware.beating.set()
    assert wait_until(lambda: hardware.request('reset').accepted, 10.0, 0.2)
    hardware.wait_status(lambda s: not s.faults)
    ready = hardware.request('nodes_ready')
    assert ready.accepted and ready.reason == '', ready


@pytest.mark.parametrize(
    ('joint', 'kind', 'code'),
    [
        ('left_shoulder_1', 'over_current', Fault.CODE_OVER_CURRENT),
        ('left_wrist', 'out_of_range', Fault.CODE_POSITION_OUT_OF_RANGE),
    ],
)
def test_an_injected_fault_is_reported_with_its_code_and_joint(
    hardware, simulator, joint, kind, code
):
    sim, _, _ = simulator
    hardware.wait_status(lambda s: s.lifecycle_state == 'active' and not s.faults)
    command(sim, f'fault {joint} {kind}')
    try:
        hardware.wait_status(lambda s: (code, joint) in faults(s), 15.0)
        refused = hardware.request('reset')  # the cause is still there
        assert not refused.accepted and joint in refused.reason
    finally:
        command(sim, f'clear {joint}')
    assert wait_until(lambda: hardware.request('reset').accepted, 15.0, 0.2)
    hardware.wait_status(lambda s: not s.faults)


def test_deactivate_and_cleanup_end_the_bus_loop_process(hardware):
    hardware.wait_status(lambda s: s.lifecycle_state == 'active')
    pid = hardware.bus_loop_pid()
    assert pid is not None and os.path.exists(f'/proc/{pid}')
    assert hardware.request('deactivate').accepted
    hardware.wait_status(lambda s: s.lifecycle_state == 'inactive')
    assert hardware.request('cleanup').accepted
    hardware.wait_status(lambda s: s.lifecycle_state == 'unconfigured')
    assert hardware.lifecycle_state() == 'unconfigured'
    assert not os.path.exists(f'/proc/{pid}')
    assert hardware.bus_loop_pid() is None
    gone_ns = time.time_ns()
    time.sleep(0.3)
    late = [m for m in hardware.joint_states if stamp_ns(m.header.stamp) > gone_ns]
    assert not late  # nothing measured any more


def test_missing_motors_fail_configure_until_allowed(hardware, simulator):
    sim, _, _ = simulator
    hardware.wait_status(lambda s: s.lifecycle_state == 'unconfigured')
    absent = ['left_wrist', 'head_pitch']
    for joint in absent:
        command(sim, f'fault {joint} silence')
    try:
        # Discovery waits for the silent motors; ESTOP is answered meanwhile (not running yet).
        configuring = hardware.clients['request'].call_async(hardware.signed('configure'))
        estop = hardware.call('estop', Trigger.Request(), timeout_s=5.0)
        assert not configuring.done() and not estop.accepted, estop
        assert wait_until(configuring.done, 30.0) and not configuring.result().accepted
        assert 'left_wrist' in configuring.result().reason, configuring.result()
        status = hardware.wait_status(lambda s: s.faults)
        assert hardware.lifecycle_state() == 'unconfigured'
        assert list(status.missing_motors) == absent
        assert sorted(faults(status)) == [(Fault.CODE_MOTOR_MISSING, j) for j in sorted(absent)]
        reasons = {fault.joint: fault.reason for fault in status.faults}
        assert 'id 8 on can3' in reasons['left_wrist'] and 'allow_missing' in reasons['left_wrist']
        assert hardware.bus_loop_pid() is None
        time.sleep(0.3)  # the status stays informative after the bus loop has gone
        assert list(hardware.status.missing_motors) == absent
        hardware.node.set_parameters([Parameter('allow_missing', value=absent)])
        assert hardware.request('configure').accepted
        status = hardware.wait_status(lambda s: s.lifecycle_state == 'inactive')
        assert list(status.missing_motors) == absent and faults(status) == []
        assert hardware.request('cleanup').accepted
    finally:
        for joint in absent:
            command(sim, f'clear {joint}')
        hardware.node.set_parameters([Parameter('allow_missing', value=[''])])


def test_a_dead_bus_loop_is_reported_and_the_node_recovers_by_configuring_again(hardware):
    hardware.wait_status(lambda s: s.lifecycle_state == 'unconfigured')
    assert hardware.request('configure').accepted
    assert hardware.request('activate').accepted
    hardware.wait_status(lambda s: s.lifecycle_state == 'active' and not s.faults)
    os.kill(hardware.bus_loop_pid(), signal.SIGKILL)
    status = hardware.wait_status(lambda s: s.faults, 15.0)
    assert faults(status) == [(Fault.CODE_PROCESS_DIED, '')], status.faults
    # The node stays responsive and says what is wrong.
    for response in (
        hardware.request('reset', timeout_s=5.0),
        hardware.call('estop', Trigger.Request(), timeout_s=5.0),
    ):
        assert not response.accepted and 'bus loop' in response.reason, response
    # Leaving 'active' without a bus loop is an error transition that ends unconfigured...
    response = hardware.request('deactivate')
    assert not response.accepted and 'deactivate failed' in response.reason, response
    status = hardware.wait_status(lambda s: s.lifecycle_state == 'unconfigured')
    assert hardware.lifecycle_state() == 'unconfigured'
    assert [f.code for f in status.faults] == [Fault.CODE_PROCESS_DIED]
    # ... from where a fresh bus loop starts.
    assert hardware.request('configure').accepted
    status = hardware.wait_status(lambda s: s.lifecycle_state == 'inactive')
    assert faults(status) == [] and list(status.missing_motors) == []
