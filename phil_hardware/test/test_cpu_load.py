"""The benchmarks' CPU hog and CPU-time reading."""

from __future__ import annotations

import os
import time

from phil_hardware.core.cpu_load import CpuHog, cpu_seconds


def test_the_hog_burns_cpu_while_open_and_leaves_no_process_behind():
    with CpuHog(1) as hog:
        (process,) = hog.processes
        deadline = time.monotonic() + 60.0  # generous: only that it burns at all
        while cpu_seconds(process.pid) < 0.05 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert cpu_seconds(process.pid) >= 0.05
    assert process.poll() is not None  # killed and reaped
    assert hog.processes == []


def test_no_hog_starts_nothing():
    with CpuHog(0) as hog:
        assert hog.processes == []


def test_cpu_seconds_counts_this_process():
    before = cpu_seconds(os.getpid())
    end = time.process_time() + 0.05
    while time.process_time() < end:
        pass
    assert cpu_seconds(os.getpid()) > before
