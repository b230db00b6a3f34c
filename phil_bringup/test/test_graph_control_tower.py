"""The control tower page in a real browser (headless Chromium) against the whole graph and the
simulators: START, READY and PLAY pressed on the page change the state the page shows, the 3D
view is drawn and moves with the joints, the views switch, strokes reach the error timeline, a
command the protocol refuses in a state is refused
from the page too and moves nothing, and ESTOP pressed on the page latches the robot.
Screenshots of the playing robot go to the test's folder (``screenshots/``)."""

from __future__ import annotations

import time

import pytest

from phil_bringup.testing.browser import (
    browser_missing,
    changed_share,
    distinct_colours,
    headless_chromium,
    wait_for,
)
from phil_bringup.testing.graph import RunningGraph, free_tcp_port
from phil_bringup.testing.tower_client import TowerConnection

pytest.importorskip('rclpy')
pytestmark = [
    pytest.mark.timeout(400),
    pytest.mark.skipif(bool(browser_missing()), reason=browser_missing() or 'browser present'),
]


def test_the_page_drives_the_robot_shows_it_move_and_its_estop_latches(tmp_path):
    port = free_tcp_port()
    shots = tmp_path / 'screenshots'
    shots.mkdir()
    with RunningGraph(tmp_path / 'run', ('--tower-port', str(port))) as robot:
        url = f'http://127.0.0.1:{port}/'
        browser = headless_chromium()
        try:
            browser.get(url)
            page = browser.find_element

            def shown_state():
                return page('css selector', '#state').text

            wait_for(lambda: page('css selector', '#connection').text == 'live', 30, 'live')
            wait_for(lambda: shown_state() == 'STANDBY', 30, 'STANDBY shown')
            canvas = page('css selector', '#scene')
            wait_for(lambda: distinct_colours(canvas.screenshot_as_png) > 50, 30, 'robot drawn')
            # The protocol refuses a motion before START: from the page too, and nothing moves.
            assert page('xpath', '//button[text()="snare"]').get_attribute('disabled')
            connection = TowerConnection(f'ws://127.0.0.1:{port}/ws')
            try:
                refused = connection.line('MOVE|waist|20|1.0')
            finally:
                connection.close()
            assert refused.startswith('ERR|MOVE|'), refused
            assert robot.status()[1] == 'STANDBY'

            page('xpath', '//button[text()="START"]').click()
            wait_for(lambda: shown_state() == 'INIT', 30, 'INIT shown')
            page('xpath', '//button[text()="READY"]').click()
            wait_for(lambda: shown_state() == 'IDLE', 30, 'IDLE shown')
            before = canvas.screenshot_as_png
            (shots / 'idle.png').write_bytes(before)
            select = page('css selector', '#play-id')
            select.find_element('css selector', 'option[value="rock"]').click()
            page('css selector', '#play').click()
            wait_for(lambda: shown_state() == 'PLAYING', 30, 'PLAYING shown')
            wait_for(lambda: 'rock bar' in page('css selector', '#song').text, 30, 'bar shown')
            # Strokes detected and matched to their hits reach the page's error timeline.
            timeline = page('css selector', '#timeline')
            try:
                wait_for(
                    lambda: int(timeline.get_attribute('data-strokes') or 0) >= 4, 30, 'strokes'
                )
            except AssertionError as error:
                logs = ('hits.csv', 'impacts.jsonl')
                logged = {name: _lines(robot.log_dir / name) for name in logs}
                raise AssertionError(
                    f'{error}; status {robot.status()}; logged {logged}\n'
                    + robot.story(also=('control_tower',))
                ) from None
            playing = []
            for index in range(3):
                time.sleep(0.7)  # the arms move between the shots
                playing.append(canvas.screenshot_as_png)
                (shots / f'playing_{index}.png').write_bytes(playing[-1])
            browser.save_screenshot(str(shots / 'page_playing.png'))
            # The joints moved: the view is not what it was in IDLE.
            assert max(changed_share(before, shot) for shot in playing) > 0.005
            # Each fixed view, from the free one the page opened with, looks different from the
            # last (going back to 'free' keeps the camera where it is).
            views = {'free': playing[-1]}
            shown = 'free'
            for view in ('front', 'side', 'top'):
                page('css selector', f'[data-view="{view}"]').click()
                wait_for(
                    lambda shown=shown: (
                        changed_share(views[shown], canvas.screenshot_as_png) > 0.05
                    ),
                    30,
                    f'the {view} view drawn',
                )
                views[view] = canvas.screenshot_as_png
                (shots / f'view_{view}.png').write_bytes(views[view])
                shown = view

            page('css selector', '#estop').click()
            wait_for(lambda: shown_state() == 'ESTOP', 10, 'ESTOP shown')
            assert robot.status()[1] == 'ESTOP'
            assert robot.bus_loop().snapshot().estop
            browser.save_screenshot(str(shots / 'page_estop.png'))
        finally:
            browser.quit()
        assert robot.line('QUIT') == 'OK|QUIT'
        assert robot.wait_exit(90.0) == 0, robot.story()


def _lines(path) -> int:
    """How many lines a run log has (0 if it is not there)."""
    return len(path.read_text().splitlines()) if path.is_file() else 0
