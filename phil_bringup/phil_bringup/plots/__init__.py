"""Run-log loading and figures: ``python -m phil_bringup.plots <run> [--out DIR]`` or
``phil plot <run>``. ``runlog`` reads a run folder (into the ``logtypes``), ``stats`` holds
the pure statistics, ``figures`` draws the PNGs (with ``joint_figures`` and ``jitter_figure``,
on the ``canvas``), ``cli`` is the command."""

DEFAULT_WINDOW_S = 0.05  # hit/impact matching window, s
