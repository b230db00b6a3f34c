"""A PLAY whose motion cannot be carried out is refused whole, before anything is sent, with
the bar, line and beat of the first impossible row (``core.play.feasibility``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from phil_control.core.motion.validation import JointTable
from phil_control.core.play import PlayRobot, PlaySession
from phil_control.core.play.feasibility import ScoreInfeasible
from phil_control.core.score import load_play_list, write_play_list
from phil_description.core import default_robot_model

MODEL = default_robot_model(sim=True)
ROOT = Path(__file__).resolve().parents[2]
ROW = '1\t{beat}\t5\t0\t5\t0\t1\t1\n'
# Sixteenths at 400 bpm: the right wrist would need 30.2 rad/s at the 201st row (line 202).
TOO_FAST = 'bpm\t400\n' + ROW.format(beat='0.6') + ROW.format(beat='0.15') * 200 + 'end\n'


@pytest.fixture(scope='module')
def session(tmp_path_factory):
    folder = tmp_path_factory.mktemp('scores')
    shutil.copy(ROOT / 'scores' / 'rock' / 'rock_beat.txt', folder / 'rock.txt')
    (folder / 'too_fast.txt').write_text(TOO_FAST)
    play_list = load_play_list(
        write_play_list(folder, {'rock': 'rock.txt', 'too_fast': 'too_fast.txt'})
    )
    return PlaySession(
        PlayRobot.from_model(MODEL), play_list, joint_table=JointTable.from_model(MODEL)
    )


def test_an_impossible_score_is_refused_whole_naming_its_row_and_the_session_stays_free(session):
    home = np.array(MODEL.poses['home'])
    with pytest.raises(ScoreInfeasible) as caught:
        session.check('too_fast', current_positions_rad=home)
    message = str(caught.value)
    assert message.startswith(
        'too_fast: refused before anything moved: bar 1, line 202 '
        '(beat 0.15): too fast: right_wrist'
    ), message
    assert caught.value.bar == 1
    session.check('rock', current_positions_rad=home)  # a playable score passes
    chunks = session.start('rock', now_s=100.0, current_positions_rad=home)
    assert chunks and chunks[0].start_time_s > 100.0
