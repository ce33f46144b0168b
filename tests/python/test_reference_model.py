"""The reference model (`tomii.check.reference`) agrees with the runtime: on hand-written graphs
covering each feature of the graph format, and on graphs and knobs drawn by
`tomii.check.strategies`, whose every graph must parse and run. Some expectations are also
worked out by hand, with the independent checksum of tests/python/reference.py."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, find, given, settings
from reference import BASIS, MASK, SYNTHETIC, checksum, fnv1a, mix

import tomii
from tomii.check import (
    KernelFailure,
    Knobs,
    ModelError,
    ReferenceModel,
    expected_run,
    graphs,
    knobs,
    runs,
)

#: The schedulers the drawn runs use (the property test's budget covers five).
PROPERTY_SCHEDULERS = ["fifo", "c-fifo", "work-stealing", "priority", "random"]
#: No example database in the repository; the conftest's environment fixture is per test.
SETTINGS = settings(
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

Graph = dict[str, Any]


def res(name: str, index: Any = None, **extra: Any) -> dict[str, Any]:
    return edge("$res", name, index, **extra)


def edge(kind: str, name: str, index: Any = None, **extra: Any) -> dict[str, Any]:
    predecessor: dict[str, Any] = {"name": name, **extra}
    if index is not None:
        predecessor["index"] = index
    return {"type": kind, "predecessor": predecessor}


INDEX = {"type": "$index"}
WORKERS = {"type": "$workers"}


def node(name: str, factor: int = 1, *args: Any, function: str = "checksum", **extra: Any) -> Graph:
    return {"name": name, "function": function, "factor": factor, "args": list(args), **extra}


def modulo(op: str, value: Any, *args: Any, value_type: str | None = None) -> dict[str, Any]:
    condition = {"operation": op, "value": value, "function": "modulo", "args": list(args)}
    return condition if value_type is None else {**condition, "value_type": value_type}


# --- hand-written graphs, one per feature ---------------------------------------------------

HAND: dict[str, Graph] = {
    "pipeline": {
        "nodes": [
            node("src", 4, INDEX),
            node("mid", 4, res("src")),
            node("out", 1, res("mid", "all")),
        ]
    },
    "selections": {
        "initializations": [
            {"name": "num", "value": {"type": "u8", "value": 2}},
            {"name": "k", "value": 1},
            {"name": "lo-1", "value": {"type": "i32", "value": 1}},
        ],
        "nodes": [
            node("src", 6, INDEX),
            node("off", 4, res("src", 2), res("src", "1"), res("src", "k")),
            node("list", 3, res("src", [0, 3, 3])),
            node("range", 2, res("src", "1-5"), res("src", "0-num")),
            node("spaced", 1, res("src", " 2 - 6 ")),
            node("dashed", 3, res("src", "lo-1-num"), res("src", "num")),
        ],
    },
    "wrap": {
        "nodes": [
            node("src", 4, INDEX),
            node("ring", 4, res("src", -1, wrap=True), res("src", [-5, 6], wrap=True)),
            node("long", 2, res("src", "2-9", wrap=True), res("ring", "-3", wrap=True)),
        ]
    },
    "group_by": {
        "nodes": [
            node("src", 6, INDEX),
            node("pairs", 3, res("src", group_by=2)),
            node("thirds", 2, edge("$dep", "src", group_by=3), res("pairs", "all")),
            node("half", 1, res("src", group_by=2), edge("$barrier", "thirds", group_by=2)),
        ]
    },
    "edges": {
        "nodes": [
            node("a", 3, INDEX),
            node("b", 3, edge("$dep", "a"), edge("$barrier", "a"), 7, res("a", 0)),
            node("c", 2, edge("$barrier", "b")),
            node("d", 1, edge("$barrier", "a", "1-3"), edge("$dep", "c", [1, 0])),
        ]
    },
    "literals": {
        "initializations": [
            {"name": "big", "value": {"type": "u128", "value": "340282366920938463463374607431768211455"}},
            {"name": "text", "value": "référence"},
            {"name": "vec", "value": {"type": "Vec<i16>", "value": [-1, 2, 300]}},
        ],
        "nodes": [
            node(
                "plain", 1, 7, -3, 2.5, True, "héllo", 2**64 - 1, -(2**63), 0.0,
                {"type": "$ref", "name": "big"}, {"type": "$ref", "name": "text"},
                {"type": "$ref", "name": "vec"},
            ),
            node(
                "scalars", 1,
                {"type": "i8", "value": -1}, {"type": "i16", "value": -300},
                {"type": "i32", "value": -70000}, {"type": "i64", "value": -(2**40)},
                {"type": "isize", "value": -5},
                {"type": "i128", "value": "-170141183460469231731687303715884105728"},
                {"type": "i128", "value": 12}, {"type": "u8", "value": 255},
                {"type": "u16", "value": 65535}, {"type": "u32", "value": 4000000000},
                {"type": "u64", "value": 2**64 - 1}, {"type": "usize", "value": 12},
                {"type": "u128", "value": 5}, {"type": "f32", "value": 1.25},
                {"type": "f64", "value": -0.375}, {"type": "f32", "value": 3},
                {"type": "bool", "value": False}, {"type": "char", "value": "ß"},
                {"type": "char", "value": "😀"}, {"type": "String", "value": ""},
                {"type": "Complex32", "value": [1.5, -2]}, {"type": "Complex64", "value": [0.25, 8]},
            ),
            node(
                "vectors", 1,
                *(
                    {"type": f"Vec<{t}>", "value": v}
                    for t, v in [
                        ("u8", [1, 2]), ("i8", [-1]), ("u16", [7]), ("i16", [-2]), ("u32", [9]),
                        ("i32", [-3]), ("u64", [2**64 - 1]), ("i64", [-4]), ("usize", [1]),
                        ("isize", [-1]), ("f32", [0.5]), ("f64", []), ("bool", [True, False]),
                        ("Complex32", [[1, 2]]), ("Complex64", [[1, 2], [3, 4]]),
                        ("char", ["a", "é"]), ("String", ["x", ""]), ("i128", ["-1", 5]),
                        ("u128", [0]),
                    ]
                ),
            ),
        ],
    },
    "computed": {
        "initializations": [
            {"name": "n", "value": 3},
            {"name": "seed", "function": "checksum", "args": [WORKERS, 5]},
            {
                "name": "per",
                "func": "checksum",
                "factor": "n",
                "args": [INDEX, {"type": "$ref", "name": "seed"}],
            },
            {"name": "again", "function": "checksum", "factor": 3, "args": [{"type": "$ref", "name": "per"}]},
        ],
        "nodes": [
            node("a", 3, *({"type": "$ref", "name": name} for name in ("per", "seed", "again"))),
            node("b", 2, {"type": "$ref", "name": "per"}, res("a", 1)),
        ],
        "post_nodes": [node("p", 1, {"type": "$ref", "name": "seed"}, res("b", "all"))],
    },
    "conditions": {
        "nodes": [
            node("src", 6, INDEX),
            node("even", 6, res("src"), condition=modulo("Eq", 0, INDEX, 2)),
            node("gt", 6, INDEX, condition=modulo("Gt", 1, INDEX, 3, value_type="u8")),
            node("le", 6, condition=modulo("Le", 1.5, INDEX, {"type": "i32", "value": 4})),
            node("ge", 6, condition=modulo("Ge", 2, INDEX, 3, value_type="f64")),
            node("neq", 6, condition=modulo("Neq", -1, INDEX, 2)),
            node("lt", 6, condition=modulo("Lt", 1, WORKERS, 2)),
            node(
                "data",
                6,
                res("even"),
                condition={
                    "operation": "Lt",
                    "value": 9223372036854775808,
                    "value_type": "u64",
                    "func": "checksum",
                    "args": [res("even"), res("le")],
                },
            ),
            node("reads", 6, res("even"), res("le"), res("data")),
            node(
                "gated",
                1,
                condition=modulo("Neq", 0, res("src", 5), 7, edge("$barrier", "data")),
            ),
        ]
    },
    "loops": {
        "initializations": [{"name": "three", "value": {"type": "u16", "value": 3}}],
        "nodes": [
            node("a", 2, INDEX),
            node(
                "b", 2, res("a"),
                loop={"name": "L", "factor": "three"}, loop_args=[res("a", "all"), 5, INDEX],
            ),
            node(
                "c", 1, 1, res("b", "all"), function="checksum_list",
                loop={"name": "M", "factor": 2}, loop_args=[edge("$dep", "a", "all"), 4],
            ),
            node("d", 2, res("b"), loop={"name": "N", "factor": 2}, condition=modulo("Eq", 1, INDEX, 2)),
        ],
    },
    "variadic": {
        "nodes": [
            node("a", 4, INDEX),
            node("trailing", 1, 7, res("a", "all"), function="checksum_list"),
            node("dep_after", 1, res("a", "0-2"), edge("$dep", "a", "all"), function="checksum_list"),
            node("literal_after", 1, res("a", 1), 9, function="checksum_list"),
            node("nothing", 1, function="checksum_list"),
            node("mixed", 2, res("a", 0), 3, res("a", [1, 2]), function="checksum_list"),
        ]
    },
    "group_size": {
        "nodes": [
            node("a", 5, INDEX, group_size=2),
            node("b", 3, res("a", "1-3"), group_size=2),
            node("c", 2, group_size=5),
            node("d", 1, res("c", 0)),
            node("e", 4, res("b", "all"), group_size=3),
        ]
    },
    "placement": {
        "nodes": [
            node("a", 3, INDEX, priority="high", use_workers="0-1"),
            node("b", 2, res("a", "0-2"), priority=-2, use_workers=1),
            node("c", 1, res("b", "all"), priority="low", use_workers="0"),
            node("d", 2, res("a", 1), priority=7),
        ]
    },
    "post_nodes": {
        "nodes": [node("a", 3, INDEX), node("b", 1, res("a", "all"))],
        "post_nodes": [
            node("p1", 2, res("a", "0-2"), INDEX, WORKERS),
            node("p2", 1, 5, res("b"), edge("$dep", "a", "all"), edge("$barrier", "b"), function="checksum_list"),
            node("p3", 3, res("a", group_by=1), 2.5),
        ],
    },
    "file_order": {
        "nodes": [
            node("z", 1, res("y", "all")),
            node("y", 2, res("x", "1-3")),
            node("x", 4, INDEX),
        ]
    },
    "names": {
        "nodes": [
            node("nœud-1", 2, INDEX),
            node("a b/ü", 1, res("nœud-1", "all")),
            node("😀", 2, res("nœud-1"), priority="high"),
        ]
    },
}  # fmt: skip

#: Knobs the hand-written graphs run with.
HAND_KNOBS = [
    Knobs("fifo", workers=1, slots=1, frames=3),
    Knobs(
        "work-stealing", workers=2, slots=3, frames=5, pop_batch=2, sched_opts=(("lifo", "false"),)
    ),
    Knobs("priority", workers=3, slots=8, frames=6, pop_batch=4),
    Knobs("random", workers=2, slots=2, frames=4, sched_opts=(("seed", "7"),)),
    Knobs("c-fifo", workers=3, slots=4, frames=2),
    Knobs("fifo", workers=2, slots=3, frames=4, pop_batch=2, inline_continuation=True),
]


def fits(graph: Graph, run: Knobs) -> bool:
    return all(hi <= run.workers for _, hi in ReferenceModel(graph).worker_ranges().values())


def run_and_compare(graph: Graph, run: Knobs, *, trace: bool = False) -> tomii.RunResult:
    """Runs `graph` and checks outputs, post-outputs, skipped counts (and with `trace` the
    dependency order) against the model."""
    model = ReferenceModel(graph)
    expected = model.run(frames=run.frames, workers=run.workers)
    result = tomii.run_graph(graph, dylibs=[SYNTHETIC], trace=trace, **run.run_options())
    assert result.outputs == expected.outputs
    assert result.post_outputs == expected.post_outputs
    assert {row["name"]: row["skipped"] for row in result.report.per_node} == expected.skipped
    if trace:
        assert dependency_violations(result, model) == []
    return result


def dependency_violations(result: tomii.RunResult, model: ReferenceModel) -> list[str]:
    """Instances that started before an instance they depend on (same frame) had ended."""
    assert result.trace is not None
    names = result.node_names
    rows = [(names[int(r["node"])], int(r["instance"]), int(r["frame"]), r) for r in result.trace]
    ends = {(n, i, f): int(r["end_ns"]) for n, i, f, r in rows}
    return [
        f"{n}[{i}] of frame {f} started before {d} ended"
        for n, i, f, r in rows
        for d in model.deps[(n, i)]
        if ends[(*d, f)] > int(r["start_ns"])
    ]


#: (graph name, knobs) of every hand-written case the knobs fit.
HAND_CASES = [(name, run) for name in HAND for run in HAND_KNOBS if fits(HAND[name], run)]


@pytest.mark.parametrize(
    ("name", "run"), HAND_CASES, ids=[f"{name}-{run.scheduler}" for name, run in HAND_CASES]
)
def test_the_model_agrees_with_the_runtime_on_each_feature(name: str, run: Knobs) -> None:
    run_and_compare(HAND[name], run, trace=True)


def test_every_hand_written_graph_runs_with_several_knobs() -> None:
    for name in HAND:
        assert sum(case == name for case, _ in HAND_CASES) >= 3, name


# --- expectations worked out by hand -------------------------------------------------------


def bits(fmt: str, x: float) -> int:
    return int.from_bytes(struct.pack(fmt, x), "little")


def test_literal_words_follow_the_synthetic_readme() -> None:
    args = [
        {"type": "i8", "value": -1},
        {"type": "f32", "value": 1.5},
        {"type": "Vec<u16>", "value": [1, 2]},
        {"type": "Complex64", "value": [0.5, 2]},
        {"type": "Vec<char>", "value": ["a"]},
        {"type": "i128", "value": "-2"},
        {"type": "Vec<bool>", "value": [True]},
        {"type": "char", "value": "é"},
        "ab",
        -7,
    ]
    words = [
        MASK,
        bits("<f", 1.5),
        fnv1a(b"\x01\x00\x02\x00"),
        mix(bits("<d", 0.5), bits("<d", 2.0)),
        mix(BASIS, ord("a")),
        mix(MASK - 1, MASK),
        fnv1a(b"\x01"),
        0xE9,
        fnv1a(b"ab"),
        (-7) & MASK,
    ]
    graph = {"nodes": [node("n", 1, *args)]}
    want = [[("n", 0, checksum("n", 0, frame, words))] for frame in range(2)]
    assert expected_run(graph, frames=2, workers=1).outputs == want
    assert tomii.run_graph(graph, dylibs=[SYNTHETIC], frames=2).outputs == want


def test_skipped_instances_are_none_and_read_as_word_zero() -> None:
    graph = {
        "nodes": [
            node("a", 2, condition=modulo("Eq", 0, INDEX, 2)),
            node("b", 2, res("a"), function="checksum_list"),
            node("c", 1, res("a", 1), 4),
        ]
    }
    a0 = checksum("a", 0, 0, [])
    expected = [
        ("b", 0, checksum("b", 0, 0, [mix(BASIS, a0)])),
        ("b", 1, checksum("b", 1, 0, [mix(BASIS, 0)])),
        ("c", 0, checksum("c", 0, 0, [0, 4])),
    ]
    model = expected_run(graph, frames=1, workers=1)
    assert model.outputs == [expected]
    assert model.values[0][("a", 1)] is None
    assert model.skipped == {"a": 1, "b": 0, "c": 0}
    run_and_compare(graph, Knobs())


def test_sinks_are_whole_groups_no_task_reads() -> None:
    model = ReferenceModel(HAND["group_size"])
    # c's group {c0, c1} is read by d (through c0), so c1 is no output although nothing reads it.
    assert model.sinks == [("d", 0), ("e", 0), ("e", 1), ("e", 2), ("e", 3)]
    assert model.leader[("a", 3)] == ("a", 2)
    assert model.task_deps[("b", 0)] == {("a", 0), ("a", 2)}


def test_dependencies_are_distinct_instances_over_every_argument_list() -> None:
    model = ReferenceModel(HAND["edges"])
    assert model.deps[("b", 1)] == {("a", 0), ("a", 1), ("a", 2)}
    assert model.deps[("d", 0)] == {("a", 1), ("a", 2), ("c", 0), ("c", 1)}
    gated = ReferenceModel(HAND["conditions"]).deps[("gated", 0)]
    assert gated == {("src", 5), *(("data", i) for i in range(6))}
    looped = ReferenceModel(HAND["loops"]).deps[("c", 0)]
    assert looped == {("b", 0), ("b", 1), ("a", 0), ("a", 1)}


def test_a_run_that_must_fail_fails_in_the_model_too() -> None:
    graph = {
        "nodes": [
            node("a", 1, condition=modulo("Eq", 1, INDEX, 2)),
            node("b", 1, condition=modulo("Eq", 0, res("a"), 2)),
        ]
    }
    with pytest.raises(KernelFailure, match="unsigned integer"):
        expected_run(graph, frames=1, workers=1)
    with pytest.raises(tomii.KernelError, match="unsigned integer"):
        tomii.run_graph(graph, dylibs=[SYNTHETIC])


def test_the_model_rejects_what_the_format_rejects() -> None:
    bad = [
        {"nodes": [node("a", 2), node("b", 2, res("a", 1))]},
        {"nodes": [node("a", 2), node("b", 1, res("a", group_by=3))]},
        {"nodes": [node("a", 1, res("b")), node("b", 1, res("a"))]},
        {"nodes": [node("a", 1, loop_args=[1])]},
        {"nodes": [node("a", 1, res("a", "2-1"))]},
    ]
    for graph in bad:
        with pytest.raises(ModelError):
            ReferenceModel(graph)
        with pytest.raises(tomii.GraphError):
            tomii.run_graph(graph, dylibs=[SYNTHETIC])


# --- drawn graphs and knobs ------------------------------------------------------------------


@settings(SETTINGS, max_examples=200)
@given(graphs(workers=3))
def test_every_drawn_graph_parses_and_runs(graph: Graph) -> None:
    result = tomii.run_graph(graph, dylibs=[SYNTHETIC], workers=3, frames=2, slots=2)
    assert len(result.outputs) == 2


@settings(SETTINGS, max_examples=300)
@given(runs(schedulers=PROPERTY_SCHEDULERS))
def test_the_model_agrees_with_the_runtime_on_drawn_runs(case: tuple[Graph, Knobs]) -> None:
    graph, run = case
    run_and_compare(graph, run, trace=True)


@settings(SETTINGS, max_examples=50)
@given(knobs())
def test_drawn_knobs_are_valid_for_every_scheduler(run: Knobs) -> None:
    graph = HAND["pipeline"]
    run_and_compare(graph, run)


def test_shrinking_leads_to_minimal_graphs() -> None:
    """Fewer nodes, factor 1, no arguments and no extras: what a failure shrinks to."""
    shrink = settings(SETTINGS, derandomize=True)
    three = find(graphs(), lambda g: len(g["nodes"]) >= 3, settings=shrink)
    assert three == {"nodes": [{"name": f"n{k}", "function": "checksum"} for k in range(3)]}
    graph, run = find(runs(), lambda case: case[1].frames >= 2, settings=shrink)
    assert (graph, run) == ({"nodes": [{"name": "n0", "function": "checksum"}]}, Knobs(frames=2))
    conditioned = find(graphs(), lambda g: "condition" in g["nodes"][-1], settings=shrink)
    assert set(conditioned) == {"nodes"} and len(conditioned["nodes"]) <= 2
    assert all(set(n) <= {"name", "function", "condition"} for n in conditioned["nodes"])


LEFT_OUT = ("$res", "$dep", "$barrier", "$ref", "$workers", "condition", "loop", "group_size")
LEFT_OUT_TOO = ("priority", "use_workers", "post_nodes", "initializations", "checksum_list")


@settings(SETTINGS, max_examples=30)
@given(graphs(features={"literals", "index"}))
def test_graphs_leave_out_features(graph: Graph) -> None:
    text = json.dumps(graph)
    assert [word for word in LEFT_OUT + LEFT_OUT_TOO if word in text] == []
    run_and_compare(graph, Knobs(frames=2))


def test_graphs_name_unknown_features() -> None:
    with pytest.raises(ValueError, match="unknown features"):
        graphs(features={"telepathy"})


def test_import_tomii_does_not_need_hypothesis() -> None:
    """`import tomii` and the reference model work without hypothesis (a dependency, imported only
    by what uses it); in an environment that lacks it, `check` says what to install."""
    code = (
        "import sys; sys.modules['hypothesis'] = None; import tomii\n"
        "from tomii.check import ReferenceModel, check_trace\n"
        "try:\n    from tomii.check import check\nexcept ImportError as error:\n    print(error)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == (
        "tomii.check.check needs hypothesis, which tomii depends on but this environment lacks: "
        "pip install hypothesis (or reinstall tomii)"
    )


# --- runtime bugs the model found, fixed: each stays a test ------------------------------------


def run_or_fail_on_panic(graph: Graph) -> tomii.RunResult:
    """Runs `graph`; a Rust panic (pyo3's PanicException, a BaseException) fails the test."""
    try:
        return tomii.run_graph(graph, dylibs=[SYNTHETIC], frames=1)
    except BaseException as error:
        if type(error).__name__ == "PanicException":
            pytest.fail(f"the runtime panicked: {error}")
        raise


def test_a_loop_of_one_iteration_passes_its_loop_args() -> None:
    graph = {"nodes": [node("a", 1, 5, loop={"name": "L", "factor": 1}, loop_args=[7])]}
    assert expected_run(graph, frames=1, workers=1).outputs == [
        [("a", 0, checksum("a", 0, 0, [5, 7]))]
    ]
    assert run_or_fail_on_panic(graph).outputs == [[("a", 0, checksum("a", 0, 0, [5, 7]))]]


def test_an_initialization_reading_a_smaller_one_is_an_error() -> None:
    graph = {
        "initializations": [
            {"name": "two", "function": "checksum", "factor": 2, "args": [INDEX]},
            {
                "name": "three",
                "function": "checksum",
                "factor": 3,
                "args": [{"type": "$ref", "name": "two"}],
            },
        ],
        "nodes": [node("a", 1)],
    }
    with pytest.raises(ModelError):
        ReferenceModel(graph)
    with pytest.raises(tomii.GraphError):
        run_or_fail_on_panic(graph)


def test_a_post_node_with_more_instances_than_elements_is_an_error() -> None:
    graph = {
        "initializations": [{"name": "two", "function": "checksum", "factor": 2, "args": [INDEX]}],
        "nodes": [node("a", 1)],
        "post_nodes": [node("p", 3, {"type": "$ref", "name": "two"})],
    }
    with pytest.raises(ModelError):
        ReferenceModel(graph)
    with pytest.raises(tomii.GraphError):
        run_or_fail_on_panic(graph)
