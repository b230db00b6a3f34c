"""score_player: PLAY / HIT goals -> play chunks and hit events."""
