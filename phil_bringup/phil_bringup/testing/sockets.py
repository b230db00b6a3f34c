"""The internet sockets a tree of processes holds, and the local address each is bound to
(Linux /proc): which addresses a running graph can be reached on.

The kernel lists every socket of the network namespace in ``/proc/net/{tcp,tcp6,udp,udp6}``
with its inode; a process's descriptors (``/proc/<pid>/fd``) name the inodes it holds.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

PROTOCOLS = ('tcp', 'tcp6', 'udp', 'udp6')
# /proc/net/tcp* state codes (include/net/tcp_states.h); UDP sockets show 07 (CLOSE) unconnected.
_TCP_STATES = {
    '01': 'ESTABLISHED',
    '02': 'SYN_SENT',
    '03': 'SYN_RECV',
    '04': 'FIN_WAIT1',
    '05': 'FIN_WAIT2',
    '06': 'TIME_WAIT',
    '07': 'CLOSE',
    '08': 'CLOSE_WAIT',
    '09': 'LAST_ACK',
    '0A': 'LISTEN',
    '0B': 'CLOSING',
}

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class BoundSocket:
    """One socket: who holds it and where it is bound."""

    pid: int
    process: str  # the holder's command name (/proc/<pid>/comm)
    protocol: str  # 'tcp', 'tcp6', 'udp' or 'udp6'
    address: Address  # local address
    port: int  # local port
    state: str  # TCP state; UDP: 'UNCONNECTED' or 'ESTABLISHED' (connect()ed)

    @property
    def loopback(self) -> bool:
        """Bound to a loopback address (127.0.0.0/8, ::1, or ::ffff:127.x.y.z): nothing
        outside this machine can reach it. The wildcard (0.0.0.0, ::) is not loopback."""
        address = self.address
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        return address.is_loopback

    def __str__(self) -> str:
        host = f'[{self.address}]' if self.address.version == 6 else str(self.address)
        return f'{self.protocol} {host}:{self.port} {self.state} ({self.process}, pid {self.pid})'


def decode_address(field: str) -> tuple[Address, int]:
    """``/proc/net`` ``ADDRESS:PORT`` hex into (address, port). The address is stored as
    32-bit words in the kernel's (little-endian here) byte order, the port big-endian.

    Raises:
        ValueError: If ``field`` is not 8 or 32 hex digits, a colon and 4 hex digits.
    """
    address_hex, _, port_hex = field.partition(':')
    if len(address_hex) not in (8, 32) or len(port_hex) != 4:
        raise ValueError(f'not a /proc/net address: {field!r}')
    raw = b''.join(
        bytes.fromhex(address_hex[start : start + 8])[::-1]
        for start in range(0, len(address_hex), 8)
    )
    return ipaddress.ip_address(raw), int(port_hex, 16)


def parse_table(protocol: str, text: str) -> dict[int, tuple[Address, int, str]]:
    """One ``/proc/net/<protocol>`` table: inode -> (local address, port, state)."""
    sockets = {}
    for line in text.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 10:
            continue
        address, port = decode_address(fields[1])
        state = _TCP_STATES.get(fields[3], fields[3])
        if protocol.startswith('udp'):
            state = 'ESTABLISHED' if fields[3] == '01' else 'UNCONNECTED'
        sockets[int(fields[9])] = (address, port, state)
    return sockets


def process_tree(root_pid: int, proc: Path = Path('/proc')) -> list[int]:
    """``root_pid`` and every live descendant (children of children too)."""
    children: dict[int, list[int]] = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / 'stat').read_text().rpartition(')')[2].split()[1])
        except (OSError, IndexError, ValueError):
            continue  # ended meanwhile
        children.setdefault(parent, []).append(int(entry.name))
    tree, pending = [], [root_pid]
    while pending:
        pid = pending.pop()
        tree.append(pid)
        pending.extend(children.get(pid, []))
    return tree


def socket_inodes(pid: int, proc: Path = Path('/proc')) -> set[int]:
    """Inodes of the sockets among a process's file descriptors (empty if it ended)."""
    inodes = set()
    try:
        descriptors = list((proc / str(pid) / 'fd').iterdir())
    except OSError:
        return inodes
    for descriptor in descriptors:
        try:
            target = os.readlink(descriptor)
        except OSError:
            continue
        if target.startswith('socket:['):
            inodes.add(int(target[len('socket:[') : -1]))
    return inodes


def sockets_of(pids: Iterable[int], proc: Path = Path('/proc')) -> list[BoundSocket]:
    """Every TCP and UDP socket (IPv4 and IPv6) the processes ``pids`` hold."""
    tables = {
        protocol: parse_table(protocol, (proc / 'net' / protocol).read_text())
        for protocol in PROTOCOLS
        if (proc / 'net' / protocol).exists()
    }
    found = []
    for pid in pids:
        try:
            process = (proc / str(pid) / 'comm').read_text().strip()
        except OSError:
            continue
        for inode in sorted(socket_inodes(pid, proc)):
            for protocol, table in tables.items():
                if inode in table:
                    address, port, state = table[inode]
                    found.append(BoundSocket(pid, process, protocol, address, port, state))
    return found
