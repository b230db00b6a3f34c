"""Benchmark of the command protocol: parse throughput and GET_STATUS round trips on loopback.

Prints one JSON object per line:

* `protocol_parse`: lines parsed per second for a mix of reference-client commands (valid and
  invalid), in-process.
* `tcp_get_status_rtt`: GET_STATUS round-trip time percentiles over 127.0.0.1, one client
  sending a request and waiting for the reply each time.
* `tcp_get_status_rtt_busy`: the same while four other clients (another process) flood the
  server with commands as fast as it reads them.

Usage: `python phil_control/bench/bench_tcp.py [--lines N] [--round-trips N]`.
"""

from __future__ import annotations

import argparse
import json
import platform
import socket
import statistics
import subprocess
import sys
import time

from phil_control.core.behavior import BehaviorConfig, StateMachine
from phil_control.core.protocol import ProtocolVocabulary, parse_line
from phil_control.tcp import MachineCommandHandler, TcpServer, TcpServerConfig
from phil_description.core import default_robot_model

MIX = ['START', 'READY', 'PLAY|BF', 'GESTURE|wave', 'HIT|closed hihat', 'LOOK|-30.0000|10.0000',
       'POSE|ready', 'MOVE|waist|10.0000|right_elbow|45.0000|head_pitch|-5.0000|2.0000',
       'PLAY_CTRL|speed|1.20', 'PLAY_CTRL|stop', 'GET_STATUS', 'MOVE|hip|10', 'LOOK|nan|0',
       'HIT|cowbell']


def emit(record: dict) -> None:
    record.setdefault('python', platform.python_version())
    print(json.dumps(record), flush=True)


def bench_parse(vocabulary: ProtocolVocabulary, count: int) -> None:
    lines = [MIX[index % len(MIX)] for index in range(count)]
    start = time.perf_counter()
    for line in lines:
        parse_line(line, vocabulary)
    elapsed = time.perf_counter() - start
    emit({'bench': 'protocol_parse', 'lines': count, 'seconds': round(elapsed, 6),
          'lines_per_s': round(count / elapsed), 'us_per_line': round(1e6 * elapsed / count, 3)})


def round_trips(address: tuple[str, int], count: int) -> list[float]:
    with socket.create_connection(address, timeout=10.0) as client:
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        samples = []
        for _ in range(count):
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

    return {'bench': name, 'round_trips': len(samples),
            'median_us': round(1e6 * statistics.median(samples), 1),
            'p90_us': percentile(0.90), 'p99_us': percentile(0.99),
            'max_us': round(1e6 * ordered[-1], 1)}


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--lines', type=int, default=200_000)
    parser.add_argument('--round-trips', type=int, default=1000)
    args = parser.parse_args()

    model = default_robot_model()
    vocabulary = ProtocolVocabulary.from_robot_model(model, look_joints=('head_yaw',
                                                                         'head_pitch'))
    bench_parse(vocabulary, args.lines)

    machine = StateMachine(BehaviorConfig(pose_names=tuple(model.poses)))
    handler = MachineCommandHandler(machine, commanded_rad=lambda: model.poses['home'])
    with TcpServer(handler, vocabulary, TcpServerConfig(port=0)) as server:
        emit(summary('tcp_get_status_rtt', round_trips(server.address, args.round_trips)))
        host, port = server.address
        flooder = subprocess.Popen([sys.executable, '-c', FLOODER, host, str(port), '4'])
        try:
            deadline = time.monotonic() + 10.0
            while server.client_count < 5 and time.monotonic() < deadline:
                time.sleep(0.01)
            emit(summary('tcp_get_status_rtt_busy',
                         round_trips(server.address, args.round_trips)))
        finally:
            flooder.kill()
            flooder.wait(10.0)

if __name__ == '__main__':
    main()
