"""The check by which a node knows the launcher that started it is gone."""

import os

from phil_description.core.launcher_parent import LAUNCHER_PID_ENV, launcher_gone_check


def test_the_launcher_is_there_while_it_is_the_parent():
    assert launcher_gone_check({LAUNCHER_PID_ENV: str(os.getppid())})() is False


def test_the_launcher_is_gone_once_another_process_is_the_parent():
    assert launcher_gone_check({LAUNCHER_PID_ENV: str(os.getppid() + 1)})() is True


def test_a_process_the_launcher_did_not_start_never_counts_it_gone():
    assert launcher_gone_check({})() is False
    assert launcher_gone_check({LAUNCHER_PID_ENV: 'not a pid'})() is False
