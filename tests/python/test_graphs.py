"""tomii.graphs: every generated graph runs on the runtime with the values the module's reading of
it predicts; each generator's shape; seeds; cost distributions; the critical-path and work bounds
on hand-checked graphs. Statistics only, never timing."""

from __future__ import annotations

import json
import math
import random
import statistics
from typing import Any, Callable

import pytest
from reference import ROOT, SYNTHETIC, checksum

import tomii
from tomii import graphs
from tomii.graphs import Fixed, LogNormal, Uniform

Graph = dict[str, Any]


def run(graph: Graph, frames: int = 3) -> tomii.RunResult:
    return tomii.run_graph(graph, dylibs=[SYNTHETIC], workers=2, slots=2, frames=frames)


def small_graphs(**options: Any) -> list[Graph]:
    """One small graph of each generator (both wavefront encodings)."""
    return [
        graphs.streaming_pipeline(6, **options),
        graphs.wavefront(3, 4, **options),
        graphs.wavefront(4, 3, encoding="cell", **options),
        graphs.fork_join(3, 2, **options),
        graphs.layered_random(4, 3, 0.5, 0.5, 1, **options),
        graphs.mimo_uplink(4, 3, 2, **options),
        graphs.map_reduce(5, 3, **options),
    ]


def by_name(graph: Graph) -> dict[str, Graph]:
    return {node["name"]: node for node in graph["nodes"]}


def factors(graph: Graph) -> dict[str, int]:
    return {node["name"]: node["factor"] for node in graph["nodes"]}


def edges(node: Graph) -> list[tuple[str, Any]]:
    """(predecessor, index) of each edge argument; index None when absent."""
    return [
        (arg["predecessor"]["name"], arg["predecessor"].get("index"))
        for arg in node["args"]
        if isinstance(arg, dict) and arg.get("type") == "$res"
    ]


def spin_args(graph: Graph) -> list[int]:
    """The cost of every node: spin's argument, 0 for noop."""
    return [node["args"][0] if node["function"] == "spin" else 0 for node in graph["nodes"]]


def expected_sinks(graph: Graph, frame: int) -> dict[tuple[str, int], int]:
    """The sink values of a checksum graph in `frame`, from the instances and arguments that
    `tomii.graphs` reads in the graph (the reading its bounds use)."""
    tasks = graphs._tasks(graph)
    nodes = by_name(graph)
    values: list[int] = []
    for id_, task in enumerate(tasks):
        assert all(pred < id_ for pred in task.preds), "generators list predecessors first"
        words = [nodes[task.node]["args"][0], *(values[r] for r in task.results)]
        values.append(checksum(task.node, task.index, frame, words))
    read = {pred for task in tasks for pred in task.preds}
    return {(t.node, t.index): values[i] for i, t in enumerate(tasks) if i not in read}


# --- Every generator on the runtime ------------------------------------------------------------


def test_every_generator_runs_on_the_runtime() -> None:
    for graph in small_graphs(cost=Uniform(0, 20), seed=1):
        result = run(graph)
        assert result.report["graph"] == graph["name"]
        assert result.report.tasks == 3 * len(graphs._tasks(graph)), graph["name"]


def test_checksums_agree_with_the_modules_reading_of_each_graph() -> None:
    for graph in small_graphs(cost=Uniform(0, 100), seed=2, kernel="checksum"):
        assert {node["function"] for node in graph["nodes"]} == {"checksum"}
        result = run(graph)
        for frame, outputs in enumerate(result.outputs):
            got = {(name, index): value for name, index, value in outputs}
            assert got == expected_sinks(graph, frame), graph["name"]


def test_the_cell_wavefront_computes_the_exact_recurrence() -> None:
    rows, cols = 4, 5
    graph = graphs.wavefront(rows, cols, encoding="cell", cost=Uniform(1, 9), kernel="checksum")
    cost = {node["name"]: node["args"][0] for node in graph["nodes"]}
    result = run(graph)
    for frame in range(3):
        cell: dict[tuple[int, int], int] = {}
        for i in range(rows):
            for j in range(cols):
                near = [cell[n] for n in [(i - 1, j), (i, j - 1)] if n in cell]
                name = f"cell{i}_{j}"
                cell[i, j] = checksum(name, 0, frame, [cost[name], *near])
        assert result.output(f"cell{rows - 1}_{cols - 1}", frame=frame) == cell[rows - 1, cols - 1]


# --- Shapes ------------------------------------------------------------------------------------


def test_streaming_pipeline_shape() -> None:
    graph = graphs.streaming_pipeline(8)
    assert factors(graph) == {"ingest": 8, "transform": 8, "aggregate": 1, "emit": 1}
    assert [edges(node) for node in graph["nodes"]] == [
        [],
        [("ingest", None)],
        [("transform", "all")],
        [("aggregate", None)],
    ]
    assert graph["name"] == "streaming_pipeline(width=8,cost=Fixed(0),seed=0)"
    assert factors(graphs.streaming_pipeline())["transform"] == 256


def diagonal_cells(rows: int, cols: int) -> list[list[tuple[int, int]]]:
    """The cells of each anti-diagonal, by row."""
    return [[(i, d - i) for i in range(rows) if 0 <= d - i < cols] for d in range(rows + cols - 1)]


@pytest.mark.parametrize("rows,cols", [(1, 1), (1, 5), (5, 1), (3, 4), (4, 3), (6, 6), (2, 7)])
def test_diagonal_wavefront_has_every_neighbour_and_at_most_two_extra_edges(
    rows: int, cols: int
) -> None:
    graph = graphs.wavefront(rows, cols)
    diagonals = diagonal_cells(rows, cols)
    assert factors(graph) == {f"diag{d}": len(cells) for d, cells in enumerate(diagonals)}
    cell_of = [diagonals[int(t.node[4:])][t.index] for t in graphs._tasks(graph)]
    for d, cells in enumerate(diagonals):
        extra = 0
        for id_, (i, j) in enumerate(cell_of):
            if i + j != d:
                continue
            deps = {cell_of[p] for p in graphs._tasks(graph)[id_].preds}
            exact = {n for n in [(i - 1, j), (i, j - 1)] if min(n) >= 0}
            assert exact <= deps, (i, j)
            assert all(a + b == d - 1 for a, b in deps)
            extra += len(deps - exact)
        assert extra <= 2
    run(graph, frames=1)


def test_cell_wavefront_shape() -> None:
    graph = graphs.wavefront(3, 4, encoding="cell")
    nodes = by_name(graph)
    assert len(nodes) == 12 and set(factors(graph).values()) == {1}
    assert edges(nodes["cell0_0"]) == []
    assert edges(nodes["cell0_2"]) == [("cell0_1", None)]
    assert edges(nodes["cell2_0"]) == [("cell1_0", None)]
    assert edges(nodes["cell2_3"]) == [("cell1_3", None), ("cell2_2", None)]


def test_fork_join_shape() -> None:
    graph = graphs.fork_join(4, 3)
    assert factors(graph) == {
        "fork": 1,
        **{f"work{s}": 4 for s in range(3)},
        **{f"join{s}": 1 for s in range(3)},
    }
    names = [node["name"] for node in graph["nodes"]]
    assert names == ["fork", "work0", "join0", "work1", "join1", "work2", "join2"]
    nodes = by_name(graph)
    assert edges(nodes["work0"]) == [("fork", "all")]
    assert edges(nodes["work2"]) == [("join1", "all")]
    assert edges(nodes["join2"]) == [("work2", "all")]


def test_mimo_uplink_shape() -> None:
    graph = graphs.mimo_uplink(8, 4, 3)
    assert factors(graph) == {"fft": 8, "chest": 4, "beamform": 4, "demod": 3}
    assert [edges(node) for node in graph["nodes"]] == [
        [],
        [("fft", "all")],
        [("chest", None)],
        [("beamform", "all")],
    ]


def test_map_reduce_shape() -> None:
    graph = graphs.map_reduce(6, 2)
    assert factors(graph) == {"map": 6, "reduce": 2}
    assert [edges(node) for node in graph["nodes"]] == [[], [("map", "all")]]


def layered(graph: Graph) -> dict[tuple[int, int], list[tuple[int, int]]]:
    """Each task (layer, k) of a layered_random graph and its parents."""

    def task(name: str) -> tuple[int, int]:
        layer, k = name[1:].split("_")
        return int(layer), int(k)

    return {task(node["name"]): [task(pred) for pred, _ in edges(node)] for node in graph["nodes"]}


def layer_sizes(graph: Graph) -> list[int]:
    tasks = layered(graph)
    return [sum(1 for layer, _ in tasks if layer == n) for n in range(1 + max(tasks)[0])]


def test_layered_random_levels_and_edges() -> None:
    tasks = layered(graphs.layered_random(8, 5, 0.4, 0.3, 2, seed=7))
    assert {layer for layer, _ in tasks} == set(range(8))
    for (layer, _), parents in tasks.items():
        assert all(layer - 3 <= above < layer for above, _ in parents)
        assert layer == 0 or any(above == layer - 1 for above, _ in parents)
    assert any(above < layer - 1 for (layer, _), parents in tasks.items() for above, _ in parents)
    complete = layered(graphs.layered_random(4, 3, 1.0, 1.0, 0))
    for (layer, _), parents in complete.items():
        assert parents == ([(layer - 1, k) for k in range(3)] if layer else [])
    sparse = layered(graphs.layered_random(6, 4, 0.0, 0.0, 3, seed=5))
    assert all(len(parents) == (layer > 0) for (layer, _), parents in sparse.items())


def test_layered_random_width_varies_with_regularity() -> None:
    assert layer_sizes(graphs.layered_random(6, 4, 0.5, 1.0, seed=3)) == [4] * 6
    irregular = layer_sizes(graphs.layered_random(40, 10, 0.1, 0.0, seed=4))
    assert len(set(irregular)) > 5 and min(irregular) >= 1 and max(irregular) <= 20
    assert 7 <= statistics.mean(irregular) <= 13
    half = layer_sizes(graphs.layered_random(40, 10, 0.1, 0.5, seed=4))
    assert min(half) >= 5 and max(half) <= 15


# --- Seeds -------------------------------------------------------------------------------------


def test_the_same_seed_gives_the_same_graph_and_another_seed_another() -> None:
    cost = LogNormal(20, 0.8)
    makers: list[Callable[[int], Graph]] = [
        lambda seed: graphs.streaming_pipeline(16, cost=cost, seed=seed),
        lambda seed: graphs.wavefront(4, 4, encoding="cell", cost=cost, seed=seed),
        lambda seed: graphs.fork_join(4, 4, cost=cost, seed=seed),
        lambda seed: graphs.layered_random(5, 5, 0.3, 0.5, 1, seed=seed),
        lambda seed: graphs.mimo_uplink(4, 4, 4, cost=cost, seed=seed),
        lambda seed: graphs.map_reduce(4, 4, cost=cost, seed=seed),
    ]
    for make in makers:
        assert json.dumps(make(11)) == json.dumps(make(11))
        first, second = make(11), make(12)
        assert first["name"] != second["name"]
        assert first["nodes"] != second["nodes"], first["name"]


def test_layered_random_structure_does_not_depend_on_the_cost() -> None:
    plain = layered(graphs.layered_random(6, 5, 0.3, 0.5, 1, seed=9))
    costly = layered(graphs.layered_random(6, 5, 0.3, 0.5, 1, seed=9, cost=Uniform(5, 50)))
    assert plain == costly


# --- Costs -------------------------------------------------------------------------------------


def test_cost_samples_have_the_right_statistics() -> None:
    rng = random.Random(5)
    assert {Fixed(7).sample(rng) for _ in range(10)} == {7}
    uniform = [Uniform(10, 30).sample(rng) for _ in range(4000)]
    assert min(uniform) >= 10 and max(uniform) <= 30
    assert abs(statistics.mean(uniform) - 20) < 1
    lognormal = [LogNormal(20, 0.5).sample(rng) for _ in range(4000)]
    assert min(lognormal) >= 0
    assert abs(statistics.median(lognormal) - 20) < 2
    assert abs(statistics.mean(lognormal) - LogNormal(20, 0.5).mean_us) < 2
    assert LogNormal(20, 0.5).mean_us == pytest.approx(20 * math.exp(0.125))
    assert Uniform(10, 30).mean_us == 20 and Fixed(3).mean_us == 3


def test_generated_costs_follow_the_distribution() -> None:
    graph = graphs.layered_random(20, 20, 0.05, 1.0, cost=Uniform(10, 30), seed=1)
    costs = spin_args(graph)
    assert len(costs) == 400 and all(10 <= c <= 30 for c in costs)
    assert 18 < statistics.mean(costs) < 22
    assert graphs.total_work_us(graph) == sum(costs)
    heavy = spin_args(graphs.wavefront(20, 20, encoding="cell", cost=LogNormal(50, 1.0)))
    assert 30 < statistics.median(heavy) < 70 and max(heavy) > 150


def test_cost_zero_is_noop_and_checksum_keeps_the_cost() -> None:
    graph = graphs.streaming_pipeline(4, cost={"transform": Fixed(5), "emit": Uniform(0, 0.4)})
    assert [node["function"] for node in graph["nodes"]] == ["noop", "spin", "noop", "noop"]
    assert by_name(graph)["transform"]["args"][0] == 5
    assert by_name(graph)["ingest"]["args"] == []
    checked = graphs.streaming_pipeline(4, cost=Fixed(0), kernel="checksum")
    assert [node["args"][0] for node in checked["nodes"]] == [0, 0, 0, 0]
    assert checked["name"].endswith("kernel=checksum)")


def test_invalid_arguments_raise_specific_errors() -> None:
    with pytest.raises(ValueError, match="hi_us 1 is below lo_us 5"):
        Uniform(5, 1)
    with pytest.raises(ValueError, match="median_us must be finite and positive"):
        LogNormal(0, 1)
    with pytest.raises(TypeError, match="us must be a number"):
        Fixed("5")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown roles \\['shuffle'\\]"):
        graphs.map_reduce(2, 2, cost={"shuffle": Fixed(1)})
    with pytest.raises(ValueError, match="width must be at least 1"):
        graphs.streaming_pipeline(0)
    with pytest.raises(ValueError, match="density must be between 0 and 1"):
        graphs.layered_random(3, 3, 1.5)
    with pytest.raises(ValueError, match="encoding must be"):
        graphs.wavefront(2, 2, encoding="row")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="kernel must be"):
        graphs.fork_join(2, 2, kernel="touch")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="scale must be"):
        graphs.standard_set("large")  # type: ignore[arg-type]


# --- The standard set --------------------------------------------------------------------------


def test_standard_set_has_one_of_each_and_runs() -> None:
    small = graphs.standard_set("small")
    shapes = [graph["name"].split("(")[0] for graph in small]
    generators = [graphs.streaming_pipeline, graphs.wavefront, graphs.fork_join]
    generators += [graphs.layered_random, graphs.mimo_uplink, graphs.map_reduce]
    assert shapes == [generator.__name__ for generator in generators]
    for graph in small:
        assert 10 <= len(graphs._tasks(graph)) <= 70
        assert run(graph, frames=100).report.frames == 100
    for graph in graphs.standard_set("medium", cost=Fixed(0)):
        run(graph, frames=2)
    assert factors(graphs.standard_set("medium")[0])["transform"] == 256


# --- Bounds ------------------------------------------------------------------------------------


def example(name: str) -> Graph:
    graph: Graph = json.loads((ROOT / "examples" / "graphs" / name).read_text())
    return graph


def test_bounds_of_the_example_graphs() -> None:
    # pipeline: 4 stages of 16 × spin 5; fanout: 2 → 64 × 3 → 5; stream: 32 × 2 → 32 × 5 → 10 → 2.
    assert graphs.critical_path_us(example("pipeline.json")) == 20
    assert graphs.total_work_us(example("pipeline.json")) == 320
    assert graphs.critical_path_us(example("fanout.json")) == 10
    assert graphs.total_work_us(example("fanout.json")) == 2 + 64 * 3 + 5
    assert graphs.critical_path_us(example("stream.json")) == 19
    assert graphs.total_work_us(example("stream.json")) == 32 * 2 + 32 * 5 + 10 + 2


def test_bounds_follow_selections_refs_loops_and_groups() -> None:
    def res(name: str, **predecessor: Any) -> Graph:
        return {"type": "$res", "predecessor": {"name": name, **predecessor}}

    graph = {
        "initializations": [{"name": "c", "value": 3}, {"name": "two", "value": 2}],
        "nodes": [
            {"name": "a", "function": "spin", "factor": 4, "args": [{"type": "$ref", "name": "c"}]},
            {"name": "b", "function": "spin", "factor": 2,
             "args": [{"type": "u64", "value": 10}, res("a", group_by=2)]},
            {"name": "c", "function": "spin", "loop": {"name": "k", "factor": 3},
             "args": [1, {"type": "$barrier", "predecessor": {"name": "b"}}]},
            {"name": "d", "function": "spin", "factor": 4,
             "args": [2, res("a", index=-1, wrap=True)]},
            {"name": "e", "function": "spin", "factor": 2, "args": [20, res("d", index="0-two")]},
            {"name": "f", "function": "checksum", "args": [res("e", index="all"), res("c")]},
        ],
    }  # fmt: skip
    # a (3) → b (10) → c (3 × 1) = 16; a (3) → d (2) → e (20) = 25; f costs nothing.
    assert graphs.critical_path_us(graph) == 25
    assert graphs.total_work_us(graph) == 4 * 3 + 2 * 10 + 3 + 4 * 2 + 2 * 20
    run(graph, frames=1)
    grouped = {
        "nodes": [{"name": "g", "function": "spin", "factor": 5, "group_size": 2, "args": [5]}]
    }
    # Groups {0, 1}, {2, 3}, {4}: one task runs 10 µs of members in a row.
    assert graphs.critical_path_us(grouped) == 10
    assert graphs.total_work_us(grouped) == 25
    run(grouped, frames=1)


def test_bounds_of_generated_graphs() -> None:
    for encoding in ["diagonal", "cell"]:
        graph = graphs.wavefront(3, 4, encoding=encoding, cost=Fixed(5))  # type: ignore[arg-type]
        assert graphs.critical_path_us(graph) == (3 + 4 - 1) * 5
        assert graphs.total_work_us(graph) == 12 * 5
    costs = {"fork": Fixed(1), "work": Fixed(10), "join": Fixed(2)}
    fork_join = graphs.fork_join(4, 2, cost=costs)
    assert graphs.critical_path_us(fork_join) == 1 + 2 * (10 + 2)
    assert graphs.total_work_us(fork_join) == 1 + 2 * (4 * 10 + 2)
    pipeline = graphs.streaming_pipeline(8, cost=Fixed(3))
    assert (graphs.critical_path_us(pipeline), graphs.total_work_us(pipeline)) == (12, 54)
    roles = ["fft", "chest", "beamform", "demod"]
    mimo = graphs.mimo_uplink(4, 3, 2, cost={r: Fixed(4 - k) for k, r in enumerate(roles)})
    assert (graphs.critical_path_us(mimo), graphs.total_work_us(mimo)) == (10, 16 + 9 + 6 + 2)
    checked = graphs.map_reduce(5, 3, cost=Fixed(2), kernel="checksum")
    assert graphs.critical_path_us(checked) == graphs.total_work_us(checked) == 0
    for graph in small_graphs(cost=LogNormal(10, 1.0), seed=4):
        assert 0 < graphs.critical_path_us(graph) <= graphs.total_work_us(graph)
