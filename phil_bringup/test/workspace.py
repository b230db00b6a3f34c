"""Paths of the workspace this package's tests check."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
