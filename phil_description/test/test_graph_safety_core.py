"""The ROS-free safety links of the graph: the graph key, the ESTOP word, the liveness monitor."""

import math
import os
import signal
import stat
import subprocess
import sys
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from phil_description.core.estop_word import EstopWord, estop_word_name, trigger_estop
from phil_description.core.graph_key import (
    GRAPH_KEY_ENV,
    GraphKey,
    GraphKeyError,
    ReplayGuard,
)
from phil_description.core.liveness import (
    GONE,
    RUNNING,
    STOPPED,
    LivenessMonitor,
    process_space,
    process_state,
)

KEY = GraphKey('0123456789abcdef0123')


# -- graph key -------------------------------------------------------------------------------


def test_a_signature_fits_its_bytes_and_its_key_only():
    signature = KEY.sign(b'chunk 7')
    assert KEY.verify(b'chunk 7', signature)
    assert not KEY.verify(b'chunk 8', signature)
    assert not GraphKey('another key of the graph').verify(b'chunk 7', signature)
    assert not KEY.verify(b'chunk 7', '')
    assert '0123456789abcdef' not in signature  # the key itself never travels


@given(st.integers(min_value=0, max_value=127))
def test_a_goal_id_made_with_the_key_is_owned_and_any_changed_bit_breaks_it(bit):
    made = KEY.goal_id()
    assert KEY.owns_goal_id(made) and len(made) == 16
    changed = bytearray(made)
    changed[bit // 8] ^= 1 << (bit % 8)
    assert not KEY.owns_goal_id(bytes(changed))
    assert not GraphKey('another key of the graph').owns_goal_id(made)
    assert not KEY.owns_goal_id(made[:15]) and not KEY.owns_goal_id(b'')


def test_a_goal_id_says_when_it_was_made_and_no_two_are_alike():
    before = time.time_ns()
    made = [KEY.goal_id() for _ in range(1000)]
    after = time.time_ns()
    times = [GraphKey.goal_made_ns(goal_id) for goal_id in made]
    assert before <= times[0] and times == sorted(set(times)) and times[-1] <= after + 1000
    assert all(KEY.owns_goal_id(goal_id) for goal_id in made)


def test_random_goal_ids_are_not_owned():
    # A foreign client's goal ids are random: one in 2**64 would pass.
    assert not any(KEY.owns_goal_id(os.urandom(16)) for _ in range(2000))


def test_the_key_comes_from_the_environment_with_a_clear_error_when_missing():
    assert GraphKey.from_environment({GRAPH_KEY_ENV: 'k' * 32}).verify(
        b'x', GraphKey('k' * 32).sign(b'x')
    )
    with pytest.raises(GraphKeyError, match=f'{GRAPH_KEY_ENV} is not set.*make run'):
        GraphKey.from_environment({})
    with pytest.raises(GraphKeyError, match='at least 16 characters'):
        GraphKey.from_environment({GRAPH_KEY_ENV: 'short'})
    assert len(GraphKey.generate()) >= 32 and GraphKey.generate() != GraphKey.generate()


def test_the_replay_guard_refuses_stale_and_repeated_requests():
    guard = ReplayGuard(tolerance_s=5.0)
    now = 1_000 * 10**9
    assert guard.check(now - 10**9, 'n1', now) == ''
    assert 'used before' in guard.check(now, 'n1', now)
    assert 'off this clock' in guard.check(now - 6 * 10**9, 'n2', now)
    assert 'off this clock' in guard.check(now + 6 * 10**9, 'n3', now)
    assert 'empty' in guard.check(now, '', now)
    for index in range(3000):  # the memory is bounded
        assert guard.check(now, f'm{index}', now) == ''


# -- ESTOP word ------------------------------------------------------------------------------


def test_two_graphs_in_one_domain_have_their_own_estop_words():
    """One graph's hardware node removes its word when it ends; a second graph in the same
    domain on the machine must keep its own (a test run beside another once lost ESTOP)."""
    from phil_description.core.graph_key import GraphKey

    secrets = GraphKey.generate(), GraphKey.generate()
    first, second = (GraphKey(secret) for secret in secrets)
    assert first.tag != second.tag and len(first.tag) == 12
    assert GraphKey(secrets[0]).tag == first.tag  # every node of one graph: the same name
    assert first.tag not in secrets[0]  # derived, the secret not shown
    names = {estop_word_name(33, '/hardware', key.tag) for key in (first, second)}
    assert len(names) == 2
    assert all(name.startswith('phil_estop_d33_hardware_g') for name in names)


def test_the_estop_word_counts_triggers_from_any_process(tmp_path):
    name = estop_word_name(42, '/hardware')
    assert name == 'phil_estop_d42_hardware'
    assert estop_word_name(3, '/robot_a/hardware') == 'phil_estop_d3_robot_a_hardware'
    with EstopWord.create(name, tmp_path) as word:
        assert stat.S_IMODE(os.stat(word.path).st_mode) == 0o600  # this user only
        assert word.count() == 0
        assert trigger_estop(name, tmp_path) == ''
        code = (
            'import sys; from pathlib import Path; from phil_description.core.estop_word '
            'import trigger_estop; '
            'sys.exit(bool(trigger_estop(sys.argv[1], Path(sys.argv[2]))))'
        )
        subprocess.run([sys.executable, '-c', code, name, str(tmp_path)], check=True, timeout=60)
        assert word.count() == 2
    assert not (tmp_path / name).exists()  # the creator removes it
    assert 'is the hardware node running' in trigger_estop(name, tmp_path)


def test_a_word_left_by_a_crashed_node_is_taken_over(tmp_path):
    left = EstopWord.create('phil_estop_d1_hardware', tmp_path)
    left.trigger()
    left._owner = False  # the crashed node never removed it
    left.close()
    with EstopWord.create('phil_estop_d1_hardware', tmp_path) as word:
        assert word.count() == 1  # readers compare with what they saw first
        word.trigger()
        assert word.count() == 2


# -- liveness --------------------------------------------------------------------------------


class Processes:
    """A stand-in for /proc: pid -> running, stopped or gone."""

    def __init__(self) -> None:
        self.states: dict[int, str] = {}

    def __call__(self, pid: int) -> str:
        return self.states.get(pid, GONE)


def test_a_dead_or_stopped_process_is_down_at_the_next_check_and_back_when_it_runs():
    processes = Processes()
    monitor = LivenessMonitor(
        ['score_player', '/hardware'],
        timeout_s=3.0,
        now_s=0.0,
        own='/behavior_planner',
        space='here',
        probe=processes,
    )
    processes.states.update({11: RUNNING, 12: RUNNING})
    monitor.beat('/score_player', 1.0, pid=11, space='here')
    monitor.beat('/hardware', 1.0, pid=12, space='here')
    assert monitor.check(1.05) == []
    processes.states[11] = STOPPED  # SIGSTOP
    del processes.states[12]  # SIGKILL
    down = {d.node: d for d in monitor.check(1.1)}
    assert down['/score_player'].reason == 'score_player is stopped (its process 11 does not run)'
    assert down['/hardware'].reason == 'hardware died (its process 12 is gone)'
    assert monitor.check(1.2) == []  # reported once
    processes.states[11] = RUNNING  # SIGCONT: its heartbeats come again
    assert monitor.beat('/score_player', 1.3, pid=11, space='here') is True
    assert monitor.alive('score_player', 1.3) and not monitor.alive('hardware', 1.3)
    processes.states[11] = STOPPED  # processes are looked at by check() only
    assert monitor.alive('score_player', 1.35)
    assert [d.node for d in monitor.check(1.4)] == ['/score_player']


def test_a_node_elsewhere_or_hung_is_down_after_its_timeout_of_silence():
    """A pid from another machine or pid namespace is never looked at; silence decides."""
    processes = Processes()
    monitor = LivenessMonitor(
        ['score_player', '/hardware'],
        timeout_s=0.5,
        now_s=0.0,
        own='/behavior_planner',
        space='here',
        probe=processes,
    )
    assert monitor.check(10.0) == []  # never seen, not required: not watched yet
    monitor.beat('/score_player', 10.0, pid=11, space='another machine')
    monitor.beat('hardware', 10.0)
    for step in range(1, 11):  # the rest of the graph is heard on
        monitor.beat('/tcp_bridge', 10.0 + 0.1 * step)
        monitor.beat('/behavior_planner', 10.0 + 0.1 * step)  # its own: proves nothing
    assert monitor.check(10.5) == []
    down = monitor.check(10.51)
    assert [d.node for d in down] == ['/hardware', '/score_player']
    assert monitor.check(11.0) == []  # reported once
    assert [d.node for d in monitor.down(11.0)] == ['/hardware', '/score_player']
    assert (
        'score_player stopped responding (no heartbeat for 1.00 s' in monitor.down(11.0)[1].reason
    )
    assert monitor.beat('/score_player', 11.0) is True
    assert monitor.alive('score_player', 11.1) and not monitor.alive('hardware', 11.1)
    assert monitor.beat('/unwatched', 11.1) is False and monitor.alive('/unwatched', 99.0)


def test_this_processes_state_is_read_from_proc():
    assert process_state(os.getpid()) == RUNNING
    assert process_state(2**22 + 12345) == GONE
    child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])
    try:
        os.kill(child.pid, signal.SIGSTOP)
        assert wait_until(lambda: process_state(child.pid) == STOPPED)
        os.kill(child.pid, signal.SIGCONT)
        assert wait_until(lambda: process_state(child.pid) == RUNNING)
        child.kill()
        assert wait_until(lambda: process_state(child.pid) == GONE)  # a zombie is gone too
    finally:
        child.kill()
        child.wait()
    assert '/' in process_space() and process_space() == process_space()


def wait_until(condition, timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_a_watcher_that_hears_nobody_waits_for_the_backstop_before_calling_anyone_down():
    """Every node silent at once is the watcher's own reception stalling (its middleware
    threads starved), not the graph dying: only a silence of three timeouts counts then."""
    monitor = LivenessMonitor(['a', 'b'], timeout_s=0.5, now_s=0.0, own='/me')
    monitor.beat('a', 1.0)
    monitor.beat('b', 1.0)
    monitor.beat('me', 1.4)  # its own heartbeat does not count as heard
    assert monitor.check(1.6) == [] and monitor.check(2.4) == []
    assert monitor.alive('a', 2.4)
    assert [d.node for d in monitor.check(2.51)] == ['/a', '/b']
    # Reception resumes: a's late heartbeats arrive, b stays silent -> b down at once.
    fresh = LivenessMonitor(['a', 'b'], timeout_s=0.5, now_s=0.0)
    fresh.beat('a', 1.0)
    fresh.beat('b', 1.0)
    assert fresh.check(1.9) == []
    fresh.beat('a', 1.9)
    assert [d.node for d in fresh.check(1.95)] == ['/b']


def test_a_required_node_that_never_appears_is_down_after_the_timeout():
    monitor = LivenessMonitor(['a', 'b'], 0.5, now_s=100.0, required=['b'])
    monitor.beat('a', 100.3)
    assert monitor.check(100.4) == []
    monitor.beat('a', 100.55)
    [down] = monitor.check(100.6)
    assert down.node == '/b' and down.last_seen_s == -math.inf
    assert 'b is not running' in down.reason
    with pytest.raises(ValueError, match='timeout_s'):
        LivenessMonitor([], 0.0, 0.0)
