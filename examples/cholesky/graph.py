"""The tiled Cholesky factorisation as a Tomii graph: one node per (kernel, step k), and for GEMM
per (k, column j), so that every edge is a fixed offset or one fixed instance. The edges are
exactly the tile dependencies (README.md, "The graph"); this module must never add an edge that
the factorisation does not need, such as a barrier between steps.

Instance t of a node works on tile row i: i = k + 1 + t for TRSM(k) and SYRK(k), i = j + 1 + t
for GEMM(k, j); the kernels read t from their call context.
"""

from __future__ import annotations

from math import comb

import tomii

#: The node priorities of each scheme: POTRF, TRSM, SYRK, GEMM, and GEMM updating column k + 1
#: (the next panel). "panel" is the classic one: the panel tasks (POTRF, TRSM) first.
PRIORITIES: dict[str, tuple[int, int, int, int, int]] = {
    "panel": (1, 1, 0, 0, 0),
    "lookahead": (3, 2, 1, 0, 1),
    "none": (0, 0, 0, 0, 0),
}


def tasks_per_frame(tiles: int) -> int:
    """The tasks of one factorisation: nt POTRF, C(nt, 2) TRSM and SYRK, C(nt, 3) GEMM, and the
    digest."""
    return tiles + 2 * comb(tiles, 2) + comb(tiles, 3) + 1


def cholesky_graph(
    tiles: int, tile: int, *, slots: int = 1, seed: int = 1, priorities: str = "panel"
) -> tomii.Graph:
    """The graph factoring, every frame, the SPD matrix of `tiles` × `tiles` tiles of `tile` ×
    `tile` made from `seed`, with work copies for `slots` frames in flight (at least the run's
    `slots`). Post-nodes `input` and `factor` give A and the last frame's L as n × n arrays; each
    frame's sink `digest` gives the sum of its L."""
    if tiles < 1 or tile < 1 or slots < 1:
        raise ValueError(f"tiles, tile and slots must be positive (got {tiles}, {tile}, {slots})")
    if priorities not in PRIORITIES:
        raise ValueError(f"priorities must be one of {', '.join(PRIORITIES)} (got {priorities!r})")
    p_potrf, p_trsm, p_syrk, p_gemm, p_next = PRIORITIES[priorities]
    app = tomii.Graph()
    matrix = app.var("matrix", func="cholesky_matrix_new", args=[tiles, tile, seed, slots])
    potrf: list[tomii.Node] = []
    trsm: list[tomii.Node] = []
    syrk: list[tomii.Node] = []
    gemm: dict[tuple[int, int], tomii.Node] = {}
    for k in range(tiles):
        # POTRF(k) after the last update of tile (k, k): SYRK(k - 1, k), instance 0 of SYRK(k - 1).
        after = [syrk[k - 1].dep(instance=0)] if k > 0 else []
        potrf.append(
            app.node(
                f"potrf_{k}", func="cholesky_potrf", args=[matrix, k, *after], priority=p_potrf
            )
        )
        rows = tiles - k - 1
        if rows == 0:
            break
        # TRSM(k, i) after POTRF(k) and the last update of tile (i, k): GEMM(k - 1, i, k), the
        # same row i, so the same instance of GEMM(k - 1, k).
        after = [potrf[k].dep(instance=0)]
        if k > 0:
            after.append(gemm[k - 1, k].dep(0, wrap=False))
        trsm.append(
            app.node(
                f"trsm_{k}",
                func="cholesky_trsm",
                args=[matrix, k, *after],
                factor=rows,
                priority=p_trsm,
            )
        )
        # SYRK(k, i) after TRSM(k, i) (same row: offset 0) and SYRK(k - 1, i), whose instance
        # for row i is one further on (offset 1).
        after = [trsm[k].dep(0, wrap=False)]
        if k > 0:
            after.append(syrk[k - 1].dep(1, wrap=False))
        syrk.append(
            app.node(
                f"syrk_{k}",
                func="cholesky_syrk",
                args=[matrix, k, *after],
                factor=rows,
                priority=p_syrk,
            )
        )
        for j in range(k + 1, tiles - 1):
            # GEMM(k, i, j) after TRSM(k, i) (instance i - k - 1: offset j - k from this one's
            # i - j - 1), TRSM(k, j) (instance j - k - 1, for every i) and GEMM(k - 1, i, j).
            after = [trsm[k].dep(j - k, wrap=False), trsm[k].dep(instance=j - k - 1)]
            if k > 0:
                after.append(gemm[k - 1, j].dep(0, wrap=False))
            gemm[k, j] = app.node(
                f"gemm_{k}_{j}",
                func="cholesky_gemm",
                args=[matrix, k, j, *after],
                factor=tiles - j - 1,
                priority=p_next if j == k + 1 else p_gemm,
            )
    # POTRF(nt - 1) is the last task: every other one precedes it (README.md, "The graph").
    app.node("digest", func="cholesky_digest", args=[matrix, potrf[-1].dep(instance=0)])
    n = tiles * tile
    app.post_node("input", func="cholesky_input", args=[matrix, n])
    app.post_node("factor", func="cholesky_factor", args=[matrix, n])
    return app
