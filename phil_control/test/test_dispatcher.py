"""In-process rclpy test of the planner's Dispatcher: when a motion goal leaves, and in what
order goals and service calls reach the rest of the graph (a stand-in trajectory generator
with a real action server and halt service, and a stand-in hardware request service). The
dispatcher is fed on its executor's thread, as the planner's callbacks feed it."""

from __future__ import annotations

import threading
import time

import pytest

rclpy = pytest.importorskip('rclpy')

from rclpy.action import ActionServer  # noqa: E402
from rclpy.callback_groups import ReentrantCallbackGroup  # noqa: E402
from rclpy.executors import MultiThreadedExecutor, SingleThreadedExecutor  # noqa: E402

from phil_control.behavior_planner import motion_servers  # noqa: E402
from phil_control.behavior_planner.dispatcher import Dispatcher  # noqa: E402
from phil_control.behavior_planner.goals import Completion  # noqa: E402
from phil_control.core.behavior import actions as act  # noqa: E402
from phil_control.core.profiles import Profile  # noqa: E402
from phil_description.core.graph_key import GraphKey  # noqa: E402
from phil_msgs.action import Look  # noqa: E402
from phil_msgs.srv import HardwareRequest, Trigger  # noqa: E402
from phil_ros.testing import DISCOVERY_TIMEOUT_S, ros_test_context  # noqa: E402

WAIT_S = 10.0
LOOK = act.LookAt(pan_rad=0.1, tilt_rad=0.05, duration_s=0.2, profile=Profile.COSINE)


class StandInGenerator:
    """The trajectory generator's look action and halt service; records what arrives in order.
    ``hold_halt`` keeps a halt request unanswered until it is cleared."""

    def __init__(self, node) -> None:
        self.arrivals: list[str] = []
        self.hold_halt = threading.Event()
        self.hold_look = threading.Event()  # a look runs until it is cleared
        self.halt_arrived = threading.Event()
        group = ReentrantCallbackGroup()
        self._look = ActionServer(
            node,
            Look,
            '/trajectory_generator/look',
            self._execute,
            goal_callback=self._on_goal,
            callback_group=group,
        )
        node.create_service(
            Trigger, '/trajectory_generator/halt', self._on_halt, callback_group=group
        )
        # The hardware's request service, here so one executor serves both stand-ins.
        self.reset_arrived = threading.Event()
        node.create_service(
            HardwareRequest, '/hardware/request', self._on_request, callback_group=group
        )

    def _on_goal(self, goal):
        self.arrivals.append(f'look {goal.pan_rad:.2f}')
        return rclpy.action.GoalResponse.ACCEPT

    def _execute(self, handle):
        deadline = time.monotonic() + WAIT_S
        while self.hold_look.is_set() and time.monotonic() < deadline:
            time.sleep(0.01)
        handle.succeed()
        return Look.Result(success=True)

    def _on_halt(self, _request, response):
        self.arrivals.append('halt')
        self.halt_arrived.set()
        deadline = time.monotonic() + WAIT_S
        while self.hold_halt.is_set() and time.monotonic() < deadline:
            time.sleep(0.01)
        response.accepted = True
        return response

    def _on_request(self, request, response):
        self.arrivals.append(request.request)
        if request.request == 'reset':
            self.reset_arrived.set()
        response.accepted, response.reason = False, 'refused by the stand-in'
        return response


class OnExecutor:
    """The dispatcher's calls, made on its executor's thread (and waited for)."""

    def __init__(self, links: Dispatcher, executor) -> None:
        self._links = links
        self._executor = executor
        self.thread_name = ''  # the executor's thread, once a call has run there

    def __getattr__(self, name: str):
        attribute = getattr(self._links, name)
        if not callable(attribute):
            return attribute

        def on_executor(*args, **kwargs):
            def call():
                self.thread_name = threading.current_thread().name
                return attribute(*args, **kwargs)

            task = self._executor.create_task(call)
            deadline = time.monotonic() + WAIT_S
            while not task.done() and time.monotonic() < deadline:
                time.sleep(0.001)
            assert task.done(), f'{name} did not run on the executor'
            return task.result()

        return on_executor


@pytest.fixture
def graph():
    """(links, generator, events) with both nodes spinning; the planner side single-threaded
    like the behavior planner, the stand-in on its own executor so it may hold a request."""
    with ros_test_context() as context:
        planner = rclpy.create_node('dispatcher_test', context=context)
        server = rclpy.create_node('stand_in_generator', context=context)
        generator = StandInGenerator(server)
        failures: list[str] = []
        generator.shut_down = threading.Event()
        generator.plays_ended = []
        events = {
            'motion_finished': lambda: None,
            'start_completed': lambda: None,
            'play_ended': lambda *args: generator.plays_ended.append(args),
            'failed': failures.append,
            'shutdown': generator.shut_down.set,
        }
        links = Dispatcher(
            planner, ('head_yaw', 'head_pitch'), {}, events, GraphKey.from_environment()
        )
        executors = [
            SingleThreadedExecutor(context=context),
            MultiThreadedExecutor(num_threads=3, context=context),
        ]
        executors[0].add_node(planner)
        executors[1].add_node(server)
        threads = [threading.Thread(target=executor.spin, daemon=True) for executor in executors]
        for thread in threads:
            thread.start()
        try:
            assert links._servers._motion[Look].wait_for_server(timeout_sec=DISCOVERY_TIMEOUT_S)
            assert links._hardware._request.wait_for_service(timeout_sec=DISCOVERY_TIMEOUT_S)
            yield OnExecutor(links, executors[0]), generator, failures
        finally:
            generator.hold_halt.clear()
            generator.hold_look.clear()
            links.stop()  # the executors are shut down next: no call races it
            for executor in executors:
                executor.shutdown()
            planner.destroy_node()
            server.destroy_node()


def hold_the_dispatcher(links, generator) -> None:
    """Leave the dispatcher waiting for a halt answer (as for a stopped node) until cleared."""
    generator.hold_halt.set()
    links.submit((act.HaltMotion(),))
    assert generator.halt_arrived.wait(WAIT_S)


def test_a_motion_leaves_from_the_executor_thread_without_a_hand_over(graph):
    links, generator, failures = graph
    client = links._servers._motion[Look]
    senders: list[str] = []
    send = client.send_goal_async

    def recording_send(*args, **kwargs):
        senders.append(threading.current_thread().name)
        return send(*args, **kwargs)

    client.send_goal_async = recording_send
    completion = Completion()
    links.submit((LOOK,), completion)
    assert completion.done.wait(WAIT_S)
    assert completion.success, completion.reason
    assert senders == [links.thread_name]  # no worker thread in between
    assert generator.arrivals == ['look 0.10']
    assert failures == []


def test_a_motion_decided_behind_a_pending_step_waits_its_turn(graph):
    links, generator, failures = graph
    hold_the_dispatcher(links, generator)
    completion = Completion()
    links.submit((LOOK,), completion)
    time.sleep(0.3)  # a goal sent out of turn would arrive meanwhile
    assert generator.arrivals == ['halt']
    generator.hold_halt.clear()
    assert completion.done.wait(WAIT_S)
    assert completion.success, completion.reason
    assert generator.arrivals == ['halt', 'look 0.10']
    assert failures == []


def test_a_motion_whose_server_is_missing_fails_with_the_reason(graph, monkeypatch):
    links, _generator, failures = graph
    monkeypatch.setattr(motion_servers, 'STEP_TIMEOUT_S', 0.5)
    completion = Completion()
    links.submit((act.PerformGesture(name='nod'),), completion)
    assert completion.done.wait(WAIT_S)
    assert not completion.success
    assert 'gesture is not available' in completion.reason
    assert failures == [completion.reason]


def test_a_reset_reaches_the_hardware_while_the_dispatcher_waits_on_a_stopped_node(graph):
    """A latch's halt goes to a node that does not answer (stopped): the RESET decided after it
    must not wait behind it, or the robot stays latched once the node is back."""
    links, generator, failures = graph
    hold_the_dispatcher(links, generator)
    links.submit((act.ResetHardware(),))
    assert generator.reset_arrived.wait(WAIT_S), generator.arrivals
    assert generator.arrivals == ['halt', 'reset']
    assert links.motions_queued == 1  # the halt is still unanswered
    generator.hold_halt.clear()
    assert failures == []


def test_a_motion_queued_before_a_latch_never_moves_the_robot_after_it(graph):
    """ESTOP while a LOOK waits behind an unanswered step, then RESET: the LOOK was decided
    before the latch, so it is dropped with the reason instead of moving the robot."""
    links, generator, failures = graph
    hold_the_dispatcher(links, generator)
    completion = Completion()
    links.submit((LOOK,), completion)
    links.drop_earlier_motions('emergency stop')
    links.submit((act.ResetHardware(),))
    assert generator.reset_arrived.wait(WAIT_S)
    generator.hold_halt.clear()
    assert completion.done.wait(WAIT_S)
    assert not completion.success
    assert 'dropped before it started: emergency stop' in completion.reason
    later = Completion()
    links.submit((LOOK,), later)  # decided after the latch: it runs
    assert later.done.wait(WAIT_S)
    assert later.success, later.reason
    assert generator.arrivals == ['halt', 'reset', 'look 0.10']
    assert failures == []


def test_a_motion_queued_before_a_shutdown_without_motion_never_starts(graph):
    """QUIT during START: the START motion behind the activation must not run before the
    torque goes off."""
    links, generator, failures = graph
    hold_the_dispatcher(links, generator)
    completion = Completion()
    links.submit((LOOK,), completion)
    links.submit((act.Shutdown(),))
    generator.hold_halt.clear()
    assert completion.done.wait(WAIT_S)
    assert 'dropped before it started: the controller shuts down' in completion.reason
    assert generator.shut_down.wait(WAIT_S)
    assert generator.arrivals == ['halt']
    assert failures == []


def test_pause_and_speed_of_a_play_held_behind_a_motion_apply_to_it(graph):
    """PLAY waits for the running motions to end; a PAUSE meanwhile must not go to the score
    player (it has no play yet, the pause would be lost): the play ends paused where it would
    have begun, so RESUME starts it there."""
    links, generator, failures = graph
    generator.hold_look.set()
    links.submit((LOOK,))
    wait_until_held = time.monotonic() + WAIT_S
    play = Completion()
    links.submit((act.StartPlay(play_id='rock'),), play)
    while links._held is None and time.monotonic() < wait_until_held:
        time.sleep(0.01)
    links.submit((act.SetPlaySpeed(speed=1.5),))
    links.submit((act.PausePlay(),))
    assert play.done.wait(WAIT_S)
    assert not play.success and play.reason == 'paused before it started'
    ((play_id, result, success, reason),) = generator.plays_ended
    assert (play_id, result.resume_valid, result.resume_bar) == ('rock', True, 1)
    generator.hold_look.clear()
    assert wait_for_idle(links)
    assert links._held is None  # nothing is sent once the look has ended
    assert failures == []


def test_a_pause_reaches_a_play_queued_behind_a_held_hit(graph, monkeypatch):
    """LOOK, HIT, PLAY, PAUSE back to back (the brain sends them so): the HIT waits for the
    LOOK, the PLAY behind it; the PAUSE must not wait behind both (a RESUME after it would
    time out): the queued play ends paused at once, and the HIT still follows the LOOK."""
    links, generator, failures = graph
    generator.hold_look.set()
    links.submit((LOOK,))
    hit = Completion()
    links.submit((act.StrikeInstrument(instrument='snare'),), hit)
    deadline = time.monotonic() + WAIT_S
    while links._held is None and time.monotonic() < deadline:
        time.sleep(0.01)
    play = Completion()
    links.submit((act.StartPlay(play_id='rock', start_bar=3),), play)
    links.submit((act.PausePlay(),))
    assert play.done.wait(WAIT_S)
    assert play.reason == 'paused before it started'
    ((play_id, result, _success, _reason),) = generator.plays_ended
    assert (play_id, result.resume_bar) == ('rock', 3)
    assert not hit.done.is_set()  # still waiting for the look
    # No hit server here: the HIT's wait for one is short (the LOOK's goal had the usual one).
    monkeypatch.setattr(motion_servers, 'STEP_TIMEOUT_S', 0.5)
    generator.hold_look.clear()
    assert hit.done.wait(WAIT_S)  # sent once the look ended: it fails, nobody serves hits
    assert 'hit is not available' in hit.reason, hit.reason
    assert failures == [hit.reason]


def wait_for_idle(links) -> bool:
    deadline = time.monotonic() + WAIT_S
    while links.motions_queued and time.monotonic() < deadline:
        time.sleep(0.01)
    return links.motions_queued == 0
