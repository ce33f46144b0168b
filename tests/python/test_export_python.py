"""The graph view's "Export Python": for every graph file of the repository that the runtime
accepts, exec'ing the builder script rebuilds the graph (its `to_dict()` is the file's graph as
the builder spells it), and the rebuilt graph is accepted too."""

from __future__ import annotations

import ast
import warnings
from pathlib import Path
from typing import Any

import pytest
from reference import ROOT

import tomii
from tomii.export_python import builder_form, builder_script

#: Where the repository keeps graph files: examples, fixtures, templates, experiments.
GRAPH_DIRS = ["examples", "experiments", "plugins", "tomii-core/tests", "python/tomii/_templates"]
GRAPH_FILES = sorted(path for folder in GRAPH_DIRS for path in (ROOT / folder).rglob("*.json"))


def accepted(path: Path) -> dict[str, Any] | None:
    """The file's graph in the current format, or None for a fixture the runtime refuses."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tomii.GraphWarning)
        try:
            tomii.validate(path, workers=4)
        except tomii.GraphError:
            return None
        return tomii.Graph.from_json(path, workers=4).to_dict()


def rebuilt(graph: dict[str, Any]) -> tomii.Graph:
    script = builder_script(graph)
    namespace: dict[str, Any] = {"__name__": "exported"}
    exec(compile(script, "exported.py", "exec"), namespace)  # noqa: S102 (the script under test)
    built = namespace["graph"]
    assert isinstance(built, tomii.Graph)
    return built


def test_the_repository_has_graph_files_of_both_dialects_to_export() -> None:
    names = {path.relative_to(ROOT).as_posix() for path in GRAPH_FILES}
    assert "examples/graphs/fanout.json" in names
    assert "tomii-core/tests/graphs/v12/every_construct.json" in names
    assert sum(accepted(path) is not None for path in GRAPH_FILES) >= 25


@pytest.mark.parametrize("path", GRAPH_FILES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_the_script_rebuilds_every_accepted_graph(path: Path) -> None:
    graph = accepted(path)
    if graph is None:
        return  # A malformed fixture: there is no graph to export.
    built = rebuilt(graph)
    assert built.to_dict() == builder_form(graph)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tomii.GraphWarning)
        assert tomii.validate(built) == "tomii"


def test_builder_form_only_respells() -> None:
    graph: dict[str, Any] = {
        "nodes": [
            {"name": "a", "function": "f", "args": [3, -2, 1.5, True, "s"]},
            {
                "name": "b",
                "function": "f",
                "args": [{"type": "$res", "predecessor": {"name": "a", "index": 0}}],
            },
        ]
    }
    assert builder_form(graph)["nodes"] == [
        {
            "name": "a",
            "function": "f",
            "args": [
                {"type": "usize", "value": 3},
                {"type": "i64", "value": -2},
                {"type": "f64", "value": 1.5},
                {"type": "bool", "value": True},
                {"type": "String", "value": "s"},
            ],
        },
        {"name": "b", "function": "f", "args": [{"type": "$res", "predecessor": {"name": "a"}}]},
    ]
    assert graph["nodes"][0]["args"] == [3, -2, 1.5, True, "s"]  # The argument is left alone.


def test_names_that_are_not_python_identifiers_become_variables() -> None:
    graph = {
        "name": "odd names",
        "initializations": [{"name": "print", "value": 2}],
        "nodes": [
            {"name": "class", "function": "f", "factor": "print"},
            {
                "name": "my-node",
                "function": "f",
                "args": [{"type": "$res", "predecessor": {"name": "class"}}],
            },
            {
                "name": "2nd",
                "function": "f",
                "args": [{"type": "$dep", "predecessor": {"name": "later"}}],
            },
            {"name": "later", "function": "f"},
        ],
    }
    script = builder_script(graph)
    ast.parse(script)
    assert 'tomii.Graph(name="odd names")' in script
    assert 'tomii.Node("later").dep(wrap=False)' in script  # Read before it is declared.
    assert rebuilt(graph).to_dict() == builder_form(graph)


def test_the_script_prints_the_graph_when_run(tmp_path: Path) -> None:
    import subprocess
    import sys

    graph = tomii.Graph.from_json(ROOT / "examples" / "graphs" / "fanout.json").to_dict()
    script = tmp_path / "fanout.py"
    script.write_text(builder_script(graph), encoding="utf-8")
    run = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=True
    )
    assert tomii.Graph.from_json(run.stdout).to_dict() == builder_form(graph)


def test_the_builder_writes_what_the_script_needs() -> None:
    graph = tomii.Graph(name="ring")
    a = graph.node("a", func="f", factor=4, priority=-3, use_workers=1)
    graph.node("b", func="f", factor=4, args=[a.out(-1, wrap=True), a.dep(1, 3, wrap=True)])
    assert graph.to_dict() == {
        "name": "ring",
        "nodes": [
            {"name": "a", "function": "f", "factor": 4, "priority": -3, "use_workers": 1},
            {
                "name": "b",
                "function": "f",
                "factor": 4,
                "args": [
                    {"type": "$res", "predecessor": {"name": "a", "index": -1, "wrap": True}},
                    {"type": "$dep", "predecessor": {"name": "a", "index": "1-3", "wrap": True}},
                ],
            },
        ],
    }
    assert tomii.validate(graph) == "tomii"
    with pytest.raises(ValueError, match="wrap does not apply to group_by"):
        a.out(group_by=2, wrap=True)
    with pytest.raises(ValueError, match="does not fit in an i32"):
        graph.node("c", func="f", priority=2**31)
