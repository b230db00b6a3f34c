"""Send raw protocol lines to the TCP bridge (port 1951)."""

from __future__ import annotations

import socket

DEFAULT_HOST = '127.0.0.1'
DEFAULT_PORT = 1951


def send_lines(
    lines: list[str],
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    acknowledged: bool = True,
    timeout_s: float = 5.0,
) -> list[str]:
    """Send each line; return the replies. Acknowledged mode answers every line with one
    line (`OK|..`, `ERR|..`, or the STATUS line of a GET_STATUS); upstream mode answers only
    GET_STATUS.

    Raises:
        ConnectionRefusedError: nothing listens on host:port (the graph is not running).
    """
    with socket.create_connection((host, port), timeout=timeout_s) as connection:
        reader = connection.makefile('r', encoding='utf-8', newline='\n')
        replies = []
        if acknowledged:
            connection.sendall(b'PROTOCOL|2\n')
            reader.readline()
        for line in lines:
            connection.sendall(line.rstrip('\r\n').encode('utf-8') + b'\n')
            opcode = line.split('|', 1)[0].strip().upper()
            if acknowledged or opcode == 'GET_STATUS':
                replies.append(reader.readline().rstrip('\n'))
        return replies
