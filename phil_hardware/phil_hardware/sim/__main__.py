"""``python -m phil_hardware.sim``: run the device simulator (see :mod:`.runner`)."""

import sys

from phil_hardware.sim.runner import main

sys.exit(main())
