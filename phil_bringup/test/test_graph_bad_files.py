"""Bad files never take the robot down and are refused before anything moves (the whole graph
against the simulators): a play list with broken entries serves its good ones and refuses
each bad one, naming file, line and problem; a score the robot cannot play is refused whole,
naming its row; a bad parameter value stops the whole graph at start-up with one line naming
it, before anything had torque."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from phil_bringup.testing.graph import BusLoopView, RunningGraph, wait_until
from phil_description.core import default_robot_model
from phil_description.core.exit_status import CONFIG_ERROR_EXIT

pytestmark = pytest.mark.timeout(300)
MODEL = default_robot_model(sim=True)
ROOT = Path(__file__).resolve().parents[2]
ENTRY = '  init_note_right: {right}\n  init_note_left: 1\n'
# One good entry among four bad ones, each broken the way a hand edit breaks it.
PLAY_LIST = (
    '# a hand-edited play list\n'
    'broken_yaml:\n  score: [groove.txt\n'
    + ENTRY.format(right=5)
    + 'far_drum:\n  score: groove.txt\n'
    + ENTRY.format(right=42)
    + 'no_score:\n'
    + ENTRY.format(right=5)
    + 'gone:\n  score: deleted.txt\n'
    + ENTRY.format(right=5)
    + 'groove:\n  score: groove.txt\n'
    + ENTRY.format(right=5)
    + 'too_fast:\n  score: too_fast.txt\n'
    + ENTRY.format(right=5)
)
ROW = '1\t{beat}\t5\t0\t5\t0\t1\t1\n'
# Sixteenths at 400 bpm: the right wrist would need 30.2 rad/s at the 201st row (line 202).
TOO_FAST = 'bpm\t400\n' + ROW.format(beat='0.6') + ROW.format(beat='0.15') * 200 + 'end\n'
PROBLEMS = {
    'broken_yaml': 'line 2: the entry there is not valid YAML at line 4',
    'far_drum': "line 6: entry 'far_drum': 'init_note_right' = 42 is out of range",
    'no_score': "line 10: entry 'no_score': missing key(s) score",
    'gone': "line 13: entry 'gone': score file not found",
}


def planner_log(robot: RunningGraph) -> str:
    return (robot.log_dir / 'behavior_planner.log').read_text()


def measured_deg(view: BusLoopView) -> np.ndarray:
    """The joints as the bus loop last measured them (not the commanded targets)."""
    return np.degrees(np.array(view.snapshot().positions_rad))


def test_a_play_list_with_bad_entries_plays_its_good_one_and_moves_for_no_bad_one(tmp_path):
    folder = tmp_path / 'scores'
    folder.mkdir()
    shutil.copy(ROOT / 'scores' / 'rock' / 'rock_beat.txt', folder / 'groove.txt')
    (folder / 'too_fast.txt').write_text(TOO_FAST)
    play_list = folder / 'play_list.yaml'
    play_list.write_text(PLAY_LIST)
    robot = RunningGraph(tmp_path / 'run', ('--play-list', str(play_list)))
    try:
        robot.start()
        view = robot.bus_loop()
        robot.start_robot()
        home = np.degrees(MODEL.poses['home'])
        assert wait_until(lambda: np.abs(measured_deg(view) - home).max() < 0.5, 30.0), (
            robot.text()
        )
        log = robot.log_dir / 'score_player.log'
        for problem in PROBLEMS.values():  # reported at start-up, one line each
            assert f'{play_list}, {problem}' in log.read_text(), log.read_text()
        time.sleep(0.5)  # the home motion has settled
        held = measured_deg(view)
        for play_id, problem in PROBLEMS.items():
            # The state machine takes the id; the score player refuses it with the reason.
            assert robot.line(f'PLAY|{play_id}') == 'OK|PLAY'
            assert wait_until(
                lambda p=play_id, why=problem: (
                    f'play id {p!r} refused: {play_list}, {why}' in planner_log(robot)
                ),
                20.0,
            ), planner_log(robot)
            assert robot.brain.wait_state({'IDLE'}, 20.0) == 'IDLE', robot.text()
        # A score the robot cannot play: refused whole, naming the row, before any motion.
        assert robot.line('PLAY|too_fast') == 'OK|PLAY'
        assert wait_until(
            lambda: (
                'too_fast: refused before anything moved: bar 1, line 202 '
                '(beat 0.15): too fast: right_wrist' in planner_log(robot)
            ),
            20.0,
        ), planner_log(robot)
        assert robot.brain.wait_state({'IDLE'}, 20.0) == 'IDLE', robot.text()
        assert np.abs(measured_deg(view) - held).max() < 0.1
        # The good entry plays.
        robot.plays_then_quits('groove', lambda: np.abs(measured_deg(view) - held).max() > 1.0)
    finally:
        robot.stop()


@pytest.mark.parametrize(
    ('parameter', 'refusal'),
    [
        (
            'behavior_planner.status_rate_hz=fast',  # a string for a number
            "Trying to set parameter 'status_rate_hz' to 'fast' of type 'STRING', expecting type "
            "'DOUBLE'",
        ),
        ('tcp_bridge.reply_timeout_s=-1.0', 'parameter reply_timeout_s = -1.0 must be > 0 s'),
        (
            'hardware.epos4_frame_form=dlc8',
            "parameter epos4_frame_form = 'dlc8' must be one of: cia301, upstream",
        ),
    ],
)
def test_a_bad_parameter_stops_the_whole_graph_at_start_up_with_one_line(
    tmp_path, parameter, refusal
):
    node = parameter.split('.')[0]
    robot = RunningGraph(tmp_path, ('--param', parameter)).launch()
    try:
        assert robot.process.wait(60.0) == CONFIG_ERROR_EXIT, robot.text()
        [line] = [line for line in robot.output if 'configuration refused' in line]
        assert (
            line.startswith(f'[phil] {node} (parameters: ')
            and f'config/{node}' in line
            and ".yaml and the launcher's overrides): " in line
        ), line
        assert f'configuration refused: {refusal}' in line and 'stopping the graph' in line
        assert 'Traceback' not in robot.text()
        assert all(not Path(f'/proc/{pid}').exists() for pid in robot.started_pids())
        hardware = tmp_path / 'logs' / 'hardware.log'  # nothing had torque
        assert not hardware.exists() or 'activate' not in hardware.read_text()
    finally:
        robot.stop()
