"""The EPOS4 codec against the independent `canopen` library on an in-process virtual CAN bus.

A canopen LocalNode (SDO server + NMT slave) answers the frames our codec builds, a canopen
RemoteNode (SDO client + NMT master) produces frames we compare byte for byte, and a tiny
SDO server made of our own codec answers canopen's client.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import can
import canopen
import pytest
from canopen.objectdictionary import ObjectDictionary, ODVariable, datatypes

from phil_hardware.core.codecs import CanFrame, epos4
from phil_hardware.core.codecs.epos4 import ModeOfOperation, NmtCommand, ObjectIndex, SdoService

NODE_ID = 7
TIMEOUT_S = 10.0  # a bound on the wait for a frame, not an expectation of speed


def _object_dictionary() -> ObjectDictionary:
    od = ObjectDictionary()
    for name, index, data_type in [
        ('Modes of operation', ObjectIndex.MODES_OF_OPERATION, datatypes.INTEGER8),
        ('Home position', ObjectIndex.HOME_POSITION, datatypes.INTEGER32),
        ('Target torque', ObjectIndex.TARGET_TORQUE, datatypes.INTEGER16),
        ('Position actual value', ObjectIndex.POSITION_ACTUAL_VALUE, datatypes.INTEGER32),
        ('Statusword', ObjectIndex.STATUSWORD, datatypes.UNSIGNED16),
    ]:
        variable = ODVariable(name, int(index), 0)
        variable.data_type = data_type
        variable.access_type = 'rw'
        variable.default = 0
        od.add_object(variable)
    return od


def _network(channel: str) -> canopen.Network:
    network = canopen.Network()
    network.NOTIFIER_CYCLE = 0.05  # only bounds how long disconnect() waits for the thread
    network.connect(interface='virtual', channel=channel)
    return network


def _to_frame(message: can.Message) -> CanFrame:
    return CanFrame(message.arbitration_id, bytes(message.data), message.is_extended_id)


def _to_message(frame: CanFrame) -> can.Message:
    return can.Message(
        arbitration_id=frame.arbitration_id, data=frame.data, is_extended_id=frame.is_extended_id
    )


def _receive(bus: can.BusABC, arbitration_id: int) -> CanFrame:
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        message = bus.recv(timeout=0.1)
        if message is not None and message.arbitration_id == arbitration_id:
            return _to_frame(message)
    raise AssertionError(f'no frame with id {arbitration_id:#x} within {TIMEOUT_S} s')


@pytest.fixture
def channel() -> str:
    return f'phil-codec-{uuid.uuid4().hex}'


@pytest.fixture
def local_node(channel: str) -> Iterator[canopen.LocalNode]:
    network = _network(channel)
    node = network.create_node(NODE_ID, _object_dictionary())
    yield node
    network.disconnect()


@pytest.fixture
def bus(channel: str) -> Iterator[can.BusABC]:
    raw_bus = can.Bus(interface='virtual', channel=channel)
    yield raw_bus
    raw_bus.shutdown()


def _transact(bus: can.BusABC, request: CanFrame) -> epos4.SdoMessage:
    bus.send(_to_message(request))
    return epos4.decode_sdo_response(_receive(bus, 0x580 + NODE_ID))


def test_size_indicated_download_is_accepted_and_acknowledged(local_node, bus):
    request = epos4.encode_sdo_download(
        NODE_ID, ObjectIndex.MODES_OF_OPERATION, 0, ModeOfOperation.CYCLIC_SYNC_POSITION, 1
    )
    response = _transact(bus, request)
    assert (response.service, response.index, response.subindex) == (
        SdoService.DOWNLOAD,
        ObjectIndex.MODES_OF_OPERATION,
        0,
    )
    assert local_node.sdo[ObjectIndex.MODES_OF_OPERATION].raw == 8


def test_upstream_0x22_download_to_a_4_byte_object_is_accepted(local_node, bus):
    request = epos4.encode_sdo_download(
        NODE_ID, ObjectIndex.HOME_POSITION, 0, -3982, 4, size_indicated=False
    )
    assert _transact(bus, request).service is SdoService.DOWNLOAD
    assert local_node.sdo[ObjectIndex.HOME_POSITION].raw == -3982


def test_upstream_0x22_download_to_a_1_byte_object_is_rejected_by_strict_server(local_node, bus):
    # Why size-indicated is our default: "size not indicated" means 4 bytes to a strict server.
    request = epos4.encode_sdo_download(
        NODE_ID, ObjectIndex.MODES_OF_OPERATION, 0, 8, 1, size_indicated=False
    )
    response = _transact(bus, request)
    assert response.service is SdoService.ABORT
    assert response.abort_code == 0x06070010
    assert response.abort_text.startswith('Data type does not match')


def test_upload_response_is_parsed(local_node, bus):
    local_node.sdo[ObjectIndex.POSITION_ACTUAL_VALUE].raw = -3982
    local_node.sdo[ObjectIndex.TARGET_TORQUE].raw = 1000
    position = _transact(
        bus, epos4.encode_sdo_upload_request(NODE_ID, ObjectIndex.POSITION_ACTUAL_VALUE, 0)
    )
    assert (position.service, position.value(signed=True)) == (SdoService.UPLOAD, -3982)
    torque = _transact(bus, epos4.encode_sdo_upload_request(NODE_ID, ObjectIndex.TARGET_TORQUE, 0))
    assert torque.data == (1000).to_bytes(2, 'little')


def test_abort_for_missing_object_is_parsed(local_node, bus):
    response = _transact(bus, epos4.encode_sdo_upload_request(NODE_ID, 0x1234, 0))
    assert response.service is SdoService.ABORT
    assert (response.index, response.abort_code) == (0x1234, 0x06020000)
    assert response.abort_text == 'Object does not exist in the object dictionary'


def test_nmt_start_moves_local_node_to_operational(local_node, bus):
    bus.send(_to_message(epos4.encode_nmt(NmtCommand.START_REMOTE_NODE, NODE_ID)))
    deadline = time.monotonic() + TIMEOUT_S
    while local_node.nmt.state != 'OPERATIONAL' and time.monotonic() < deadline:
        time.sleep(0.01)
    assert local_node.nmt.state == 'OPERATIONAL'
    bus.send(_to_message(epos4.encode_nmt(NmtCommand.ENTER_PRE_OPERATIONAL, 0)))
    deadline = time.monotonic() + TIMEOUT_S
    while local_node.nmt.state != 'PRE-OPERATIONAL' and time.monotonic() < deadline:
        time.sleep(0.01)
    assert local_node.nmt.state == 'PRE-OPERATIONAL'


@pytest.fixture
def master(channel: str) -> Iterator[canopen.Network]:
    network = _network(channel)
    yield network
    network.disconnect()


@pytest.mark.parametrize(
    ('state', 'command'),
    [
        ('OPERATIONAL', NmtCommand.START_REMOTE_NODE),
        ('STOPPED', NmtCommand.STOP_REMOTE_NODE),
        ('PRE-OPERATIONAL', NmtCommand.ENTER_PRE_OPERATIONAL),
        ('RESET', NmtCommand.RESET_NODE),
        ('RESET COMMUNICATION', NmtCommand.RESET_COMMUNICATION),
    ],
)
def test_nmt_frames_equal_canopen_master(master, bus, state, command):
    remote = master.add_node(NODE_ID, _object_dictionary())
    remote.nmt.state = state
    assert _receive(bus, 0x000) == epos4.encode_nmt(command, NODE_ID)


def test_sync_frame_equals_canopen_producer(master, bus):
    master.sync.transmit()
    assert _receive(bus, 0x080) == epos4.encode_sync()


def test_sdo_client_requests_equal_ours(master, local_node, bus, patient_canopen_sdo):
    remote = master.add_node(NODE_ID, _object_dictionary())
    remote.sdo.download(ObjectIndex.MODES_OF_OPERATION, 0, b'\x0a')
    expected = epos4.encode_sdo_download(NODE_ID, ObjectIndex.MODES_OF_OPERATION, 0, 10, 1)
    assert _receive(bus, 0x600 + NODE_ID) == expected
    remote.sdo.upload(ObjectIndex.STATUSWORD, 0)
    expected = epos4.encode_sdo_upload_request(NODE_ID, ObjectIndex.STATUSWORD, 0)
    assert _receive(bus, 0x600 + NODE_ID) == expected


class _CodecSdoServer(can.Listener):
    """An SDO server built only from our codec: ack downloads, answer uploads, abort others."""

    def __init__(self, bus: can.BusABC, store: dict[int, bytes]) -> None:
        self._bus = bus
        self.store = store

    def on_message_received(self, msg: can.Message) -> None:
        if msg.arbitration_id != 0x600 + NODE_ID:
            return
        request = epos4.decode_sdo_request(_to_frame(msg))
        if request.service is SdoService.DOWNLOAD:
            self.store[request.index] = request.data
            reply = epos4.encode_sdo_download_ack(NODE_ID, request.index, request.subindex)
        elif request.index in self.store:
            reply = epos4.encode_sdo_upload_response(
                NODE_ID, request.index, request.subindex, self.store[request.index]
            )
        else:
            reply = epos4.encode_sdo_abort(NODE_ID, request.index, request.subindex, 0x06020000)
        self._bus.send(_to_message(reply))


def test_canopen_client_accepts_our_sdo_server_frames(master, bus, patient_canopen_sdo):
    server = _CodecSdoServer(bus, {ObjectIndex.STATUSWORD: b'\x37\x06'})
    notifier = can.Notifier(bus, [server], timeout=0.05)
    try:
        remote = master.add_node(NODE_ID, _object_dictionary())
        assert remote.sdo.upload(ObjectIndex.STATUSWORD, 0) == b'\x37\x06'
        remote.sdo.download(
            ObjectIndex.HOME_POSITION, 0, (-3982).to_bytes(4, 'little', signed=True)
        )
        assert server.store[ObjectIndex.HOME_POSITION] == bytes.fromhex('72f0ffff')
        with pytest.raises(canopen.SdoAbortedError) as aborted:
            remote.sdo.upload(0x6064, 0)
        assert aborted.value.code == 0x06020000
    finally:
        notifier.stop()
