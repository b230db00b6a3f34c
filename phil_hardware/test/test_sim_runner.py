"""The device simulator as a process: ``python -m phil_hardware.sim`` talked to over the wire.

The simulator runs in its own process on unique IPv6 interface-local multicast groups and a
unique PTY link; this process plays the controller over udp_multicast and the PTY, changes a
fault through the simulator's stdin, and stops it with SIGINT.
"""

from __future__ import annotations

import ipaddress
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import uuid

import can
from dynamixel_sdk import COMM_SUCCESS, PacketHandler, PortHandler

from phil_description.core import CanBusParams
from phil_hardware.core.codecs import CanFrame, epos4, tmotor
from phil_hardware.core.codecs.epos4 import NmtCommand, SdoService
from phil_hardware.core.transport import open_can_bus
from phil_hardware.sim.runner import READY_LINE

START_TIMEOUT_S = 60.0
REPLY_TIMEOUT_S = 5.0


class Simulator:
    """The simulator subprocess with its stdout lines in a queue and its stderr kept (both
    read as they come: a full pipe would stop the simulator in its next write)."""

    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, '-m', 'phil_hardware.sim', *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self._stderr: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        self._stderr_reader = threading.Thread(
            target=self._stderr.extend, args=(self.process.stderr,), daemon=True
        )
        self._stderr_reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line.rstrip('\n'))
        self.lines.put(None)

    def wait_for(self, prefix: str, timeout_s: float) -> list[str]:
        """Lines up to and including the first one starting with ``prefix``."""
        deadline = time.monotonic() + timeout_s
        seen = []
        while True:
            line = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            if line is None:
                raise AssertionError(f'simulator ended: {seen}, stderr: {self.stderr()}')
            seen.append(line)
            if line.startswith(prefix):
                return seen

    def command(self, text: str) -> str:
        self.process.stdin.write(text + '\n')
        self.process.stdin.flush()
        return self.wait_for('ok', REPLY_TIMEOUT_S)[-1]

    def stderr(self) -> str:
        """What the simulator wrote to stderr so far (all of it once it has ended)."""
        if self.process.poll() is not None:
            self._stderr_reader.join(REPLY_TIMEOUT_S)
        return ''.join(self._stderr)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(5)


def unique_group_base() -> str:
    """A random interface-local group with room for four buses."""
    return str(ipaddress.IPv6Address('ff11::7068:0') + (uuid.uuid4().int % 0x3FFF) * 4 + 0x4000)


def frames_from(bus: can.BusABC, wanted, timeout_s: float = REPLY_TIMEOUT_S) -> list[CanFrame]:
    """Receive until ``wanted(frames)`` is true or the time is up."""
    frames: list[CanFrame] = []
    deadline = time.monotonic() + timeout_s
    while not wanted(frames) and time.monotonic() < deadline:
        message = bus.recv(max(0.0, deadline - time.monotonic()))
        if message is not None:
            frames.append(
                CanFrame(message.arbitration_id, bytes(message.data), message.is_extended_id)
            )
    return frames


def node_3_alone_for_6_broadcasts(frames: list[CanFrame]) -> bool:
    """Node 3 has broadcast 6 times since node 4 last did (never if node 4 keeps talking)."""
    ids = [frame.arbitration_id for frame in frames]
    since_node_4 = ids[len(ids) - ids[::-1].index(4) :] if 4 in ids else ids
    return since_node_4.count(3) >= 6


def send(bus: can.BusABC, *frames: CanFrame) -> None:
    for frame in frames:
        bus.send(
            can.Message(
                arbitration_id=frame.arbitration_id,
                data=frame.data,
                is_extended_id=frame.is_extended_id,
            )
        )


def test_simulator_process_serves_can_and_dynamixel_and_stops_on_sigint(
    tmp_path, patient_dynamixel_sdk
):
    base = unique_group_base()
    groups = [str(ipaddress.IPv6Address(base) + index) for index in range(4)]
    link = tmp_path / 'ttyDXL'
    simulator = Simulator(
        '--can-channel-base',
        base,
        '--dxl-port',
        str(link),
        '--fault',
        'left_elbow:over_current',
        '--control-stdin',
        '--impacts-jsonl',
        str(tmp_path / 'impacts.jsonl'),
    )
    buses = {}
    try:
        banner = simulator.wait_for(READY_LINE, START_TIMEOUT_S)
        assert any(
            line.startswith(f'can1: udp_multicast {groups[1]} serves')
            and 'tmotor right_elbow (node 4)' in line
            for line in banner
        )
        assert any(
            line.startswith('dxl: /dev/pts/') and 'dynamixel head_pitch (id 2)' in line
            for line in banner
        )
        buses = {
            name: open_can_bus(CanBusParams(name, 'udp_multicast', groups[index], 10**6))
            for index, name in enumerate(('can0', 'can1', 'can2', 'can3'))
        }

        # TMotor status broadcasts, one of them with the injected over-current.
        frames = frames_from(buses['can1'], lambda fs: {1, 3, 4} <= {f.arbitration_id for f in fs})
        assert {1, 3, 4} <= {f.arbitration_id for f in frames}
        assert tmotor.decode_feedback(frames[-1]).error_code == 0
        left = frames_from(buses['can0'], lambda fs: any(f.arbitration_id == 6 for f in fs))
        assert (
            tmotor.decode_feedback(next(f for f in left if f.arbitration_id == 6)).current_a > 23.2
        )

        # EPOS4: discovery probe, NMT start, TPDO on SYNC.
        send(buses['can3'], epos4.encode_sdo_probe(7))
        reply = frames_from(buses['can3'], lambda fs: any(f.arbitration_id == 0x587 for f in fs))
        sdo = epos4.decode_sdo_response(next(f for f in reply if f.arbitration_id == 0x587))
        assert sdo.service is SdoService.ABORT and sdo.abort_code == 0x05040001
        send(buses['can3'], epos4.encode_nmt(NmtCommand.START_REMOTE_NODE, 7), epos4.encode_sync())
        tpdo = frames_from(buses['can3'], lambda fs: any(f.arbitration_id == 0x187 for f in fs))
        assert (
            epos4.decode_feedback(next(f for f in tpdo if f.arbitration_id == 0x187)).statusword
            == 0x0240
        )

        # Dynamixel over the PTY link.
        port = PortHandler(str(link))
        assert port.openPort()
        try:
            assert PacketHandler(2.0).ping(port, 1) == (1030, COMM_SUCCESS, 0)
        finally:
            port.closePort()

        # A fault set at run time through stdin silences node 4 while node 3 keeps talking.
        assert simulator.command('fault right_elbow silence') == 'ok fault right_elbow silence'
        # Frames sent before it, and by the step it landed in, may still arrive: node 3 goes on
        # broadcasting once per step, and node 4 never again.
        assert node_3_alone_for_6_broadcasts(
            frames_from(buses['can1'], node_3_alone_for_6_broadcasts)
        )

        simulator.process.send_signal(signal.SIGINT)
        assert simulator.process.wait(timeout=15) == 0
        assert not link.is_symlink()
    finally:
        for bus in buses.values():
            bus.shutdown()
        simulator.kill()


def test_a_storm_of_stop_signals_still_ends_the_simulator_cleanly():
    """Ctrl-C pressed repeatedly, plus SIGTERM, as a launcher dying mid-stop may send."""
    simulator = Simulator('--can-channel-base', unique_group_base(), '--no-dxl')
    try:
        simulator.wait_for(READY_LINE, START_TIMEOUT_S)
        for index in range(400):
            if simulator.process.poll() is not None:
                break
            simulator.process.send_signal(signal.SIGTERM if index % 2 else signal.SIGINT)
        assert simulator.process.wait(timeout=15) == 0, simulator.stderr()
    finally:
        simulator.kill()


def test_niceness_reaches_the_device_loop_thread():
    simulator = Simulator('--can-channel-base', unique_group_base(), '--no-dxl', '--nice', '5')
    try:
        simulator.wait_for(READY_LINE, START_TIMEOUT_S)
        pid = simulator.process.pid
        nice = {}
        for task in os.listdir(f'/proc/{pid}/task'):
            with open(f'/proc/{pid}/task/{task}/stat') as stat:
                nice[int(task)] = int(stat.read().rsplit(')', 1)[1].split()[16])  # man 5 proc
        # Linux niceness is per thread: the main thread and the device loop it starts later.
        assert nice[pid] == 5 and sum(value == 5 for value in nice.values()) >= 2, nice
    finally:
        simulator.kill()


def test_simulator_refuses_a_group_that_could_leave_the_machine():
    simulator = Simulator('--can-channel-base', 'ff05::7068:6900', '--no-dxl')
    try:
        assert simulator.process.wait(timeout=START_TIMEOUT_S) == 2
        assert 'ff05::7068:6900 is not an IPv6 interface-local group' in simulator.stderr()
    finally:
        simulator.kill()


def test_simulator_imports_without_rclpy():
    """The device side stays ROS-free: rclpy is only loaded by the bridge's own process."""
    code = (
        "import sys; sys.modules['rclpy'] = None\n"
        'import phil_hardware.sim, phil_hardware.sim.runner, phil_hardware.sim.ros_bridge\n'
        "assert not any(name.startswith(('rclpy.', 'phil_msgs')) for name in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, '-c', code], capture_output=True, text=True, timeout=START_TIMEOUT_S
    )
    assert result.returncode == 0, result.stderr
