"""Shared pytest set-up: Hypothesis profiles (CI runs are derandomized and deadline-free, so a
loaded machine cannot fail a property test by being slow)."""

import os

from hypothesis import HealthCheck, settings

settings.register_profile('ci', derandomize=True, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile('dev', deadline=None)
settings.load_profile(os.environ.get('HYPOTHESIS_PROFILE', 'dev'))
