"""The pipeline graph: ingest (N) → transform (N, 1:1) → aggregate (1, reading every transform)
→ emit (1): the shape of Tomii 1.2's pipeline bench, with real floating-point work in transform."""

from __future__ import annotations

import tomii


def build(items: int, iterations: int) -> tomii.Graph:
    """The pipeline of `items` items a frame, each transformed by `iterations` sines."""
    app = tomii.Graph(name="pipeline")
    ingest = app.node("ingest", func="pl_ingest", factor=items, args=[items])
    transform = app.node(
        "transform", func="pl_transform", factor=items, args=[ingest.out(), iterations]
    )
    aggregate = app.node("aggregate", func="pl_aggregate", args=[transform.out(every=True)])
    app.node("emit", func="pl_emit", args=[aggregate.out()])
    return app
