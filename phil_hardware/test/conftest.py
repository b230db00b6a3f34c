"""Shared pytest set-up: Hypothesis profiles (CI runs are derandomized and deadline-free, so a
loaded machine cannot fail a property test by being slow), and the graph key the nodes under
test share (the launcher makes a fresh one for every real start)."""

import os
import sys

import pytest
from hypothesis import HealthCheck, settings

from phil_description.core.graph_key import GRAPH_KEY_ENV, GraphKey

os.environ.setdefault(GRAPH_KEY_ENV, GraphKey.generate())

settings.register_profile(
    'ci', derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile('dev', deadline=None)
settings.load_profile(os.environ.get('HYPOTHESIS_PROFILE', 'dev'))


@pytest.fixture
def patient_dynamixel_sdk(monkeypatch):
    """The Dynamixel SDK with a reply timeout of ~0.5 s instead of ~35 ms, and a 0.2 ms GIL
    switch interval.

    The SDK busy-polls the port for a reply, holding the GIL, against ``LATENCY_TIMER * 2 + 2``
    ms of wall time (read on every call). A simulated servo in this process, or behind a PTY
    beside CPU hogs, can need longer than 35 ms: that tests the machine, not the servo.
    """
    from dynamixel_sdk import port_handler

    monkeypatch.setattr(port_handler, 'LATENCY_TIMER', 250)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(0.0002)
    yield
    sys.setswitchinterval(interval)


@pytest.fixture
def patient_canopen_sdo(monkeypatch):
    """canopen's SDO client waiting up to 10 s for a response instead of 0.3 s: the server
    under test is a thread of this process, which a loaded machine may not run that soon."""
    from canopen.sdo import SdoClient

    monkeypatch.setattr(SdoClient, 'RESPONSE_TIMEOUT', 10.0)
