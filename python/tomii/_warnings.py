"""Warnings that point at the user's line, however deep in the package they are raised."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

_PACKAGE = str(Path(__file__).resolve().parent)


def user_stacklevel() -> int:
    """The `stacklevel` of the innermost caller outside this package, for `warnings.warn`."""
    level, frame = 1, sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        level += 1
        frame = frame.f_back  # type: ignore[assignment]
    return level


class GraphWarning(UserWarning):
    """What a graph file's Tomii 1.2 meaning needed said: one warning per kind, with the count of
    nodes and an example node, or one per node with `verbose=True`
    (tomii-core/src/graph/README.md, "Warnings")."""


def warn_graph(lines: list[str], verbose: bool = False) -> None:
    """Raises a graph's warnings as GraphWarnings, pointing at the user's line: one per kind
    (as `tomii run` prints them), or every line when `verbose`."""
    if not lines:
        return
    from ._tomii import summarise_warnings

    for line in lines if verbose else summarise_warnings(lines):
        warnings.warn(line, GraphWarning, stacklevel=user_stacklevel())
