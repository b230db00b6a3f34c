"""Benchmark of the command protocol: parse throughput and GET_STATUS round trips on loopback.

Prints one JSON object per line:

* `protocol_parse`: lines parsed per second for a mix of reference-client commands (valid and
  invalid), in-process.
* `tcp_get_status_rtt`: GET_STATUS round-trip time percentiles over 127.0.0.1, one client
  sending a request and waiting for the reply each time.
* `tcp_get_status_rtt_busy`: the same while four other clients (another process) flood the
  server with commands as fast as it reads them.
* `tcp_get_status_rtt_flood`: the same while one other client (another process, acknowledged
  mode) pipelines 1000 commands in one write, reads its 1000 replies and starts again; with
  p50/p99 ratios against the same round trip without the flood, measured just before in the
  same run (`baseline_*`), and the flood's own pace (`flood_lines_per_s`). Measured for two
  handlers: `machine` (the state machine, as above) and `planner` (each command handed to one
  other thread that spends `--planner-cpu-us` of Python time on it and answers, as tcp_bridge's
  ROS executor does: the work that competes with the server for the interpreter lock).

Usage: `python phil_control/bench/bench_tcp.py [--lines N] [--round-trips N] [--planner-cpu-us N]`.
"""

from __future__ import annotations

import argparse
import json
import platform
import queue
import socket
import statistics
import subprocess
import sys
import threading
import time

from phil_control.core.behavior import BehaviorConfig, StateMachine
from phil_control.core.protocol import LOOK_JOINTS, ProtocolVocabulary, parse_line
from phil_control.tcp import HandlerReply, MachineCommandHandler, TcpServer, TcpServerConfig
from phil_description.core import default_robot_model

MIX = [
    'START',
    'READY',
    'PLAY|BF',
    'GESTURE|wave',
    'HIT|closed hihat',
    'LOOK|-30.0000|10.0000',
    'POSE|ready',
    'MOVE|waist|10.0000|right_elbow|45.0000|head_pitch|-5.0000|2.0000',
    'PLAY_CTRL|speed|1.20',
    'PLAY_CTRL|stop',
    'GET_STATUS',
    'MOVE|hip|10',
    'LOOK|nan|0',
    'HIT|cowbell',
]


def emit(record: dict) -> None:
    record.setdefault('python', platform.python_version())
    print(json.dumps(record), flush=True)


def bench_parse(vocabulary: ProtocolVocabulary, count: int) -> None:
    lines = [MIX[index % len(MIX)] for index in range(count)]
    start = time.perf_counter()
    for line in lines:
        parse_line(line, vocabulary)
    elapsed = time.perf_counter() - start
    emit(
        {
            'bench': 'protocol_parse',
            'lines': count,
            'seconds': round(elapsed, 6),
            'lines_per_s': round(count / elapsed),
            'us_per_line': round(1e6 * elapsed / count, 3),
        }
    )


def round_trips(address: tuple[str, int], count: int, limit_s: float = 30.0) -> list[float]:
    deadline = time.monotonic() + limit_s
    with socket.create_connection(address, timeout=10.0) as client:
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        samples = []
        while len(samples) < count and time.monotonic() < deadline:
            start = time.perf_counter()
            client.sendall(b'GET_STATUS\n')
            reply = b''
            while not reply.endswith(b'\n'):
                chunk = client.recv(4096)
                if not chunk:
                    raise ConnectionError('server closed the connection')
                reply += chunk
            samples.append(time.perf_counter() - start)
        return samples


def summary(name: str, samples: list[float]) -> dict:
    ordered = sorted(samples)

    def percentile(fraction: float) -> float:
        return round(1e6 * ordered[min(len(ordered) - 1, int(fraction * len(ordered)))], 1)

    return {
        'bench': name,
        'round_trips': len(samples),
        'median_us': round(1e6 * statistics.median(samples), 1),
        'p90_us': percentile(0.90),
        'p99_us': percentile(0.99),
        'max_us': round(1e6 * ordered[-1], 1),
    }


# Flooding clients run in their own process so they do not share the interpreter lock with the
# server thread being measured; they end by themselves after 60 s at the latest.
FLOODER = """
import socket, sys, threading, time
address = (sys.argv[1], int(sys.argv[2]))
burst = b'HIT|snare\\nLOOK|0|0\\nMOVE|hip|1\\n' * 50
deadline = time.monotonic() + 60

def flood():
    try:
        with socket.create_connection(address, timeout=10) as sock:
            while time.monotonic() < deadline:
                sock.sendall(burst)
    except OSError:
        pass

threads = [threading.Thread(target=flood) for _ in range(int(sys.argv[3]))]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
"""


# One client in acknowledged mode pipelining `count` commands in one write, reading its replies,
# again and again until its standard input closes (or 60 s); then it prints its pace as JSON.
PIPELINER = """
import json, select, socket, sys, time
address, count = (sys.argv[1], int(sys.argv[2])), int(sys.argv[3])
mix = [b'HIT|snare\\n', b'LOOK|0|0\\n', b'MOVE|hip|1\\n', b'GESTURE|wave\\n']
burst = b''.join(mix[index % len(mix)] for index in range(count))
deadline = time.monotonic() + 60
floods, started = 0, time.monotonic()
with socket.create_connection(address, timeout=30) as sock:
    sock.sendall(b'PROTOCOL|2\\n')
    pending = 1
    while time.monotonic() < deadline:
        if floods and select.select([sys.stdin], [], [], 0)[0]:
            break
        sock.sendall(burst)
        pending += count
        if floods == 0:
            print('flooding', flush=True)
        while pending:
            data = sock.recv(65536)
            if not data:
                raise SystemExit('server closed the connection')
            pending -= data.count(b'\\n')
        floods += 1
elapsed = time.monotonic() - started
print(json.dumps({'floods': floods, 'lines_per_s': round(floods * count / elapsed)}), flush=True)
"""


class PlannerLikeHandler:
    """Hands each command to one thread that spends `cpu_s` of Python time on it, then answers
    with `inner`'s reply (tcp_bridge's ROS executor, reduced to its interpreter-lock load)."""

    def __init__(self, inner: MachineCommandHandler, cpu_s: float) -> None:
        self._inner = inner
        self._cpu_s = cpu_s
        self._requests: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while (request := self._requests.get()) is not None:
            command, client_id, answer, done = request
            end = time.perf_counter() + self._cpu_s
            while time.perf_counter() < end:
                pass
            answer.append(self._inner.handle(command, client_id))
            done.set()

    def handle(self, command, client_id: int) -> HandlerReply:
        answer: list[HandlerReply] = []
        done = threading.Event()
        self._requests.put((command, client_id, answer, done))
        return answer[0] if done.wait(10.0) else HandlerReply(False, 'no answer')

    def status_line(self) -> str:
        return self._inner.status_line()

    def close(self) -> None:
        self._requests.put(None)
        self._thread.join(10.0)


# The server's own speed: its input rates (max_lines_per_s, max_commands_per_s) would measure
# the pacing instead.
UNPACED = {'max_lines_per_s': 0.0, 'max_commands_per_s': 0.0}


def bench_flood(
    name: str, handler, vocabulary: ProtocolVocabulary, count: int, flood_lines: int
) -> None:
    """GET_STATUS round trips without, then with, another client pipelining commands."""
    with TcpServer(handler, vocabulary, TcpServerConfig(port=0, **UNPACED)) as server:
        baseline = summary('baseline', round_trips(server.address, count))
        host, port = server.address
        flooder = subprocess.Popen(
            [sys.executable, '-c', PIPELINER, host, str(port), str(flood_lines)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            if flooder.stdout.readline().strip() != 'flooding':
                raise RuntimeError('the flooding client did not start')
            flooded = summary('tcp_get_status_rtt_flood', round_trips(server.address, count))
            flooder.stdin.close()
            pace = json.loads(flooder.stdout.readline() or '{}')
        finally:
            if flooder.poll() is None:
                flooder.kill()
            flooder.wait(10.0)
    emit(
        {
            **flooded,
            'handler': name,
            'flood_lines': flood_lines,
            'floods': pace.get('floods'),
            'flood_lines_per_s': pace.get('lines_per_s'),
            'baseline_median_us': baseline['median_us'],
            'baseline_p99_us': baseline['p99_us'],
            'p50_ratio': round(flooded['median_us'] / baseline['median_us'], 2),
            'p99_ratio': round(flooded['p99_us'] / baseline['p99_us'], 2),
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--lines', type=int, default=200_000)
    parser.add_argument('--round-trips', type=int, default=1000)
    parser.add_argument('--flood-lines', type=int, default=1000)
    parser.add_argument('--planner-cpu-us', type=float, default=300.0)
    args = parser.parse_args()

    model = default_robot_model()
    vocabulary = ProtocolVocabulary.from_robot_model(model, look_joints=LOOK_JOINTS)
    bench_parse(vocabulary, args.lines)

    machine = StateMachine(BehaviorConfig(pose_names=tuple(model.poses)))
    handler = MachineCommandHandler(machine, commanded_rad=lambda: model.poses['home'])
    with TcpServer(handler, vocabulary, TcpServerConfig(port=0, **UNPACED)) as server:
        emit(summary('tcp_get_status_rtt', round_trips(server.address, args.round_trips)))
        host, port = server.address
        flooder = subprocess.Popen([sys.executable, '-c', FLOODER, host, str(port), '4'])
        try:
            deadline = time.monotonic() + 10.0
            while server.client_count < 5 and time.monotonic() < deadline:
                time.sleep(0.01)
            emit(summary('tcp_get_status_rtt_busy', round_trips(server.address, args.round_trips)))
        finally:
            flooder.kill()
            flooder.wait(10.0)

    bench_flood('machine', handler, vocabulary, args.round_trips, args.flood_lines)
    planner = PlannerLikeHandler(handler, args.planner_cpu_us * 1e-6)
    try:
        bench_flood('planner', planner, vocabulary, args.round_trips, args.flood_lines)
    finally:
        planner.close()


if __name__ == '__main__':
    main()
