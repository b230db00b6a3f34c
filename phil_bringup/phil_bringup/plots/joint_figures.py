"""The per-joint figures of a run: ``joints.png`` (desired vs measured, the commanded hits as
vertical lines coloured by limb) and ``tracking_error.png`` (desired - measured, RMS and max),
one panel per joint in columns by limb (:func:`joint_groups`)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from matplotlib.lines import Line2D

from phil_bringup.plots.canvas import new_figure, save_png
from phil_bringup.plots.runlog import RunLog
from phil_bringup.plots.stats import tracking_stats

HAND_COLORS = {'right': '#d62728', 'left': '#1f77b4', 'kick': '#2ca02c'}
OTHER_HAND_COLOR = '#7f7f7f'
DESIRED_STYLE = {'color': '#ff7f0e', 'linestyle': '--', 'linewidth': 1.0}
MEASURED_STYLE = {'color': '#222222', 'linestyle': '-', 'linewidth': 1.0}
# Panel columns of the per-joint figures and the hits drawn in them (None = every hit).
GROUPS = (
    (
        'Right arm',
        ('right_shoulder_1', 'right_shoulder_2', 'right_elbow', 'right_wrist'),
        ('right',),
    ),
    ('Left arm', ('left_shoulder_1', 'left_shoulder_2', 'left_elbow', 'left_wrist'), ('left',)),
    ('Waist and head', ('waist', 'head_yaw', 'head_pitch'), None),
    ('Pedals', ('right_pedal', 'left_pedal'), ('kick',)),
)


def joint_groups(joint_names: tuple[str, ...]) -> list[tuple[str, list[int], tuple | None]]:
    """(title, joint indices, hands drawn) per panel column; unknown joints go to 'Other'."""
    groups, placed = [], set()
    for title, names, hands in GROUPS:
        indices = [joint_names.index(name) for name in names if name in joint_names]
        if indices:
            groups.append((title, indices, hands))
            placed.update(indices)
    rest = [index for index in range(len(joint_names)) if index not in placed]
    for start in range(0, len(rest), 4):
        groups.append(('Other', rest[start : start + 4], None))
    return groups


def _joint_grid(run: RunLog, title: str):
    groups = joint_groups(run.joint_names)
    rows = max(len(indices) for _, indices, _ in groups)
    width, height = 4.2 * len(groups), 1.9 * rows + 1.3
    # A fixed layout: constrained layout costs seconds on a grid of this size.
    figure = new_figure(width, height, constrained=False)
    figure.subplots_adjust(
        left=0.7 / width,
        right=1 - 0.15 / width,
        top=1 - 0.6 / height,
        bottom=0.85 / height,
        hspace=0.5,
        wspace=0.2,
    )
    axes = figure.subplots(rows, len(groups), sharex=True, squeeze=False)
    figure.suptitle(title)
    panels = []
    for column, (group, indices, hands) in enumerate(groups):
        for row in range(rows):
            ax = axes[row][column]
            if row >= len(indices):
                ax.set_visible(False)
                continue
            index = indices[row]
            name = run.joint_names[index] if index < len(run.joint_names) else f'joint {index}'
            ax.set_title(f'{group}: {name}' if row == 0 else name, fontsize=9, loc='left')
            ax.tick_params(labelsize=8)
            ax.grid(True, alpha=0.3)
            if column == 0:
                ax.set_ylabel('deg', fontsize=8)
            ax.set_xlabel(
                'time since run start [s]' if row == len(indices) - 1 else '', fontsize=8
            )
            if row == len(indices) - 1:
                ax.xaxis.set_tick_params(labelbottom=True)
            panels.append((ax, index, hands))
    return figure, panels


def _hit_lines(ax, run: RunLog, hands: tuple | None, start_s: float) -> set[str]:
    hits = run.get('hits')
    if hits is None:
        return set()
    drawn = set()
    hand_of = np.asarray(hits.hand, dtype=object)
    for hand in sorted(set(hits.hand)):
        if hands is not None and hand not in hands:
            continue
        times = hits.command_time_s[hand_of == hand] - start_s
        ax.vlines(
            times,
            0,
            1,
            transform=ax.get_xaxis_transform(),
            colors=HAND_COLORS.get(hand, OTHER_HAND_COLOR),
            linewidth=0.6,
            alpha=0.45,
            zorder=0,
        )
        drawn.add(hand)
    return drawn


def _hit_legend(hands: set[str]) -> list[Line2D]:
    return [
        Line2D(
            [],
            [],
            color=HAND_COLORS.get(hand, OTHER_HAND_COLOR),
            linewidth=1.5,
            label=f'commanded hit ({hand})',
        )
        for hand in sorted(hands)
    ]


def joints_figure(run: RunLog, path: Path) -> Path:
    """Desired vs measured per joint with the commanded hits."""
    motors, trajectory = run.get('motors'), run.get('trajectory')
    start = run.start_s
    source = 'motors.csv' if motors is not None else 'trajectory.csv (planned points)'
    figure, panels = _joint_grid(
        run,
        f'Joint positions: desired vs measured [deg] ({source}; '
        'vertical lines: commanded hits from hits.csv)',
    )
    hands_drawn: set[str] = set()
    for ax, index, hands in panels:
        hands_drawn |= _hit_lines(ax, run, hands, start)
        if motors is not None:
            t, desired, actual = motors.joint(index)
            ax.plot(t - start, np.degrees(desired), **DESIRED_STYLE)
            ax.plot(t - start, np.degrees(actual), **MEASURED_STYLE)
        elif index < trajectory.positions.shape[1]:
            ax.plot(
                trajectory.t - start,
                np.degrees(trajectory.positions[:, index]),
                marker='.',
                markersize=2,
                **DESIRED_STYLE,
            )
    handles = [Line2D([], [], label='desired (commanded)', **DESIRED_STYLE)]
    if motors is not None:
        handles.append(Line2D([], [], label='measured', **MEASURED_STYLE))
    handles += _hit_legend(hands_drawn)
    figure.legend(
        handles=handles, loc='lower center', ncols=len(handles), fontsize=9, frameon=False
    )
    return save_png(figure, path)


def tracking_error_figure(run: RunLog, path: Path) -> Path:
    """Desired - measured per joint, RMS and max in the legends."""
    motors = run.get('motors')
    start = run.start_s
    figure, panels = _joint_grid(run, 'Tracking error: desired - measured [deg] (motors.csv)')
    for ax, index, _ in panels:
        t, desired, actual = motors.joint(index)
        error = np.degrees(desired - actual)
        rms, largest = tracking_stats(np.degrees(desired), np.degrees(actual))
        label = (
            'no samples' if not math.isfinite(rms) else f'RMS {rms:.3f} deg, max {largest:.3f} deg'
        )
        ax.axhline(0.0, color='black', linewidth=0.5)
        ax.plot(t - start, error, color='#9467bd', linewidth=0.8, label=label)
        low, high = ax.get_ylim()
        ax.set_ylim(low, high + 0.4 * (high - low))  # headroom: the legend stays off the data
        ax.legend(loc='upper right', fontsize=7, handlelength=1.0)
    return save_png(figure, path)
