"""The wavefront graph: Smith-Waterman over a grid of blocks, one task per block.

Block (i, j) waits for (i - 1, j) and (i, j - 1), and so, through them, for (i - 1, j - 1). Two
encodings of the same tasks (README.md, "The graph"):

- `"block"` (default): one node `b{i}_{j}` of one instance per block, with exactly those two
  `$dep` edges;
- `"diagonal"`: one node `diag{d}` per anti-diagonal d = i + j, whose instance k is the block of
  row `first(d) + k`, reading `diag{d-1}` at offsets [Δ - 1, Δ] with wrap, as
  `tomii.graphs.wavefront` does. A block on row 0 or column 0 then also waits for the far end of
  the previous diagonal: up to two extra edges per diagonal, none within a diagonal.

Every task of a frame shares one `wf_problem` (a computed initialization, destroyed when the run
ends) and writes that frame's slot of it in place.
"""

from __future__ import annotations

from typing import Literal

import tomii

Encoding = Literal["block", "diagonal"]
ENCODINGS: tuple[Encoding, ...] = ("block", "diagonal")

#: Match, mismatch and (linear) gap scores.
SCORES = {"match": 2, "mismatch": -3, "gap": 4}


def blocks(length: int, block: int) -> int:
    """Blocks along a sequence of `length` letters."""
    return -(-length // block)


def first_row(d: int, rows: int, cols: int) -> int:
    """The row of the first block of anti-diagonal d in a rows x cols grid."""
    return max(0, d - cols + 1)


def build(
    a: str,
    b: str,
    *,
    block: int,
    slots: int,
    keep_table: bool = False,
    encoding: Encoding = "block",
) -> tomii.Graph:
    """The graph aligning `a` with `b` in blocks of `block` letters, for runs of `slots` slots."""
    app = tomii.Graph(name="wavefront")
    problem = app.var(
        "problem",
        func="wf_problem_new",
        args=[
            tomii.String(a),
            tomii.String(b),
            block,
            tomii.i32(SCORES["match"]),
            tomii.i32(SCORES["mismatch"]),
            tomii.i32(SCORES["gap"]),
            slots,
            keep_table,
        ],
    )
    rows, cols = blocks(len(a), block), blocks(len(b), block)
    add = _by_block if encoding == "block" else _by_diagonal
    last = add(app, problem, rows, cols)
    app.node("score", func="wf_score", args=[problem, last.dep(wrap=False)])
    app.node("last_row", func="wf_last_row", args=[problem, len(b) + 1, last.dep(wrap=False)])
    app.node("last_col", func="wf_last_col", args=[problem, len(a) + 1, last.dep(wrap=False)])
    if keep_table:
        cells = (len(a) + 1) * (len(b) + 1)
        app.node("table", func="wf_table", args=[problem, cells, last.dep(wrap=False)])
    return app


def _by_block(app: tomii.Graph, problem: tomii.Var, rows: int, cols: int) -> tomii.Node:
    """One node per block; returns the last block's."""
    node: dict[tuple[int, int], tomii.Node] = {}
    for i in range(rows):
        for j in range(cols):
            waits = [node[i - 1, j].dep(wrap=False)] if i > 0 else []
            waits += [node[i, j - 1].dep(wrap=False)] if j > 0 else []
            node[i, j] = app.node(f"b{i}_{j}", func="wf_block", args=[problem, i + j, i, *waits])
    return node[rows - 1, cols - 1]


def _by_diagonal(app: tomii.Graph, problem: tomii.Var, rows: int, cols: int) -> tomii.Node:
    """One node per anti-diagonal; returns the last one's (a single block)."""
    previous: tomii.Node | None = None
    for d in range(rows + cols - 1):
        first = first_row(d, rows, cols)
        width = min(d, rows - 1) - first + 1
        args = [problem, d, first]
        if previous is not None:
            delta = first - first_row(d - 1, rows, cols)
            args.append(previous.dep([delta - 1, delta], wrap=True))
        previous = app.node(f"diag{d}", func="wf_block", factor=width, args=args)
    assert previous is not None
    return previous
