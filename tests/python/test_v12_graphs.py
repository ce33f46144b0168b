"""Tomii 1.2 graph files from Python: run unchanged by `run_graph` (their warnings raised as
`tomii.GraphWarning`), to the outputs the reference model computes from their conversion;
`Graph.from_json` loads either dialect into a builder that can be extended and run; `validate`
names the dialect; a factor of `"$workers"` is the run's worker count."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from reference import SYNTHETIC

import tomii
from tomii._tomii import summarise_warnings
from tomii.check import expected_run

ROOT = Path(__file__).resolve().parents[2]
#: Every Tomii 1.2 graph of the repository without a network source.
V12_FILES = sorted(
    [
        *(ROOT / "tomii-core/tests/graphs/v12").glob("*.json"),
        *(ROOT / "examples/compat/v12").glob("*.json"),
    ]
)
LOCAL_FILES = [path for path in V12_FILES if "network_config" not in path.read_text()]
FRAMES = 3
WORKERS = 2


def graph_warnings(record: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in record if issubclass(w.category, tomii.GraphWarning)]


def test_the_fixtures_are_there() -> None:
    names = {path.name for path in LOCAL_FILES}
    assert {"every_construct.json", "pipeline.json", "stream_analytics.json"} <= names


@pytest.mark.parametrize("path", LOCAL_FILES, ids=lambda path: path.name)
def test_a_1_2_file_runs_unchanged_to_the_reference_models_outputs(path: Path) -> None:
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        result = tomii.run_graph(path, dylibs=[SYNTHETIC], frames=FRAMES, workers=WORKERS)
        builder = tomii.Graph.from_json(path)
    run_warnings = graph_warnings(record)
    assert result.report["graph_dialect"] == "tomii-1.2"
    # Each kind of warning twice, once by the run and once by the load, each pointing at this file.
    assert run_warnings == summarise_warnings(result.report["graph_warnings"]) * 2
    assert all(w.filename == __file__ for w in record if issubclass(w.category, tomii.GraphWarning))
    current = builder.to_dict()
    expected = expected_run(current, frames=FRAMES, workers=WORKERS)
    assert result.outputs == expected.outputs
    assert result.post_outputs == expected.post_outputs
    again = tomii.run_graph(current, dylibs=[SYNTHETIC], frames=FRAMES, workers=WORKERS)
    assert again.report["graph_dialect"] == "tomii"
    assert again.report["graph_warnings"] == []
    assert again.outputs == result.outputs


def test_the_warnings_say_what_a_node_selects() -> None:
    with pytest.warns(tomii.GraphWarning, match=r'node "aggregate".*inclusively') as record:
        dialect = tomii.validate(ROOT / "tomii-core/tests/graphs/v12/pipeline.json")
    assert dialect == "tomii-1.2"
    assert len(record) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tomii.validate(ROOT / "examples/compat/stream_analytics.json") == "tomii"


def test_from_json_gives_a_builder_to_extend() -> None:
    path = ROOT / "examples/compat/v12/stream_analytics.json"
    graph = tomii.Graph.from_json(path)
    sinks = [n["name"] for n in graph.to_dict()["nodes"]]
    last = graph[sinks[-1]]
    assert isinstance(last, tomii.Node)
    graph.node("extra", func="checksum", args=[last.dep(), 7])
    with pytest.raises(ValueError, match="duplicate node name"):
        graph.node(sinks[0], func="checksum")
    with pytest.raises(KeyError, match="no node, input or var called 'nope'"):
        graph["nope"]
    result = graph.run(dylib=SYNTHETIC, frames=2)
    assert any(name == "extra" for name, _, _ in result.outputs[0])
    # Text and dicts load too, and the current format comes back as it was.
    current = tomii.Graph.from_json(path).to_dict()
    assert tomii.Graph.from_json(json.dumps(current)).to_dict() == current
    assert tomii.Graph.from_json(current).to_dict() == current


def test_a_factor_of_workers_is_the_runs_worker_count() -> None:
    graph: dict[str, Any] = {
        "initializations": [],
        "nodes": [
            {
                "name": "spread",
                "function": "checksum",
                "factor": "$workers",
                "args": [{"type": "$ref", "value": "$index"}],
            }
        ],
    }
    for workers in (1, 3):
        with pytest.warns(tomii.GraphWarning, match=f"this run's {workers} worker"):
            result = tomii.run_graph(graph, dylibs=[SYNTHETIC], workers=workers)
        assert [instance for _, instance, _ in result.outputs[0]] == list(range(workers))
    with pytest.raises(tomii.GraphError, match=r"tomii convert --workers N"):
        tomii.Graph.from_json(graph)
    with pytest.warns(tomii.GraphWarning):
        builder = tomii.Graph.from_json(graph, workers=4)
    assert builder.to_dict()["nodes"][0]["factor"] == 4


def test_errors_name_the_node_and_the_1_2_field() -> None:
    graph = {
        "initializations": [],
        "nodes": [{"name": "gen", "function": "f", "args": [{"type": "u8", "value": "300"}]}],
    }
    with pytest.raises(tomii.GraphError, match=r'node "gen" args\[0\] value.*does not fit in u8'):
        tomii.Graph.from_json(graph)
    with pytest.raises(tomii.GraphError, match=r'node "gen" args\[0\] value'):
        tomii.run_graph(graph, dylibs=[SYNTHETIC])


def test_the_knob_space_of_a_1_2_file_is_its_conversions() -> None:
    path = ROOT / "examples/compat/v12/stream_analytics.json"
    knobs = tomii.knob_space(path)["knobs"]
    assert knobs == tomii.knob_space(tomii.Graph.from_json(path).to_dict())["knobs"]
    # Its group_by and factors are names of initializations, which only the conversion resolves.
    assert any(k["name"].endswith(".group_size") for k in knobs)


def _wavefront(width: int) -> dict[str, Any]:
    """A 1.2 chain whose every node after the first reads its predecessor with the literal range
    "0-0" (1.2: offset 0 inclusive), so each needs the same warning."""
    nodes: list[dict[str, Any]] = [
        {"name": "diag_0", "function": "checksum", "args": [{"type": "u64", "value": "1"}]}
    ]
    for k in range(1, width):
        pred = {"name": f"diag_{k - 1}", "indexes": "0-0"}
        nodes.append(
            {
                "name": f"diag_{k}",
                "function": "checksum",
                "args": [{"type": "$res", "predecessor": pred}],
            }
        )
    return {"nodes": nodes}


def test_warnings_are_one_per_kind_and_every_line_with_verbose() -> None:
    graph = _wavefront(64)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        result = tomii.run_graph(graph, dylibs=[SYNTHETIC], frames=1, workers=1)
    summary = graph_warnings(record)
    assert len(result.report["graph_warnings"]) == 63
    assert len(summary) == 1, summary
    assert "63 nodes: " in summary[0] and '(e.g. node "diag_1"); --verbose lists each' in summary[0]
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        tomii.run_graph(graph, dylibs=[SYNTHETIC], frames=1, workers=1, verbose=True)
    assert graph_warnings(record) == result.report["graph_warnings"]


# The compiled edges of the builder-made graphs of the repository's tests and examples, and of
# the standard graphs of `tomii.graphs`, against the dump made before the builder took Tomii 1.2's
# edge meanings (golden/builder_edges.txt; TOMII_BLESS=1 rewrites it): each keeps its meaning.


def _pipeline() -> tomii.Graph:
    g = tomii.Graph()
    n = g.var("n", 4)
    a = g.node("a", func="checksum", factor=n, args=[g.var("seed", tomii.u64(11)), 7])
    b = g.node("b", func="checksum", factor=4, args=[a.out()])
    g.node("c", func="checksum", factor=1, args=[b.out(0, 4, wrap=False)])
    return g


def _conditions() -> tomii.Graph:
    g = tomii.Graph()
    src = g.node("src", func="checksum", factor=4, args=[tomii.u64(1)])
    kept = g.node(
        "kept",
        func="checksum",
        factor=4,
        args=[src.out()],
        loop=tomii.Loop("iter", g.var("rounds", 3)),
        loop_args=[tomii.u64(7)],
    )
    dropped = g.node(
        "dropped",
        func="checksum",
        factor=2,
        args=[tomii.u64(5)],
        condition=tomii.Condition("Gt", 0, "u64", "modulo", [src.out(), tomii.u64(1)]),
    )
    sink = g.node(
        "sink", func="checksum", args=[kept.out(0, 4, wrap=False), dropped.wait(every=True)]
    )
    g.post_node("summary", func="checksum", args=[sink.out()])
    return g


def _selections() -> tomii.Graph:
    g = tomii.Graph()
    n = g.var("n", 4)
    a = g.node("a", func="checksum", factor=n, args=[3])
    g.node(
        "b",
        func="checksum",
        factor=2,
        group_size=2,
        args=[
            a.out(1, wrap=False),
            a.out(0, 3, wrap=False),
            a.out([0, 1], wrap=False),
            a.dep(group_by=2),
            a.wait(every=True),
            a.wait(0, wrap=False),
        ],
    )
    g.post_node("p", func="noop", args=[a.out("all")])
    return g


def _matrix(fft_wait: Any = None) -> tomii.Graph:
    app = tomii.Graph()
    buf_size = app.var("buf_size", 64)
    num_nodes = app.var("num_nodes", 4)
    planner = app.var("fft_planner", func="fft_planner", args=[buf_size])
    gen_vec = app.node("gen_vec", func="generate_vector", factor=num_nodes, args=[buf_size])
    compute_fft = app.node(
        "compute_fft", func="compute_fft", factor=num_nodes, args=[planner, gen_vec.out()]
    )
    wait = compute_fft.wait(every=True) if fft_wait is None else fft_wait(compute_fft)
    vec_mat = app.node("vec_mat", func="vec_to_mat", factor=num_nodes, args=[gen_vec.out(), wait])
    app.post_node(
        "write_to_file",
        func="write_to_file",
        args=["out.txt", compute_fft.out(0, num_nodes), vec_mat.out(0, num_nodes)],
    )
    return app


def _kinds() -> tomii.Graph:
    graph = tomii.Graph(name="kinds")
    samples = graph.input("samples", factor=2)
    scale = graph.node("scale", func="checksum", factor=2, args=[samples.out()])
    odd = graph.node("odd", func="checksum", factor=2, args=[scale.dep()])
    total = graph.node(
        "total", func="checksum", args=[scale.out(0, 2, wrap=False), odd.wait(every=True)]
    )
    graph.post_node("report", func="checksum", args=[total.out()])
    return graph


def _session() -> tomii.Graph:
    app = tomii.Graph()
    samples = app.input("samples", factor=2)
    scale = app.node("scale", func="checksum", factor=2, args=[samples.out()])
    app.node(
        "sum", func="checksum", args=[samples.out(0, 2, wrap=False), scale.out(0, 2, wrap=False)]
    )
    return app


def _network() -> tomii.Graph:
    app = tomii.Graph()
    packets = app.network(start_port=0, num_sockets=1, packet_length=64, frame_packets=4)
    fft = app.node("fft", func="checksum", factor=4, args=[packets.out()])
    app.node("sum", func="checksum", args=[fft.out(0, 4, wrap=False)])
    return app


def _variadic() -> tomii.Graph:
    g = tomii.Graph()
    made = g.node("made", func="make_array", factor=5, args=[3, 1])
    g.node("sum", func="total", args=[100, made.out(0, 5, wrap=False)])
    return g


def _stages() -> tomii.Graph:
    app = tomii.Graph()
    previous = app.input("x")
    for stage in range(3):
        args = [previous.dep()] if stage else [previous.wait(every=True)]
        previous = app.node(f"s{stage}", func="noop", factor=4, args=args)
    return app


BUILDER_GRAPHS = {
    "pipeline": _pipeline,
    "conditions": _conditions,
    "selections": _selections,
    "matrix": _matrix,
    "kinds": _kinds,
    "session": _session,
    "network": _network,
    "variadic": _variadic,
    "stages": _stages,
}
GOLDEN_EDGES = Path(__file__).parent / "golden" / "builder_edges.txt"


def compiled_edges(graph: dict[str, Any], tmp_path: Path, name: str) -> str:
    """What `tomii convert --edges` prints for `graph`."""
    from tomii._tomii import cli_main

    source, out = tmp_path / f"{name}.json", tmp_path / f"{name}.edges"
    source.write_text(json.dumps(graph))
    assert cli_main(["tomii", "convert", str(source), "--edges", "-o", str(out)]) == 0
    return out.read_text()


def test_every_builder_graph_keeps_its_compiled_edges(tmp_path: Path) -> None:
    import os

    from tomii import graphs

    dump = ""
    for name, build in BUILDER_GRAPHS.items():
        dump += f"== {name}\n" + compiled_edges(build().to_dict(), tmp_path, name)
    for k, graph in enumerate(graphs.standard_set()):
        dump += f"== standard {k}\n" + compiled_edges(graph, tmp_path, f"standard{k}")
    if os.environ.get("TOMII_BLESS"):
        GOLDEN_EDGES.parent.mkdir(exist_ok=True)
        GOLDEN_EDGES.write_text(dump)
    assert dump == GOLDEN_EDGES.read_text()


# Tomii 1.2's edge meanings (TOMII-1.2 facts: a `$res` reads pred[(i + l) mod P]; a barrier's
# "0" waits for instance 0 when a node of one instance waits on one of several, else for every
# instance; |L| = F gives instance i the i-th selected; a literal range end is inclusive, a var's
# exclusive), case by case: the builder's call, the same edge in a Tomii 1.2 file, that file's
# `tomii convert` output and the current format's "rule": "tomii-1.2" all compile to the edges
# 1.2's runtime made.

KINDS = {"out": "$res", "dep": "$dep", "wait": "$barrier"}


def _indexes(start: Any, end: Any) -> str:
    """The `indexes` Tomii 1.2's builder writes for `(start, end)`."""
    if isinstance(start, list):
        return ",".join(str(k) for k in start)
    return str(start) if end is None else f"{start}-{end}"


def _lines(*lines: str) -> str:
    return "".join(f"{line}\n" for line in lines)


#: (method, start, end, successor factor F, predecessor factor P, the edges 1.2 made).
MEANINGS = [
    ("wait", 0, None, 1, 4, _lines("b[0] waits a[0]; reads -")),
    ("wait", 0, None, 4, 4, _lines(*(f"b[{i}] waits a[0..4]; reads -" for i in range(4)))),
    ("wait", 0, None, 2, 4, _lines("b[0] waits a[0..4]; reads -", "b[1] waits a[0..4]; reads -")),
    ("wait", 1, 2, 2, 8, _lines("b[0] waits a[1..3]; reads -", "b[1] waits a[1..3]; reads -")),
    (
        "out",
        0,
        None,
        4,
        2,
        _lines(*(f"b[{i}] waits a[{i % 2}]; reads a[{i % 2}]" for i in range(4))),
    ),
    (
        "out",
        1,
        None,
        4,
        4,
        _lines(*(f"b[{i}] waits a[{(i + 1) % 4}]; reads a[{(i + 1) % 4}]" for i in range(4))),
    ),
    ("out", 2, None, 1, 4, _lines("b[0] waits a[2]; reads a[2]")),
    ("out", 0, 3, 1, 4, _lines("b[0] waits a[0..4]; reads a[0..4]")),
    ("out", 0, 3, 4, 4, _lines(*(f"b[{i}] waits a[{i}]; reads a[{i}]" for i in range(4)))),
    ("out", 0, 4, 1, 4, _lines("b[0] waits a[0..4]; reads a[0..4] a[0]")),
    ("out", [1, 3], None, 1, 4, _lines("b[0] waits a[1] a[3]; reads a[1] a[3]")),
    ("dep", 0, 1, 1, 4, _lines("b[0] waits a[0..4]; reads -")),
    ("dep", 0, None, 4, 4, _lines(*(f"b[{i}] waits a[{i}]; reads -" for i in range(4)))),
]


def _builder_graph(method: str, start: Any, end: Any, factor: int, pred_factor: int) -> tomii.Graph:
    g = tomii.Graph()
    a = g.node("a", func="checksum", factor=pred_factor, args=[1])
    g.node("b", func="checksum", factor=factor, args=[getattr(a, method)(start, end)])
    return g


def _v12_file(method: str, start: Any, end: Any, factor: int, pred_factor: int) -> dict[str, Any]:
    edge = {"type": KINDS[method], "predecessor": {"name": "a", "indexes": _indexes(start, end)}}
    return {
        "initializations": [],
        "nodes": [
            {"name": "a", "function": "checksum", "factor": pred_factor, "args": []},
            {"name": "b", "function": "checksum", "factor": factor, "args": [edge]},
        ],
    }


def _converted(graph: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    from tomii._tomii import convert_json

    _dialect, current, _notes = convert_json(json.dumps(graph), "old.json", None)
    return dict(json.loads(current))


def _quiet_edges(graph: dict[str, Any], tmp_path: Path, name: str) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return compiled_edges(graph, tmp_path, name)


@pytest.mark.parametrize(("method", "start", "end", "factor", "pred_factor", "expected"), MEANINGS)
def test_builder_reader_converter_and_rule_give_the_1_2_meaning(
    tmp_path: Path, method: str, start: Any, end: Any, factor: int, pred_factor: int, expected: str
) -> None:
    built = _builder_graph(method, start, end, factor, pred_factor).to_dict()
    old = _v12_file(method, start, end, factor, pred_factor)
    converted = _converted(old, tmp_path)
    # The current format's deferred spelling: the builder's index with the rule.
    deferred = json.loads(json.dumps(built))
    edge = deferred["nodes"][1]["args"][0]["predecessor"]
    edge.pop("wrap", None)
    edge.pop("absolute", None)
    ends = end + 1 if isinstance(end, int) else end
    edge["index"] = start if end is None else f"{start}-{ends}"
    edge["rule"] = "tomii-1.2"
    for name, graph in [
        ("built", built),
        ("old", old),
        ("converted", converted),
        ("rule", deferred),
    ]:
        assert _quiet_edges(graph, tmp_path, name) == expected, name


@pytest.mark.parametrize(
    ("method", "start", "end", "factor", "pred_factor", "message"),
    [
        ("out", -1, None, 4, 4, "negative"),
        ("wait", 4, None, 1, 4, "hung"),
        ("out", [0, 2], None, 2, 4, "order they completed"),
    ],
)
def test_what_1_2_crashed_or_hung_on_is_a_clear_error(
    tmp_path: Path, method: str, start: Any, end: Any, factor: int, pred_factor: int, message: str
) -> None:
    with pytest.raises(tomii.GraphError, match=message):
        _builder_graph(method, start, end, factor, pred_factor).to_dict()
    if start != -1:  # 1.2's own reader refused "-1" at load; ours says so too.
        with pytest.raises(tomii.GraphError, match=message):
            _converted(_v12_file(method, start, end, factor, pred_factor), tmp_path)


def test_each_meaning_has_a_spelling_that_does_not_depend_on_factors(tmp_path: Path) -> None:
    g = tomii.Graph()
    a = g.node("a", func="checksum", factor=4, args=[1])
    g.node("every", func="checksum", args=[a.wait(every=True)])
    g.node("first", func="checksum", factor=4, args=[a.wait(instance=0)])
    g.node("ring", func="checksum", factor=4, args=[a.out(1, wrap=True)])
    g.node("plain", func="checksum", factor=2, args=[a.out(0, 2, wrap=False)])
    edges = compiled_edges(g.to_dict(), tmp_path, "explicit")
    assert "every[0] waits a[0..4]; reads -" in edges
    assert all(f"first[{i}] waits a[0]; reads -" in edges for i in range(4))
    assert "ring[3] waits a[0]; reads a[0]" in edges
    assert "plain[1] waits a[1..3]; reads a[1..3]" in edges
    with pytest.raises(tomii.GraphError, match="offset 0 selects instance 4"):
        g2 = tomii.Graph()
        b = g2.node("b", func="checksum", factor=4)
        g2.node("c", func="checksum", factor=5, args=[b.out(0, wrap=False)])
        tomii.validate(g2.to_dict())


def test_a_factor_computed_at_init_defers_the_meaning_to_the_compiler() -> None:
    g = tomii.Graph()
    n = g.var("n", func="count", args=[4])
    a = g.node("a", func="checksum", factor=n)
    b = g.node("b", func="checksum", args=[a.wait(), a.out(0, n)])
    assert isinstance(b, tomii.Node)
    args = g.to_dict()["nodes"][1]["args"]
    assert args[0]["predecessor"] == {"name": "a", "index": 0, "rule": "tomii-1.2"}
    assert args[1]["predecessor"] == {"name": "a", "index": "0-n", "rule": "tomii-1.2"}


def test_group_by_a_var_and_stream_packets() -> None:
    g = tomii.Graph()
    two = g.var("two", 2)
    a = g.node("a", func="checksum", factor=4)
    g.node("b", func="checksum", factor=2, args=[a.out(group_by=two)])
    assert g.to_dict()["nodes"][1]["args"][0]["predecessor"] == {"name": "a", "group_by": 2}
    packets = g.network(start_port=0, packet_length=64, stream_packets=4)
    g.node("fft", func="checksum", factor=4, args=[packets.out()])
    assert g.to_dict()["network_config"]["stream_packets"] == 4
    assert tomii.validate(g.to_dict()) == "tomii"


def test_a_matrix_compute_shaped_graph_means_in_every_form_what_it_meant_in_1_2(
    tmp_path: Path,
) -> None:
    app = tomii.Graph()
    num_nodes = app.var("num_nodes", 200)
    gen_vec = app.node("gen_vec", func="generate_vector", factor=num_nodes, args=[64])
    compute_fft = app.node(
        "compute_fft", func="compute_fft", factor=num_nodes, args=[gen_vec.out()]
    )
    vec_mat = app.node(
        "vec_mat", func="vec_to_mat", factor=num_nodes, args=[gen_vec.out(), compute_fft.wait()]
    )
    app.node("write", func="write_to_file", args=[vec_mat.out(end=num_nodes), compute_fft.wait()])

    def res(name: str, indexes: str) -> dict[str, Any]:
        return {"type": "$res", "predecessor": {"name": name, "indexes": indexes}}

    bar = {"type": "$barrier", "predecessor": {"name": "compute_fft", "indexes": "0"}}

    def node(name: str, args: list[Any]) -> dict[str, Any]:
        return {"name": name, "function": name, "factor": "num_nodes", "args": args}

    old = {
        "initializations": [{"name": "num_nodes", "args": [{"type": "usize", "value": "200"}]}],
        "nodes": [
            node("gen_vec", [{"type": "usize", "value": "64"}]),
            node("compute_fft", [res("gen_vec", "0")]),
            node("vec_mat", [res("gen_vec", "0"), bar]),
            {
                "name": "write",
                "function": "w",
                "factor": 1,
                "args": [res("vec_mat", "0-num_nodes"), bar],
            },
        ],
    }
    built = _quiet_edges(app.to_dict(), tmp_path, "built")
    for name, graph in [("old", old), ("converted", _converted(old, tmp_path))]:
        assert _quiet_edges(graph, tmp_path, name) == built, name
    # 200 x 200 barrier edges, and the factor-1 writer waits for compute_fft[0] only.
    assert built.count("waits gen_vec[") == 400
    assert (
        sum(
            f"vec_mat[{i}] waits gen_vec[{i}] compute_fft[0..200]; reads gen_vec[{i}]" in built
            for i in range(200)
        )
        == 200
    )
    assert "write[0] waits compute_fft[0] vec_mat[0..200]; reads vec_mat[0..200]" in built


def test_the_critical_path_reads_absolute_instances_and_refuses_an_undecided_rule() -> None:
    from tomii import graphs

    g = tomii.Graph()
    a = g.node("a", func="spin", factor=4, args=[5])
    g.node("b", func="spin", factor=2, args=[10, a.wait(instance=3)])
    assert graphs.critical_path_us(g.to_dict()) == 15.0
    rule = {"name": "c", "index": 0, "rule": "tomii-1.2"}
    undecided = {
        "nodes": [
            {"name": "c", "function": "spin", "factor": 4, "args": [1]},
            {
                "name": "d",
                "function": "spin",
                "args": [1, {"type": "$barrier", "predecessor": rule}],
            },
        ]
    }
    with pytest.raises(ValueError, match="decided when the graph compiles"):
        graphs.critical_path_us(undecided)


def test_a_grouped_wait_built_as_1_2_scripts_build_it_matches_the_1_2_file(
    tmp_path: Path,
) -> None:
    """stream-analytics' `generate.wait(0, total_readings, group_by=readings_per_sensor)`: the
    builder's grouped barrier compiles to the edges of the same graph as a 1.2 file."""
    g = tomii.Graph()
    sensors = g.var("sensor_count", 4)
    per_sensor = g.var("samples_per_sensor", 8)
    samples = g.var("all_samples", 32)
    bands = g.var("bands", tomii.u64(5))
    sample = g.node("sample", func="checksum", factor=samples, args=[tomii.INDEX])
    band = g.node("band", func="modulo", factor=samples, args=[sample.out(), bands])
    stats = g.node(
        "sensor_stats",
        func="checksum",
        factor=sensors,
        args=[tomii.INDEX, sample.wait(0, samples, group_by=per_sensor)],
    )
    g.node("tally", func="checksum", args=[band.dep(0, samples)])
    summary = g.node(
        "summary",
        func="checksum",
        factor=sensors,
        args=[stats.out(), band.wait(0, samples, group_by=per_sensor)],
    )
    g.node("publish", func="checksum_list", args=[summary.out(0, sensors)])
    old = json.loads((ROOT / "tomii-core/tests/graphs/v12/sensor_windows.json").read_text())
    built = _quiet_edges(g.to_dict(), tmp_path, "built")
    assert built == _quiet_edges(old, tmp_path, "old")
    assert "sensor_stats[1] waits sample[8..16]" in built
    with pytest.raises(tomii.GraphError, match="fewer than one group"):
        g.node("short", func="checksum", args=[sample.wait(0, 3, group_by=per_sensor)])
        g.to_dict()


def test_a_count_naming_a_computed_initialization_runs_and_simulates_with_its_kernels() -> None:
    graph = {
        "initializations": [
            {"name": "a", "args": [{"type": "usize", "value": "3"}]},
            {
                "name": "n",
                "function": "product",
                "args": [{"type": "$ref", "value": "a"}, {"type": "$ref", "value": "a"}],
            },
        ],
        "nodes": [{"name": "work", "function": "noop", "factor": "n", "args": []}],
    }
    assert tomii.run_graph(graph, dylibs=[SYNTHETIC], frames=3).report["tasks"] == 27
    assert tomii.simulate(graph, dylibs=[SYNTHETIC], frames=3).report["tasks"] == 27
    with pytest.raises(tomii.GraphError, match="--dylib"):
        tomii.simulate(graph, frames=3)
