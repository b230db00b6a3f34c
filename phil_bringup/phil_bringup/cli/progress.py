"""Live progress bar for `phil play`, fed by Play action feedback."""

from __future__ import annotations

from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn


class PlayProgress:
    """Context manager; call `update(feedback)` with phil_msgs/Play feedback."""

    def __init__(self) -> None:
        self._progress = Progress(
            TextColumn('[bold]{task.fields[play_id]}'),
            BarColumn(),
            TextColumn('bar {task.completed:.0f}/{task.total:.0f}'),
            TextColumn('speed {task.fields[speed]:.2f}'),
            TextColumn('hits {task.fields[hits]}'),
            TimeElapsedColumn(),
        )
        self._task = None

    def __enter__(self) -> PlayProgress:
        self._progress.start()
        self._task = self._progress.add_task('play', total=1, play_id='', speed=1.0, hits=0)
        return self

    def __exit__(self, *_: object) -> None:
        self._progress.stop()

    def update(self, feedback) -> None:
        self._progress.update(
            self._task,
            completed=feedback.bar,
            total=max(1, feedback.total_bars),
            play_id=feedback.play_id,
            speed=feedback.speed,
            hits=feedback.hits_played,
        )
