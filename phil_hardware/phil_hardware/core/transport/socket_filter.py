"""A classic BPF socket filter that keeps a sender's own multicast datagrams out of user space.

Not among the compiled modules (phil_hardware/compiled.py): the kernel reads the program
through a raw address, so the buffer must live until ``setsockopt`` returns, which Python's
reference counting guarantees and compiled code (freeing a variable after its last use) does
not.
"""

from __future__ import annotations

import ctypes
import socket
import struct

SO_ATTACH_FILTER = 26  # <asm-generic/socket.h>; Python's socket module does not export it
# Classic BPF opcodes (<linux/filter.h>). A UDP socket's filter sees the datagram from the UDP
# header on: offset 0 is the source port.
_BPF_LD_H_ABS = 0x28
_BPF_JEQ_K = 0x15
_BPF_RET_K = 0x06


def drop_source_port_filter(port: int) -> list[tuple[int, int, int, int]]:
    """A socket filter that drops UDP datagrams from source ``port`` and keeps the rest.

    Returns:
        The program as ``(code, jt, jf, k)`` instructions.
    """
    return [
        (_BPF_LD_H_ABS, 0, 0, 0),  # A = source port
        (_BPF_JEQ_K, 0, 1, port),  # A == port ? next : skip one
        (_BPF_RET_K, 0, 0, 0),  # drop
        (_BPF_RET_K, 0, 0, 0xFFFFFFFF),  # keep the whole datagram
    ]


def attach_filter(sock: socket.socket, program: list[tuple[int, int, int, int]]) -> None:
    """Attach a classic BPF program to ``sock`` (the kernel keeps its own copy).

    Raises:
        OSError: The platform or the kernel refused it.
    """
    code = b''.join(struct.pack('=HBBI', *instruction) for instruction in program)
    holder = ctypes.create_string_buffer(code, len(code))
    fprog = struct.pack('@HP', len(program), ctypes.addressof(holder))
    sock.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, fprog)  # holder lives until here
