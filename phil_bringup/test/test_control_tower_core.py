"""The control tower's ROS-free parts: strokes matched as they come, the frames the page gets,
and the web server on loopback (page, hello, frames, commands, plots)."""

from __future__ import annotations

import asyncio
import json
import math
import urllib.error
import urllib.request

import aiohttp
import pytest

from phil_bringup.control_tower.hit_errors import HitError, HitErrors
from phil_bringup.control_tower.server import TowerServer
from phil_bringup.control_tower.tower_state import TowerState

pytestmark = pytest.mark.timeout(60)


def test_strokes_are_matched_in_either_order_per_instrument_nearest_first():
    errors = HitErrors()
    assert errors.commanded('snare', 10.000) is None
    assert errors.detected('bass', 10.001) is None  # another instrument: no match
    assert errors.detected('snare', 10.002) == HitError('snare', 10.0, 2.0)
    assert errors.detected('snare', 11.003) is None  # impact first
    assert errors.commanded('snare', 11.040) == HitError('snare', 11.04, pytest.approx(-37.0))
    errors = HitErrors()
    errors.detected('ride', 20.010)
    errors.detected('ride', 20.030)
    assert errors.commanded('ride', 20.027) == HitError('ride', 20.027, pytest.approx(3.0))
    assert errors.commanded('ride', 20.200) is None  # 0.19 s from the one left: no stroke


def test_unmatched_strokes_are_forgotten_after_the_keep_time():
    errors = HitErrors(keep_s=1.0)
    errors.commanded('top', 5.0)
    assert errors.detected('top', 5.02) is not None
    errors.commanded('top', 6.0)
    assert errors.detected('top', 7.5) is None  # the hit at 6.0 waited too long
    assert errors.commanded('top', 7.49) is not None  # the impact waited: matched


def test_a_frame_has_the_joints_in_urdf_order_and_events_are_numbered():
    state = TowerState(['a', 'b', 'c'])
    state.set_measured(['c', 'a', 'unknown'], [3.0, 1.0, 9.0])
    frame = state.frame(100.0)
    assert frame['joints'] == {
        'names': ['a', 'b', 'c'],
        'measured_rad': [1.0, None, 3.0],
        'commanded_rad': None,
    }
    state.set_commanded(['b'], [2.0])
    state.set_motors([{'joint': 'a', 'temperature_c': math.nan, 'age_ms': math.inf}])
    state.set_status({'state': 'IDLE', 'speed': math.nan, 'faults': []})
    frame = state.frame(101.0)
    assert frame['joints']['commanded_rad'] == [None, 2.0, None]
    assert frame['motors'] == [{'joint': 'a', 'temperature_c': None, 'age_ms': None}]
    assert frame['status']['speed'] is None
    json.dumps(frame, allow_nan=False)  # NaN never reaches the page
    _, start = state.events_since(0)
    state.hit('commanded', 'snare', 50.0)
    state.hit('detected', 'snare', 50.0015)
    events, last = state.events_since(start)
    assert [h['source'] for h in events['hits']] == ['commanded', 'detected']
    assert events['errors'] == [
        {'instrument': 'snare', 'time_s': 50.0, 'error_ms': pytest.approx(1.5)}
    ]
    assert state.events_since(last) == ({'hits': [], 'errors': []}, last)


@pytest.fixture
def tower(tmp_path):
    page = tmp_path / 'page'
    page.mkdir()
    (page / 'index.html').write_text('<title>tower</title>')
    (page / 'tower.js').write_text('// bundle')
    plots = tmp_path / 'run' / 'plots'
    plots.mkdir(parents=True)
    (plots / 'hit_timing.png').write_bytes(b'\x89PNG')
    (tmp_path / 'run' / 'secret.txt').write_text('not a plot')
    state = TowerState(['waist'])
    lines, estops = [], []

    def handle_line(line):
        lines.append(line)
        return 'OK|START' if line == 'START' else f'ERR|{line}|refused'

    server = TowerServer(
        state,
        {'type': 'hello', 'urdf': '<robot/>'},
        handle_line,
        page,
        plots,
        '127.0.0.1',
        0,
        20.0,
        lambda: estops.append(1),
    )
    host, port = server.start()
    server.lines, server.state_, server.url = lines, state, f'http://{host}:{port}'
    server.estops = estops
    yield server
    server.stop()


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5.0) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def test_the_page_its_bundle_and_the_runs_plots_are_served_and_nothing_else(tower):
    assert _get(tower.url + '/') == (200, b'<title>tower</title>')
    assert _get(tower.url + '/tower.js') == (200, b'// bundle')
    status, listing = _get(tower.url + '/plots/')
    assert status == 200 and b'hit_timing.png' in listing
    assert _get(tower.url + '/plots/hit_timing.png') == (200, b'\x89PNG')
    assert _get(tower.url + '/plots/..%2Fsecret.txt')[0] == 404
    assert _get(tower.url + '/plots/secret.txt')[0] == 404
    assert _get(tower.url + '/../run/secret.txt')[0] == 404


def test_a_page_gets_hello_then_frames_and_the_reply_to_each_command(tower):
    tower.state_.set_measured(['waist'], [0.25])
    tower.state_.hit('commanded', 'ride', 0.5)  # before the page: not its news

    async def session():
        async with aiohttp.ClientSession() as http, http.ws_connect(tower.url + '/ws') as ws:
            hello = json.loads((await ws.receive()).data)
            frames = [json.loads((await ws.receive()).data)]
            tower.state_.hit('commanded', 'snare', 1.0)
            while len(frames) < 4:
                message = json.loads((await ws.receive()).data)
                frames.append(message)
            await ws.send_str(json.dumps({'line': 'START'}))
            await ws.send_str('not json')
            await ws.send_str(json.dumps({'line': ' estop '}))
            replies = []
            while len(replies) < 3:
                message = json.loads((await ws.receive()).data)
                if message['type'] == 'reply':
                    replies.append(message)
            return hello, frames, replies

    hello, frames, replies = asyncio.run(session())
    assert hello == {'type': 'hello', 'urdf': '<robot/>'}
    assert all(f['type'] == 'state' for f in frames)
    assert frames[0]['joints']['measured_rad'] == [0.25]
    hits = [hit['instrument'] for f in frames for hit in f['hits']]
    assert hits == ['snare']  # each hit once, none from before the page
    assert math.isfinite(frames[-1]['time_s'])
    assert replies[0] == {'type': 'reply', 'line': 'START', 'reply': 'OK|START'}
    assert replies[1]['reply'].startswith('ERR|-|not a command message')
    assert tower.lines == ['START', ' estop ']  # ESTOP: the fast path, then in its turn
    assert tower.estops == [1]
