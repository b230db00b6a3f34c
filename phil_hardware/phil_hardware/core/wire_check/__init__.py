"""Checking what a controller put on the wire: captures (candump's log format plus serial
blocks), an independent decoder written from the protocol documents, upstream's simulator's
reading, and the check that they and our codecs agree (``phil wire-check``)."""

from .capture import CapturedCan, CapturedSerial, CaptureError, CaptureWriter, read_capture
from .check import WireChecker, WireReport
from .spec_decoder import WireCommand, WireError

__all__ = [
    'CaptureError',
    'CaptureWriter',
    'CapturedCan',
    'CapturedSerial',
    'WireChecker',
    'WireCommand',
    'WireError',
    'WireReport',
    'read_capture',
]
