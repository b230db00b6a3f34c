"""The figure canvas every run figure draws on: an Agg figure (no display) and its PNG file."""

from __future__ import annotations

from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

DPI = 100


def new_figure(width_in: float, height_in: float, constrained: bool = True) -> Figure:
    """A figure of that size in inches on an Agg canvas; ``constrained``: constrained layout."""
    figure = Figure(
        figsize=(width_in, height_in), dpi=DPI, layout='constrained' if constrained else None
    )
    FigureCanvasAgg(figure)
    return figure


def save_png(figure: Figure, path: Path) -> Path:
    """Write ``figure`` to ``path`` as PNG (its folder made as needed); returns ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=DPI, format='png')
    return path
