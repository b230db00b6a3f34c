"""The one error type of the description layer."""

from __future__ import annotations


class DescriptionError(ValueError):
    """A description file (URDF/xacro, poses, kit) is missing, malformed or inconsistent.

    The message always names the file and the item that is wrong, e.g.
    ``phil.urdf: joint 'waist': <limit> lacks attribute 'upper'``.

    Attributes:
        source: the file (or other source) that holds the bad item.
        item: the item inside it (joint, parameter, pose...), or '' for the whole file.
    """

    def __init__(self, source: str, item: str, problem: str) -> None:
        self.source = str(source)
        self.item = item
        self.problem = problem
        where = f'{self.source}: {item}: ' if item else f'{self.source}: '
        super().__init__(where + problem)
