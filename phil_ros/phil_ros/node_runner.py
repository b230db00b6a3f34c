"""The main() of every Phil node: init, spin, shut down cleanly on Ctrl-C, on an external
shutdown, or when the graph is told to shut down (QUIT; :mod:`phil_ros.graph_shutdown`).

Ctrl-C and SIGTERM are requests, not exceptions: our own handler records them and the main
thread leaves the spin between two callbacks, shuts the executor down, runs each node's own
teardown (its ``release``) and ends the process without destroying the DDS entities (see
:func:`_end_process`). rclpy's handlers are not installed: a KeyboardInterrupt raised wherever
the main thread happens to be (halfway through starting the bus loop, say) would leave things half
built, and the context they shut down from inside the signal left the executor's open wait to
be released after the nodes and the context were gone (Jazzy's rclpy then crashed at exit).

A node follows only a graph shutdown signed with the graph key. (Its heartbeat is its own:
:mod:`phil_ros.heartbeats`.)

Written without ``with rclpy.init()`` so it also runs on Humble, where init is not a context
manager.
"""

from __future__ import annotations

import contextlib
import faulthandler
import gc
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Mapping
from typing import NoReturn

import rclpy
from rclpy.context import Context
from rclpy.exceptions import ParameterException
from rclpy.executors import Executor, ExternalShutdownException
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions

from phil_description.core.exit_status import CONFIG_ERROR_EXIT, STACK_DUMP_SIGNAL
from phil_description.core.graph_key import GraphKey, GraphKeyError
from phil_description.core.parent_process import parent_gone_check
from phil_ros.executors import SHUTDOWN_POLL_PERIOD_S, fastest_executor
from phil_ros.graph_shutdown import exit_on_graph_shutdown

# Longest teardown after spinning: the hardware node stops its bus loop (at most ~15 s) within it.
TEARDOWN_TIMEOUT_S = 20.0
#: What a refused configuration raises while a node is built: our own checks (ValueError,
#: naming the parameter and what is allowed) and rclpy's (a value of the wrong type).
CONFIG_ERRORS = (ValueError, ParameterException)


class StopSignals:
    """Ctrl-C and SIGTERM recorded as a stop request instead of raised as KeyboardInterrupt.

    Installed before ``rclpy.init``, which is told to install none of its own; a signal that
    comes before rclpy has a context is still seen (``received``). The first one is the
    request; a second one (a person pressing Ctrl-C again at a node that does not stop) ends
    the process at once (the system's default action; the bus loop then holds the robot, as
    when the node dies).
    """

    def __init__(self) -> None:
        self.received = False

    def install(self) -> StopSignals:
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, self._note)
        return self

    def _note(self, signum: int, frame: object) -> None:
        self.received = True  # a plain store: safe whatever the main thread was doing
        for stop_signal in (signal.SIGINT, signal.SIGTERM):
            signal.signal(stop_signal, signal.SIG_DFL)


def run_node(
    make_node: Callable[[], Node],
    args: list[str] | None = None,
    make_executor: Callable[[], Executor] = fastest_executor,
    graph_shutdown: bool = True,
) -> None:
    """Create the node after ``rclpy.init`` and spin it until shutdown.

    The node follows the graph shutdown (``graph_shutdown``; needs ``PHIL_GRAPH_KEY``, without
    it the node says so and runs until stopped). Once spinning ends as asked, the node's
    ``release`` (if it has one) does its own teardown and the process ends with status 0:
    this does not return. Teardown has ``TEARDOWN_TIMEOUT_S``; if it hangs, the process prints
    every thread's stack to stderr and exits with status 1 (see :func:`exit_if_stuck`). After
    an error the nodes and the context are destroyed (``destroy_node``) and the error raised.
    """
    run_nodes({'': make_node}, args, make_executor, graph_shutdown)


def run_nodes(
    makers: Mapping[str, Callable[[], Node]],
    args: list[str] | None = None,
    make_executor: Callable[[], Executor] = fastest_executor,
    graph_shutdown: bool = True,
) -> None:
    """:func:`run_node` for several nodes in one process, on ONE executor: ``makers`` maps
    each node's name to its factory (built in that order, released in reverse order).

    A configuration refused by any node ends the process with status 78, its line naming the
    node (the nodes built before it are destroyed). Spinning ends once every node has
    followed the graph shutdown (each runs its own ``on_graph_shutdown``), on Ctrl-C, or once
    the process that started it is gone (:mod:`phil_description.core.parent_process`).
    """
    faulthandler.enable()  # a crash in rclpy's C code still names the Python line
    faulthandler.register(STACK_DUMP_SIGNAL, all_threads=True)  # where a hung node is
    stop_signals = StopSignals().install()
    parent_gone = parent_gone_check()
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    context = rclpy.get_default_context()
    nodes: list[Node] = []
    executor = None
    stopped = False  # spinning ended as asked: graph shutdown, Ctrl-C, the parent gone
    try:
        try:
            for name, make_node in makers.items():
                nodes.append(_build_node(name, make_node))
            requests = [_follow_graph_shutdown(node, graph_shutdown) for node in nodes]
            executor = make_executor()
            for node in nodes:
                executor.add_node(node)
            freeze_start_up_objects()
            _spin_until_all(
                executor, context, requests, lambda: stop_signals.received or parent_gone()
            )
            stopped = True
        finally:
            # Armed before the handlers below: clearing a caught exception can already free
            # rcl handles (its traceback holds the frames that own them).
            exit_if_stuck(TEARDOWN_TIMEOUT_S)
    except ExternalShutdownException:
        pass
    except Exception:
        # A context shut down from outside (rclpy.shutdown in the same process) fails whatever
        # was using it at that moment with RCLError. Only then is it a normal stop.
        if rclpy.ok():
            raise
    finally:
        if executor is not None:
            _shut_down(executor)
        if stopped:
            _end_process(nodes)
        # After an error: everything torn down, so the error's report comes out whole.
        while nodes:
            _destroy(nodes.pop())
        rclpy.try_shutdown()
        # The DDS participant goes with the context's handle, here where the guard watches:
        # the frozen start-up objects would keep the Context to the interpreter's exit, where
        # Fast DDS deleted it unguarded (a Jazzy node outlived its killed launcher).
        context.destroy()
        executor = None  # freed while the guard still watches
        faulthandler.cancel_dump_traceback_later()


def _end_process(nodes: list[Node]) -> NoReturn:
    """Each node's own teardown (its ``release``, newest node first), then the end of the
    process with status 0, without destroying the nodes' DDS entities or the participant.

    Fast DDS can deadlock destroying them while the rest of the graph leaves at the same
    moment, an open middleware bug (eProsima/Fast-DDS#6193, #6502: entity destruction against
    remote-participant removal). After QUIT a score player hung so for 20 s in rclpy's
    ``destroy_node`` until the teardown guard ended it with status 1, and the graph's exit
    was reported as failed. The system frees what the process held; the other participants
    drop this one when its lease runs out. A ``release`` that hangs still meets the guard.
    """
    while nodes:
        release = getattr(nodes.pop(), 'release', None)
        if release is not None:
            release()
    faulthandler.cancel_dump_traceback_later()
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # closed, or a reader that left
            stream.flush()
    os._exit(0)


def _shut_down(executor: Executor) -> None:
    """Shut the executor down before its nodes are destroyed. Between two spins rclpy keeps
    the wait of the last one open (a suspended generator holding every entity's handle and the
    context's); closed only when the executor was freed, after the nodes and the context, it
    released handles already destroyed, and Jazzy's rclpy crashed at exit now and then (twice
    in two runs of the Jazzy suite: a SIGSEGV and a corrupt heap)."""
    try:
        executor.shutdown(timeout_sec=TEARDOWN_TIMEOUT_S)
    except Exception:  # the context was shut down from outside: nothing left to end
        if rclpy.ok():
            raise


def _destroy(node: Node) -> None:
    """Destroy ``node`` and, first, its action servers and clients. rclpy's ``destroy_node``
    leaves waitables alone, so their handles lived on until the interpreter's exit freed
    them after the context, in no set order: Jazzy's score player crashed there (SIGSEGV
    after QUIT, once in a suite run)."""
    for waitable in list(node.waitables):  # destroy() removes it from the node
        destroy = getattr(waitable, 'destroy', None)
        if destroy is not None:
            destroy()
    node.destroy_node()


def _build_node(name: str, make_node: Callable[[], Node]) -> Node:
    """``make_node()``; a refused configuration ends the process with status 78 and one line
    (``name`` says which node of several refused it)."""
    try:
        return make_node()
    except CONFIG_ERRORS as error:
        if not rclpy.ok():
            raise  # the context was shut down from outside while it was being built
        # One line, no traceback: the launcher shows it and stops the graph.
        which = f'{name}: ' if name else ''
        sys.stderr.write(f'{which}configuration refused: {error}\n')
        sys.stderr.flush()
        raise SystemExit(CONFIG_ERROR_EXIT) from None


def _follow_graph_shutdown(node: Node, graph_shutdown: bool) -> threading.Event:
    """The event the graph shutdown sets for ``node`` (never set without ``graph_shutdown``
    or without ``PHIL_GRAPH_KEY``: the node then says so and runs until stopped)."""
    requested = threading.Event()
    if not graph_shutdown:
        return requested
    try:
        key = GraphKey.from_environment()
    except GraphKeyError as error:
        node.get_logger().warning(f'not following the graph shutdown: {error}')
    else:
        exit_on_graph_shutdown(node, requested, key, getattr(node, 'on_graph_shutdown', None))
    return requested


def _spin_until_all(
    executor: Executor,
    context: Context,
    requests: list[threading.Event],
    signalled: Callable[[], bool],
) -> None:
    """Spin until every one of ``requests`` is set, ``signalled()`` is true or ``context``
    shuts down (:func:`phil_ros.executors.spin_until` for several nodes)."""
    while context.ok() and not all(r.is_set() for r in requests) and not signalled():
        executor.spin_once(timeout_sec=SHUTDOWN_POLL_PERIOD_S)


def freeze_start_up_objects() -> None:
    """Collect once, then move every object alive (imports, the model, the node) out of the
    garbage collector's reach. They live as long as the process, yet each full collection
    walked them all: 35-167 ms per full collection in these nodes, a stall for whatever
    command or chunk was in flight."""
    gc.collect()
    gc.freeze()


def exit_if_stuck(timeout_s: float) -> None:
    """End the process (status 1, every thread's stack on stderr) unless
    ``faulthandler.cancel_dump_traceback_later()`` is called within ``timeout_s``.

    The watchdog is faulthandler's C thread, so it acts even when the hang holds the GIL, as
    rclpy's teardown does while Fast DDS destroys a participant: that can deadlock against a
    discovery callback when the whole graph stops at once, spinning forever on a CPU.
    """
    faulthandler.dump_traceback_later(timeout_s, exit=True)
