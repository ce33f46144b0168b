"""The browser view of a graph: a self-contained page (`webpage.assemble`, template
`_web/graph.html`) that draws the graph in layers, node and edge kinds styled apart, with a
node's details on click; `python -m tomii --visualize` and `Graph.visualize(mode="web")` open it.

It draws what it is given and checks nothing: loading a file (`load_graph_file`) is where a bad
graph is refused, and saving an edit is the editor's (`graph_editor`), through the runtime's
parser. It never loads anything from the network.
"""

from __future__ import annotations

import warnings
import webbrowser
from pathlib import Path
from typing import Any

from ._warnings import GraphWarning
from .export_python import builder_script
from .webpage import assemble, temporary_page

__all__ = ["graph_page", "graph_payload", "load_graph_file", "open_page", "write_graph_page"]


def load_graph_file(
    path: str | Path, *, workers: int | None = None
) -> tuple[dict[str, Any], list[str]]:
    """The graph of file `path`, in either dialect, as a current-format dict (a Tomii 1.2 file is
    converted as `tomii convert` does), and its warnings. A graph the runtime would refuse raises
    GraphError naming the file and the node or field."""
    from .graph import Graph

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", GraphWarning)
        graph = Graph.from_json(Path(path), workers=workers)
    notes = [str(w.message) for w in caught if issubclass(w.category, GraphWarning)]
    return graph.to_dict(), notes


def graph_payload(
    graph: dict[str, Any], *, title: str, editable: bool = False, token: str = ""
) -> dict[str, Any]:
    """What `_web/graph.js` reads: the graph, the page title, whether it may be edited (then the
    editor's `token` goes with every request), and, for a page that cannot ask the editor, the
    builder script that "Export Python" shows."""
    payload: dict[str, Any] = {"graph": graph, "title": title, "editable": editable}
    if editable:
        payload["token"] = token
    else:
        payload["python"] = builder_script(graph)
    return payload


def graph_page(
    graph: dict[str, Any], *, title: str | None = None, editable: bool = False, token: str = ""
) -> str:
    """The HTML of the graph view of `graph` (a graph-format dict)."""
    shown = title or f"graph {graph.get('name') or '(unnamed)'}"
    return assemble(
        "graph.html",
        title=shown,
        payload=graph_payload(graph, title=shown, editable=editable, token=token),
        libraries=("d3", "dagre"),
        styles=("page.css", "graph.css"),
        scripts=("graph.js",),
    )


def write_graph_page(graph: dict[str, Any], path: str | Path, *, title: str | None = None) -> Path:
    """Writes the (read-only) graph view of `graph` to `path` and returns the path."""
    path = Path(path)
    path.write_text(graph_page(graph, title=title), encoding="utf-8")
    return path


def open_page(graph: dict[str, Any], *, title: str | None = None) -> tuple[Path, bool]:
    """Writes the graph view to a new temporary file, kept a day for the browser to read
    (`webpage.temporary_page`), and opens it there. Returns the file and whether a browser was
    started."""
    path = temporary_page("tomii-graph-", graph_page(graph, title=title))
    return path, webbrowser.open(path.resolve().as_uri())
