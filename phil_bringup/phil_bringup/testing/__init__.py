"""Helpers that run the whole graph as real processes, for tests and benchmarks."""
