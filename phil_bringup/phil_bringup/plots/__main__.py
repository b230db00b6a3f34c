"""``python -m phil_bringup.plots <run> [--out DIR]``."""

import sys

from phil_bringup.plots.cli import main

sys.exit(main())
