"""The graph builder emits the runtime's graph format: checksums, control flow, errors, JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from reference import SYNTHETIC, checksum

import tomii as tm


def per_node(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {entry["name"]: entry for entry in report["per_node"]}


def test_a_built_pipeline_gives_the_reference_checksums() -> None:
    g = tm.Graph()
    n = g.var("n", 4)
    seed = g.var("seed", tm.u64(11))
    a = g.node("a", func="checksum", factor=n, args=[seed, 7])
    b = g.node("b", func="checksum", factor=4, args=[a.out()])
    g.node("c", func="checksum", factor=1, args=[b.out(0, 4, wrap=False)])
    result = g.run(dylibs=[SYNTHETIC], scheduler="fifo", workers=2, slots=2, frames=5)
    assert result.report["frames"] == 5
    assert len(result.outputs) == 5
    for frame, outputs in enumerate(result.outputs):
        a_vals = [checksum("a", i, frame, [11, 7]) for i in range(4)]
        b_vals = [checksum("b", i, frame, [a_vals[i]]) for i in range(4)]
        assert outputs == [("c", 0, checksum("c", 0, frame, b_vals))], f"frame {frame}"


def test_conditions_loops_and_post_nodes_run() -> None:
    g = tm.Graph()
    rounds = g.var("rounds", 3)
    src = g.node("src", func="checksum", factor=4, args=[tm.u64(1)])
    # modulo(4, 2) == 0 holds: every instance runs, three loop iterations each.
    kept = g.node(
        "kept",
        func="checksum",
        factor=4,
        args=[src.out()],
        condition=tm.Condition("Eq", 0, "u64", "modulo", [tm.u64(4), tm.u64(2)]),
        loop=tm.Loop("iter", rounds),
        loop_args=[tm.u64(7)],
    )
    # modulo(x, 1) > 0 never holds: every instance is skipped (the condition reads an edge).
    dropped = g.node(
        "dropped",
        func="checksum",
        factor=2,
        args=[tm.u64(5)],
        condition=tm.Condition("Gt", 0, "u64", "modulo", [src.out(), tm.u64(1)]),
    )
    sink = g.node(
        "sink", func="checksum", args=[kept.out(0, 4, wrap=False), dropped.wait(every=True)]
    )
    g.post_node("summary", func="checksum", args=[sink.out()])
    frames = 4
    result = g.run(dylibs=[SYNTHETIC], workers=2, slots=2, frames=frames)

    nodes = per_node(result.report)
    assert nodes["dropped"]["skipped"] == 2 * frames
    assert nodes["dropped"]["count"] == 2 * frames
    assert nodes["kept"]["skipped"] == 0
    assert nodes["src"]["skipped"] == 0
    sink_vals = []
    for frame, outputs in enumerate(result.outputs):
        kept_vals = []
        for i in range(4):
            src_i = checksum("src", i, frame, [1])
            h = checksum("kept", i, frame, [src_i, 7])
            for _ in range(2):
                h = checksum("kept", i, frame, [src_i, h])
            kept_vals.append(h)
        sink_vals.append(checksum("sink", 0, frame, kept_vals))
        assert outputs == [("sink", 0, sink_vals[-1])], f"frame {frame}"
    last = frames - 1
    assert result.post_outputs == [("summary", 0, checksum("summary", 0, last, [sink_vals[last]]))]


def test_to_json_emits_the_graph_format() -> None:
    g = tm.Graph()
    n = g.var("n", 4)
    g.var("big", tm.u128(2**100))
    planner = g.var("planner", func="modulo", args=[tm.u64(9), n])
    a = g.node(
        "a",
        func="checksum",
        factor=n,
        args=[planner, 3, 1.5, "s", True, tm.Complex64(3.5, 2.5), tm.Vec("f32", [1.0, 2.0])],
        priority="high",
        use_workers="0-1",
    )
    g.node(
        "b",
        func="checksum",
        factor=2,
        group_size=2,
        args=[
            a.out(1, wrap=False),
            a.out(0, n, wrap=False),
            a.out([0, 1], wrap=False),
            a.dep(group_by=2),
            a.wait(every=True),
            a.wait(0, wrap=False),
        ],
    )
    g.post_node("p", func="noop", args=[a.out("all")])
    assert json.loads(g.to_json()) == {
        "initializations": [
            {"name": "n", "value": {"type": "usize", "value": 4}},
            {"name": "big", "value": {"type": "u128", "value": str(2**100)}},
            {
                "name": "planner",
                "function": "modulo",
                "args": [{"type": "u64", "value": 9}, {"type": "$ref", "name": "n"}],
                "factor": 1,
            },
        ],
        "nodes": [
            {
                "name": "a",
                "function": "checksum",
                "factor": "n",
                "args": [
                    {"type": "$ref", "name": "planner"},
                    {"type": "usize", "value": 3},
                    {"type": "f64", "value": 1.5},
                    {"type": "String", "value": "s"},
                    {"type": "bool", "value": True},
                    {"type": "Complex64", "value": [3.5, 2.5]},
                    {"type": "Vec<f32>", "value": [1.0, 2.0]},
                ],
                "priority": "high",
                "use_workers": "0-1",
            },
            {
                "name": "b",
                "function": "checksum",
                "factor": 2,
                "args": [
                    {"type": "$res", "predecessor": {"name": "a", "index": 1}},
                    {"type": "$res", "predecessor": {"name": "a", "index": "0-n"}},
                    {"type": "$res", "predecessor": {"name": "a", "index": [0, 1]}},
                    {"type": "$dep", "predecessor": {"name": "a", "group_by": 2}},
                    {"type": "$barrier", "predecessor": {"name": "a"}},
                    {"type": "$barrier", "predecessor": {"name": "a", "index": 0}},
                ],
                "group_size": 2,
            },
        ],
        "post_nodes": [
            {
                "name": "p",
                "function": "noop",
                "args": [{"type": "$res", "predecessor": {"name": "a", "index": "all"}}],
            }
        ],
    }


def test_save_json_writes_what_to_json_gives(tmp_path: Path) -> None:
    g = tm.Graph()
    g.node("x", func="noop")
    path = tmp_path / "graph.json"
    g.save_json(path)
    assert json.loads(path.read_text(encoding="utf-8")) == {
        "nodes": [{"name": "x", "function": "noop"}]
    }
    result = tm.run_graph(path, dylibs=[SYNTHETIC])
    assert result.report["tasks"] == 1


def test_type_wrappers_and_inference() -> None:
    assert tm.i8(-5).to_json() == {"type": "i8", "value": -5}
    assert tm.i128(-(2**60)).to_json() == {"type": "i128", "value": str(-(2**60))}
    assert tm.u128(5).to_json() == {"type": "u128", "value": 5}
    assert tm.Complex32(1, 2).to_json() == {"type": "Complex32", "value": [1.0, 2.0]}
    assert tm.char_("x").to_json() == {"type": "char", "value": "x"}
    assert tm.Vec("usize", [1, 2, 3]).to_json() == {"type": "Vec<usize>", "value": [1, 2, 3]}
    assert tm.infer_type(True) == tm.bool_(True)
    assert tm.infer_type(3) == tm.usize(3)
    assert tm.infer_type(2.5) == tm.f64(2.5)
    with pytest.raises(ValueError, match="isize"):
        tm.infer_type(-1)
    with pytest.raises(TypeError, match="str"):
        tm.infer_type("text")
    with pytest.raises(ValueError, match="does not fit in u8"):
        tm.u8(300)


def test_builder_errors_are_specific() -> None:
    g = tm.Graph()
    with pytest.raises(ValueError, match="exactly one of value or func"):
        g.var("v", 1, func="modulo")
    with pytest.raises(ValueError, match="exactly one of value or func"):
        g.var("v")
    g.var("v", 1)
    with pytest.raises(ValueError, match="duplicate var name 'v'"):
        g.var("v", 2)
    g.node("x", func="noop")
    with pytest.raises(ValueError, match="duplicate node name 'x'"):
        g.node("x", func="noop")
    with pytest.raises(ValueError, match="duplicate node name 'x'"):
        g.post_node("x", func="noop")
    with pytest.raises(ValueError, match="priority"):
        g.node("y", func="noop", priority="urgent")
    with pytest.raises(ValueError, match="single character"):
        tm.char_("ab")
    with pytest.raises(
        tm.ConfigError, match=r"unknown run option 'wrokers'; valid options: .*frames.*workers"
    ):
        g.run(dylibs=[SYNTHETIC], wrokers=2)
    with pytest.raises(ValueError, match="loop_args needs a loop"):
        g.node("z", func="noop", loop_args=[1])
    with pytest.raises(tm.GraphError, match=r"x\.out\(\)"):
        g.node("w", func="noop", args=[tm.Node("x")])
    # The failed definitions did not register their names.
    g.node("y", func="noop")


@pytest.mark.parametrize(
    "workers", ["0-3", "2", 3, " 1 - 2 ", "3-1", "1-", "-1", "a-b", "0-3-4", "²", "0-4294967295"]
)
def test_a_worker_range_is_refused_where_the_node_is_defined_as_the_parser_would(
    workers: str | int,
) -> None:
    """The builder checks use_workers as the runtime's parser does: what one refuses, the other
    does, and the builder names the node when it is defined rather than at the run."""
    graph = {"nodes": [{"name": "x", "function": "noop", "use_workers": workers}]}
    try:
        tm._tomii.convert_json(json.dumps(graph), "g.json", None)
        parsed = True
    except tm.GraphError as error:
        assert "is not a worker range" in str(error)
        parsed = False
    if parsed:
        tm.Graph().node("x", func="noop", use_workers=workers)
    else:
        with pytest.raises(ValueError, match=f"node 'x': use_workers {workers!r} is not a worker"):
            tm.Graph().node("x", func="noop", use_workers=workers)
