"""The behavior planner's, the TCP bridges' and the score player's parameters: validated once,
a bad value named."""

import pytest

from phil_control.behavior_planner.config import PARAMETERS as PLANNER
from phil_control.behavior_planner.config import Config as PlannerConfig
from phil_control.gen1_bridge.config import PARAMETERS as GEN1
from phil_control.gen1_bridge.config import Config as Gen1Config
from phil_control.score_player.config import PARAMETERS as PLAYER
from phil_control.score_player.config import Config as PlayerConfig
from phil_control.tcp_bridge.config import PARAMETERS as BRIDGE
from phil_control.tcp_bridge.config import Config as BridgeConfig


def defaults(table: dict) -> dict:
    return {name: default for name, (default, _description) in table.items()}


def test_the_defaults_are_valid_and_every_parameter_is_described():
    planner = PlannerConfig.from_values(defaults(PLANNER))
    assert (planner.status_rate_hz, planner.watched_nodes) == (10.0, ())
    bridge = BridgeConfig.from_values(defaults(BRIDGE))
    assert (bridge.server.host, bridge.server.port, bridge.log_dir) == ('127.0.0.1', 1951, None)
    gen1 = Gen1Config.from_values(defaults(GEN1))
    assert (gen1.address, gen1.port, gen1.play_list.name) == ('127.0.0.1', 9999, 'play_list.yaml')
    assert PlayerConfig.from_values(defaults(PLAYER)).velocity_delta == 0
    for table in (PLANNER, BRIDGE, GEN1, PLAYER):
        assert all(description for _default, description in table.values())


@pytest.mark.parametrize(
    ('config', 'table', 'name', 'value', 'words'),
    [
        (
            PlannerConfig,
            PLANNER,
            'status_rate_hz',
            0.1,
            'status_rate_hz = 0.1 must be in 0.5..100',
        ),
        (PlannerConfig, PLANNER, 'liveness_timeout_s', 0.0, 'liveness_timeout_s must be positive'),
        (BridgeConfig, BRIDGE, 'reply_timeout_s', -1.0, 'reply_timeout_s = -1.0 must be > 0 s'),
        (BridgeConfig, BRIDGE, 'max_clients', 0, 'max_clients'),
        (Gen1Config, GEN1, 'port', 70000, 'port = 70000 must be in 0..65535'),
        (Gen1Config, GEN1, 'max_clients', 0, 'max_clients = 0 must be >= 1'),
        (Gen1Config, GEN1, 'play_list', '/nonexistent.yaml', 'play_list: no such file'),
        (
            PlayerConfig,
            PLAYER,
            'velocity_delta',
            7,
            'parameter velocity_delta must be an integer in -6..6, got 7',
        ),
    ],
)
def test_a_bad_value_is_refused_naming_the_parameter(config, table, name, value, words):
    with pytest.raises(ValueError, match=words):
        config.from_values({**defaults(table), name: value})
