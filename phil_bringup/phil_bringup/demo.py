"""`make demo` / `tools/run.sh --demo SCORE`: play one score end to end like the brain would
(START, READY, PLAY, QUIT over TCP), then print the hit-timing summary from the run's logs.
"""

from __future__ import annotations

import socket
import sys
import time
from pathlib import Path

PLAY_TIMEOUT_S = 600.0


class BrainConnection:
    """One TCP connection in acknowledged mode."""

    def __init__(self, port: int, host: str = '127.0.0.1', timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                self._socket = socket.create_connection((host, port), timeout=10.0)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        self._reader = self._socket.makefile('r', encoding='utf-8', newline='\n')
        self.send('PROTOCOL|2')

    def send(self, line: str) -> str:
        self._socket.sendall(line.encode() + b'\n')
        return self.read_line()

    def read_line(self) -> str:
        """The next line the server sent."""
        return self._reader.readline().rstrip('\n')

    def state(self) -> str:
        return self.send('GET_STATUS').split('|')[1]

    def wait_state(self, wanted: set[str], timeout_s: float) -> str:
        deadline = time.monotonic() + timeout_s
        state = self.state()
        while state not in wanted and time.monotonic() < deadline:
            time.sleep(0.25)
            state = self.state()
        return state

    def close(self) -> None:
        self._socket.close()


def run_demo(score: str, port: int, log_dir: Path | None) -> int:
    """Drive the graph through one song and QUIT it (also when a step was refused, so the
    launcher never waits on a graph nobody drives); return 0 when every step was accepted."""
    brain = BrainConnection(port)
    final = 'not started'
    try:
        # Once each, as the brain sends them: READY waits in the planner for START's first
        # trajectory, PLAY for the home motion to end.
        steps = [(line, brain.send(line)) for line in ('START', 'READY', f'PLAY|{score}')]
        for step, reply in steps:
            print(f'[demo] {step} -> {reply}', flush=True)
            if not reply.startswith('OK|'):
                return 1
        brain.wait_state({'PLAYING'}, 10.0)
        print('[demo] playing ...', flush=True)
        final = brain.wait_state({'IDLE', 'FAULT', 'ESTOP'}, PLAY_TIMEOUT_S)
        print(f'[demo] play ended in {final}', flush=True)
    finally:
        print(f'[demo] QUIT -> {brain.send("QUIT")}', flush=True)
        brain.close()
    if log_dir is not None:
        print_timing(log_dir)
    return 0 if final == 'IDLE' else 1


def print_timing(log_dir: Path) -> None:
    """The hit-timing table (detected impacts vs commanded hits) of the run."""
    from phil_bringup.plots import runlog
    from phil_bringup.plots.stats import format_timing, hit_timing

    time.sleep(1.0)  # the simulator flushes its last impacts
    try:
        hits = runlog.load_hits(log_dir / 'hits.csv')
        impacts = runlog.load_impacts(log_dir / 'impacts.jsonl')
    except (OSError, runlog.RunLogError) as error:
        print(f'[demo] no timing summary: {error}', file=sys.stderr)
        return
    report = hit_timing(hits.instrument, hits.command_time_s, impacts.instrument, impacts.time_s)
    print(format_timing(report), flush=True)
