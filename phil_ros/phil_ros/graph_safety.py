"""rclpy side of the graph key: signed messages, requests and goal ids.

* :func:`sign_message` / :func:`signed_by` put and check a graph-key signature in a message's
  ``authority`` field, over a canonical encoding of every other field (:func:`canonical_bytes`;
  the CDR serialization is not canonical: its padding bytes are whatever memory held), see
  :mod:`phil_description.core.graph_key`.
"""

from __future__ import annotations

import secrets
import struct
import time
from collections.abc import Callable

from unique_identifier_msgs.msg import UUID

from phil_description.core.graph_key import GraphKey, ReplayGuard

AUTHORITY_FIELD = 'authority'

_DOUBLE = struct.Struct('<d')
_LENGTH = struct.Struct('<I')
_NUMERIC = frozenset(
    {
        'boolean',
        'octet',
        'char',
        'byte',
        'float',
        'double',
        'long double',
        'int8',
        'uint8',
        'int16',
        'uint16',
        'int32',
        'uint32',
        'int64',
        'uint64',
    }
)
# Per message class: (field name, encoder) in field order, made once.
_PLANS: dict[type, list[tuple[str, Callable]]] = {}


def _string(value: str, out: list[bytes]) -> None:
    data = value.encode()
    out += (_LENGTH.pack(len(data)), data)


def _number(value, out: list[bytes]) -> None:
    if isinstance(value, float):
        out.append(_DOUBLE.pack(value))
    else:  # int, bool, a one-byte bytes (octet)
        out.append(
            int.from_bytes(value, 'little').to_bytes(9, 'little', signed=True)
            if isinstance(value, bytes)
            else int(value).to_bytes(9, 'little', signed=True)
        )


def _numbers(value, out: list[bytes]) -> None:
    data = (
        value.tobytes()
        if hasattr(value, 'tobytes')
        else b''.join(_DOUBLE.pack(float(item)) for item in value)
    )
    out += (_LENGTH.pack(len(data)), data)


def _message(value, out: list[bytes]) -> None:
    for name, encode in _plan(type(value)):
        encode(getattr(value, name), out)


def _sequence_of(encode: Callable) -> Callable:
    def encode_all(value, out: list[bytes]) -> None:
        out.append(_LENGTH.pack(len(value)))
        for item in value:
            encode(item, out)

    return encode_all


def _encoder(kind: str) -> Callable:
    element = kind.split('[', 1)[0] if kind.endswith(']') else kind
    if element.startswith('sequence<'):
        element = element[len('sequence<') :].rstrip('>').split(',', 1)[0]
    elif element == kind:  # a single value
        if '/' in kind:
            return _message
        return _string if 'string' in kind else _number
    if element in _NUMERIC:
        return _numbers
    return _sequence_of(_message if '/' in element else _string)


def _plan(cls: type) -> list[tuple[str, Callable]]:
    plan = _PLANS.get(cls)
    if plan is None:
        plan = [(name, _encoder(kind)) for name, kind in cls.get_fields_and_field_types().items()]
        _PLANS[cls] = plan
    return plan


def canonical_bytes(msg, skip: str = AUTHORITY_FIELD) -> bytes:
    """Every field of ``msg`` but ``skip``, encoded the same way in every process."""
    out: list[bytes] = []
    for name, encode in _plan(type(msg)):
        if name != skip:
            encode(getattr(msg, name), out)
    return b''.join(out)


def _signed_bytes(msg) -> bytes:
    return type(msg).__name__.encode() + canonical_bytes(msg)


def sign_message(key: GraphKey, msg):
    """Fill in ``msg.authority`` with the key's signature of the message; returns ``msg``."""
    setattr(msg, AUTHORITY_FIELD, key.sign(_signed_bytes(msg)))
    return msg


def signed_by(key: GraphKey, msg) -> bool:
    """True when ``msg.authority`` is the key's signature of the message."""
    return key.verify(_signed_bytes(msg), getattr(msg, AUTHORITY_FIELD))


def signed_goal_id(key: GraphKey) -> UUID:
    """An action goal id made with the graph key (``send_goal_async(..., goal_uuid=...)``)."""
    return UUID(uuid=list(key.goal_id()))


def signed_request(key: GraphKey, request):
    """Stamp (CLOCK_REALTIME), give a fresh nonce and sign a request with ``stamp_ns``,
    ``nonce`` and ``authority`` fields; returns it."""
    request.stamp_ns = time.time_ns()
    request.nonce = secrets.token_hex(8)
    return sign_message(key, request)


def request_refusal(key: GraphKey, guard: ReplayGuard, request) -> str:
    """Why a signed request is refused ('' when it is genuine and fresh)."""
    if not signed_by(key, request):
        return 'not signed with the graph key: only the behavior planner of this graph may ask'
    return guard.check(request.stamp_ns, request.nonce, time.time_ns())
