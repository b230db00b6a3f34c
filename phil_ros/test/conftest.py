"""Shared pytest set-up: Hypothesis profiles (CI runs are derandomized and deadline-free, so a
loaded machine cannot fail a property test by being slow), and the graph key the nodes under
test share (the launcher makes a fresh one for every real start)."""

import os

from hypothesis import HealthCheck, settings

from phil_description.core.graph_key import GRAPH_KEY_ENV, GraphKey

os.environ.setdefault(GRAPH_KEY_ENV, GraphKey.generate())

settings.register_profile(
    'ci', derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile('dev', deadline=None)
settings.load_profile(os.environ.get('HYPOTHESIS_PROFILE', 'dev'))
