"""Phil hardware package."""

from phil_hardware.compiled import prefer_sources

# Before any compiled module is imported: their sources when a build is stale (see compiled.py).
prefer_sources()
