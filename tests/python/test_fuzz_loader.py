"""The graph loader never crashes, panics or hangs, whatever the JSON: it either runs the graph or
raises a TomiiError that names what is wrong.

Three sources of input: arbitrary JSON values, the repository's graphs with one field mutated
(replaced, removed or retyped), and arbitrary text. Each runs one frame on one worker with the
synthetic kernels, so that a graph the loader accepts is also executed (a graph with a
`network_config` is only loaded: run, it would wait for packets). A Rust panic would surface
as pyo3's PanicException (a BaseException, not a TomiiError) and fail the test; a crash would end
the test process.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import GRAPHS, ROOT, SYNTHETIC

import tomii

EXAMPLES = sorted(GRAPHS.glob("*.json")) + sorted((ROOT / "examples").glob("*/*.json"))
VALID = []
for path in EXAMPLES:
    try:
        VALID.append(json.loads(path.read_text(encoding="utf-8")))
    except json.JSONDecodeError:
        pass  # malformed.json, there on purpose

#: JSON values of any shape, with the graph format's own keys and words likely to appear.
WORDS = st.sampled_from(
    ["nodes", "name", "function", "args", "factor", "type", "$res", "$dep", "$barrier", "$ref",
     "predecessor", "index", "all", "group_by", "loop", "condition", "post_nodes", "checksum",
     "initializations", "value", "u64", "usize", "priority", "use_workers", "0-1", "wrap"]
)  # fmt: skip
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)
    | WORDS
    | st.text(max_size=8)
)
JSON = st.recursive(
    SCALARS,
    lambda children: (
        st.lists(children, max_size=5)
        | st.dictionaries(WORDS | st.text(max_size=6), children, max_size=5)
    ),
    max_leaves=30,
)


def run(graph: Any) -> None:
    try:
        if isinstance(graph, dict) and graph.get("network_config"):
            # A network graph that loads would wait for packets: it is loaded, not run.
            tomii.validate(graph)
            return
        tomii.run_graph(
            graph if isinstance(graph, (dict, str)) else json.dumps(graph),
            dylibs=[SYNTHETIC],
            frames=1,
            stall_timeout_ms=2000,
        )
    except tomii.TomiiError as error:
        message = str(error)
        assert message and "\n" not in message.split(": ", 1)[0], message
        assert "panicked" not in message and "RUST_BACKTRACE" not in message, message


@st.composite
def mutated(draw: st.DrawFn) -> Any:
    """A repository graph with one value somewhere replaced, removed or given another type."""
    graph = copy.deepcopy(draw(st.sampled_from(VALID)))
    paths: list[tuple[Any, Any]] = []

    def walk(container: Any) -> None:
        keys = container.keys() if isinstance(container, dict) else range(len(container))
        for key in keys:
            paths.append((container, key))
            if isinstance(container[key], (dict, list)):
                walk(container[key])

    walk(graph)
    if not paths:
        return graph
    container, key = draw(st.sampled_from(paths))
    action = draw(st.sampled_from(["replace", "remove"]))
    if action == "remove":
        del container[key]
    else:
        container[key] = draw(JSON)
    return graph


FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(JSON)
def test_arbitrary_json_values(value: Any) -> None:
    run(value)


@FUZZ
@given(mutated())
def test_repository_graphs_with_one_field_mutated(graph: Any) -> None:
    run(graph)


@FUZZ
@given(st.text(max_size=200))
def test_arbitrary_text(text: str) -> None:
    run(text if text.lstrip().startswith("{") else "{" + text)


def test_the_inputs_reach_the_runtime(tmp_path: Path) -> None:
    """The fuzzers are only worth their inputs: a valid graph must run, an invalid one fail."""
    run(VALID[0])
    graph = tmp_path / "graph.json"
    graph.write_text('{"nodes": [{"name": "x", "function": "checksum", "factor": 0}]}')
    try:
        tomii.run_graph(graph, dylibs=[SYNTHETIC])
    except tomii.GraphError as error:
        assert str(graph) in str(error) and "factor" in str(error)
    else:
        raise AssertionError("factor 0 was accepted")
