"""Real-time set-up of the bus-loop process: what it asks for is what it gets, or says why not."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from phil_hardware.core.realtime import RealtimeConfig

_PROBE = """
import os
from phil_hardware.core.realtime import RealtimeConfig, apply_realtime
report = apply_realtime(RealtimeConfig(sched_priority={priority}, lock_memory=False,
                                       freeze_gc=False))
print(os.sched_getscheduler(0), os.sched_getparam(0).sched_priority, report.realtime)
"""


def _round_robin() -> None:
    """In a child before exec: SCHED_RR 10, the hardware node's policy the loop inherits."""
    os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(10))


def _run_under_round_robin(priority: int) -> tuple[int, int, bool]:
    """Run apply_realtime in a child that starts SCHED_RR 10, as under the hardware node."""
    done = subprocess.run(
        [sys.executable, '-c', _PROBE.format(priority=priority)],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=_round_robin,
    )
    assert done.returncode == 0, done.stderr
    policy, applied, realtime = done.stdout.split()
    return int(policy), int(applied), realtime == 'True'


@pytest.fixture
def round_robin_allowed():
    try:
        subprocess.run(['true'], check=True, preexec_fn=_round_robin)
    except (subprocess.SubprocessError, OSError):
        pytest.skip('SCHED_RR is not allowed here')


def test_a_loop_without_real_time_drops_the_policy_it_inherited(round_robin_allowed):
    assert _run_under_round_robin(0) == (os.SCHED_OTHER, 0, False)


def test_a_real_time_loop_gets_fifo_at_its_priority(round_robin_allowed):
    assert _run_under_round_robin(40) == (os.SCHED_FIFO, 40, True)


def test_realtime_config_is_validated():
    with pytest.raises(ValueError, match='sched_priority'):
        RealtimeConfig(sched_priority=120)


_GC_PROBE = """
import gc
from phil_hardware.core.realtime import RealtimeConfig, apply_realtime
report = apply_realtime(RealtimeConfig(sched_priority=0, lock_memory=False,
                                       manual_gc={manual}))
print(gc.isenabled(), report.gc_manual, gc.get_freeze_count() > 0)
"""


@pytest.mark.parametrize('manual', [True, False])
def test_manual_gc_switches_automatic_collection_off_after_freezing(manual):
    done = subprocess.run(
        [sys.executable, '-c', _GC_PROBE.format(manual=manual)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(not manual), str(manual), 'True']
