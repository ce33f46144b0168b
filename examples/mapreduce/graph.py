"""The word-count graph: map (M instances) -> reduce (R instances, each reading every map's
table) -> collect (1, reading every reduce's table).

The corpus is a computed initialization (`mr_corpus_load`, once per run); every frame counts it
again. Map i returns a table of R partitions; reduce r receives all M tables (`out(every=True)`,
in map order) and merges partition r of each; collect receives the R merged partitions and
returns the counts as text.
"""

from __future__ import annotations

from pathlib import Path

import tomii


def build(corpus: Path, *, maps: int, reduces: int) -> tomii.Graph:
    """The graph counting the words of the file `corpus`."""
    app = tomii.Graph(name="wordcount")
    text = app.var("corpus", func="mr_corpus_load", args=[tomii.String(str(corpus))])
    mapped = app.node("map", func="mr_map", factor=maps, args=[text, maps, reduces])
    reduced = app.node("reduce", func="mr_reduce", factor=reduces, args=[mapped.out(every=True)])
    app.node("collect", func="mr_collect", args=[reduced.out(every=True)])
    return app
