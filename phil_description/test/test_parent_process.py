"""The check by which a node knows the process that started it is gone."""

import os

from phil_description.core.parent_process import PARENT_PID_ENV, parent_gone_check


def test_the_parent_is_there_while_it_is_the_parent():
    assert parent_gone_check({PARENT_PID_ENV: str(os.getppid())})() is False


def test_the_parent_is_gone_once_another_process_is_the_parent():
    assert parent_gone_check({PARENT_PID_ENV: str(os.getppid() + 1)})() is True


def test_a_process_started_without_one_never_counts_it_gone():
    assert parent_gone_check({})() is False
    assert parent_gone_check({PARENT_PID_ENV: 'not a pid'})() is False
