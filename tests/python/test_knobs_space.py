"""The knob space: runtime knobs mirror the catalog, graph knobs never change what a graph
computes, invariants name the graph's structure, and domains enumerate to their points."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from reference import ROOT, SYNTHETIC

import tomii
from tomii import _tomii
from tomii.knobs import enumerate_domain, knob_space

STREAM_ANALYTICS = ROOT / "examples" / "compat" / "stream_analytics.json"
MATRIX_COMPUTE = ROOT / "examples" / "compat" / "matrix_compute.json"


def catalog() -> dict[str, dict[str, Any]]:
    return {knob["name"]: knob for knob in json.loads(_tomii.knobs_json())["knobs"]}


def by_name(space: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {knob["name"]: knob for knob in space["knobs"]}


def invariant(space: dict[str, Any], name: str) -> dict[str, Any]:
    matches: list[dict[str, Any]] = [
        entry for entry in space["forbidden"] if entry["invariant"] == name
    ]
    assert len(matches) == 1, f"invariant {name!r}: {matches}"
    return matches[0]


def test_the_runtime_space_is_the_catalogs_perf_knobs_with_defined_domains() -> None:
    space = knob_space(workload="smoke")
    assert (space["version"], space["workload"], space["graph"]) == (1, "smoke", None)
    knobs = by_name(space)
    network = {"receiver_threads", "socket_recv_buf_bytes", "network_dispatch"}
    engine = {"workers", "slots", "pop_batch", "inline_continuation", "idle_spin", "pin_workers"}
    assert set(knobs) == engine | network
    for name, knob in knobs.items():
        entry = catalog()[name]
        assert knob["kind"] == "cli"
        assert (knob["default"], knob["domain"]) == (entry["default"], entry["domain"])
        assert knob["search_hint"] == entry["search_hint"]
        assert knob["provenance"] == {
            "source": "catalog",
            "catalog_version": 1,
            "cli": entry["cli"],
        }


def test_every_perf_knob_is_in_the_space_or_excluded_with_a_reason() -> None:
    space = knob_space()
    excluded = {entry["name"]: entry["reason"] for entry in space["excluded"]}
    perf = {name for name, knob in catalog().items() if knob["role"] == "perf"}
    assert set(by_name(space)) | set(excluded) == perf
    assert not set(by_name(space)) & set(excluded)
    assert "tomii schedulers --json" in excluded["scheduler"]


def test_knobs_outside_the_space_are_held_fixed_and_outputs_must_not_change() -> None:
    space = knob_space()
    held = invariant(space, "fixed_run_knobs")["knobs"]
    assert "frames" in held
    assert set(held) == {name for name, knob in catalog().items() if knob["role"] != "perf"}
    invariant(space, "same_outputs")
    assert not [entry for entry in space["forbidden"] if entry["invariant"].startswith("fixed_e")]


def test_a_graph_file_a_dict_and_a_builder_give_the_same_space(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    g = tomii.Graph()
    n = g.var("n", 4)
    a = g.node("a", func="checksum", factor=n, priority="high")
    g.node("b", func="checksum", factor=4, args=[a.out()], use_workers="0-1")
    as_dict = json.loads(g.to_json())
    monkeypatch.chdir(tmp_path)
    g.save_json("graph.json")
    spaces = [knob_space(g), knob_space(as_dict), knob_space("graph.json")]
    spaces.append(knob_space(Path("graph.json")))
    assert all(space == spaces[0] for space in spaces)
    knobs = by_name(spaces[0])
    assert knobs["a.priority"]["default"] == "high"
    assert knobs["b.use_workers"]["default"] == "0-1"
    assert knobs["a.group_size"]["domain"] == {"kind": "int", "min": 1, "max": 4, "scale": "pow2"}


def test_graph_knobs_point_at_the_field_they_set() -> None:
    graph = json.loads(STREAM_ANALYTICS.read_text())
    space = knob_space(STREAM_ANALYTICS, workload="stream")
    graph_knobs = [knob for knob in space["knobs"] if knob["kind"] == "graph"]
    assert graph_knobs
    for knob in graph_knobs:
        provenance = knob["provenance"]
        _, section, position, field = provenance["pointer"].split("/")
        node = graph[section][int(position)]
        assert (section, node["name"], field) == ("nodes", provenance["node"], provenance["field"])
        assert knob["name"] == f"{node['name']}.{field}"
        assert provenance["graph"] == "stream_analytics"
    knobs = by_name(space)
    assert knobs["hot.priority"]["default"] == "high"
    assert knobs["cold.priority"]["default"] == "normal"
    assert knobs["hot.group_size"]["domain"]["max"] == 16
    assert "aggregate.group_size" not in knobs, "one instance: nothing to group"
    assert not [k for k in knobs if k.startswith("final_report.")], "post-nodes are not tuned"


def test_factors_edges_and_barriers_are_forbidden_not_knobs() -> None:
    space = knob_space(MATRIX_COMPUTE)
    fields = {knob["provenance"].get("field") for knob in space["knobs"]}
    assert fields == {None, "priority", "use_workers", "group_size"}
    assert invariant(space, "fixed_factors")["factors"]["gen_vec"] == "num_nodes"
    edges = invariant(space, "fixed_edges")["edges"]
    assert len(edges) == 4
    barrier = {
        "node": "vec_mat",
        "predecessor": "compute_fft",
        "type": "$barrier",
        "selection": {},
        "in": "args",
    }
    assert invariant(space, "fixed_barriers")["edges"] == [barrier]
    structure = invariant(space, "fixed_structure")
    assert structure["post_nodes"] == ["write_to_file"]


def test_without_graph_knobs_the_graph_is_fixed() -> None:
    space = knob_space(MATRIX_COMPUTE, include_graph_knobs=False)
    assert {knob["kind"] for knob in space["knobs"]} == {"cli"}
    invariant(space, "fixed_graph")
    invariant(space, "fixed_barriers")


def test_odd_priorities_worker_ranges_and_self_reads() -> None:
    graph = {
        "nodes": [
            {"name": "odd", "function": "noop", "factor": 8, "priority": 5, "use_workers": 2},
            {
                "name": "scan",
                "function": "noop",
                "factor": 8,
                "priority": -1,
                "use_workers": " 0 - 3 ",
                "args": [{"type": "$dep", "predecessor": {"name": "scan", "index": -1}}],
            },
        ]
    }
    knobs = by_name(knob_space(graph))
    assert knobs["odd.priority"]["default"] == 5
    assert knobs["odd.priority"]["domain"]["values"] == ["low", "normal", "high", 5]
    assert knobs["odd.use_workers"]["default"] == "2-2"
    assert knobs["scan.priority"]["default"] == "low"
    assert knobs["scan.use_workers"]["default"] == "0-3"
    assert "scan.group_size" not in knobs, "a node reading its own instances is not grouped"


def apply(graph: dict[str, Any], knob: dict[str, Any], value: Any) -> None:
    """Sets the field the knob's pointer names; None removes it (the format's absent field)."""
    _, section, position, field = knob["provenance"]["pointer"].split("/")
    node = graph[section][int(position)]
    if value is None:
        node.pop(field, None)
    else:
        node[field] = value


def test_turning_graph_knobs_keeps_the_outputs() -> None:
    """Every graph knob at an extreme of its domain at once: the runtime accepts the graph and
    computes the same outputs as the untouched graph."""
    baseline_graph = json.loads(STREAM_ANALYTICS.read_text())
    space = knob_space(baseline_graph)
    workers = 2
    tuned = copy.deepcopy(baseline_graph)
    for position, knob in enumerate(k for k in space["knobs"] if k["kind"] == "graph"):
        points = enumerate_domain({**knob["domain"], "workers": workers})
        apply(tuned, knob, points[-1] if position % 2 else points[1])
    assert tuned != baseline_graph
    options: dict[str, Any] = {"dylibs": [SYNTHETIC], "workers": workers, "slots": 3, "frames": 6}
    baseline = tomii.run_graph(baseline_graph, scheduler="priority", **options)
    result = tomii.run_graph(tuned, scheduler="priority", **options)
    assert (result.outputs, result.post_outputs) == (baseline.outputs, baseline.post_outputs)


def test_bad_graphs_raise_errors_naming_the_file_and_field(tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    with pytest.raises(tomii.GraphError, match="missing.json: cannot read"):
        knob_space(missing)
    broken = tmp_path / "broken.json"
    broken.write_text('{"nodes": [', encoding="utf-8")
    with pytest.raises(tomii.GraphError, match="broken.json: not valid JSON"):
        knob_space(str(broken))
    no_nodes = tmp_path / "no_nodes.json"
    no_nodes.write_text('{"name": "x"}', encoding="utf-8")
    with pytest.raises(tomii.GraphError, match="no_nodes.json: field 'nodes'"):
        knob_space(no_nodes)
    bad_priority = tmp_path / "bad_priority.json"
    bad_priority.write_text(
        '{"nodes": [{"name": "a", "function": "noop", "priority": "urgent"}]}', encoding="utf-8"
    )
    with pytest.raises(tomii.GraphError, match="bad_priority.json: node 'a': field 'priority'"):
        knob_space(bad_priority)
    with pytest.raises(tomii.GraphError, match=r"nodes\[0\] must be an object with a name"):
        knob_space({"nodes": [{"function": "noop"}]})
    with pytest.raises(tomii.GraphError, match="field 'use_workers'"):
        knob_space({"nodes": [{"name": "a", "function": "noop", "use_workers": "a-b"}]})
    with pytest.raises(TypeError, match="tomii.Graph, a dict or a path"):
        knob_space(42)  # type: ignore[arg-type]


def test_enumerate_domain_materializes_each_kind() -> None:
    assert enumerate_domain({"kind": "bool"}) == [False, True]
    assert enumerate_domain({"kind": "choice", "values": ["stop", "fallback"]}) == [
        "stop",
        "fallback",
    ]
    assert enumerate_domain({"kind": "int", "min": 3, "max": 40, "scale": "pow2"}) == [4, 8, 16, 32]
    assert enumerate_domain({"kind": "int", "min": 1, "max": 5, "scale": "linear"}) == [
        1,
        2,
        3,
        4,
        5,
    ]
    assert enumerate_domain({"kind": "int", "min": 0, "max": 2000, "scale": "log"}) == [
        1,
        10,
        100,
        1000,
    ]
    ranges = enumerate_domain({"kind": "worker_range", "depends_on": "workers", "workers": 2})
    assert ranges == [None, "0-0", "0-1", "1-1"]


def test_catalog_domains_enumerate_or_say_why_not() -> None:
    knobs = catalog()
    assert len(enumerate_domain(knobs["slots"]["domain"])) == 25
    assert enumerate_domain(knobs["pop_batch"]["domain"])[-1] == 4096
    assert len(enumerate_domain(knobs["workers"]["domain"])) == 1024
    with pytest.raises(ValueError, match="points, more than 10000"):
        enumerate_domain(knobs["frame_timeout_ms"]["domain"] | {"scale": "linear"})
    with pytest.raises(ValueError, match="tomii schedulers --json"):
        enumerate_domain(knobs["scheduler"]["domain"])
    with pytest.raises(ValueError, match="cannot enumerate a domain of kind 'path'"):
        enumerate_domain(knobs["trace"]["domain"])


def test_enumerate_domain_refuses_what_it_cannot_list() -> None:
    with pytest.raises(ValueError, match="depends on the run's workers"):
        enumerate_domain({"kind": "worker_range", "depends_on": "workers"})
    with pytest.raises(ValueError, match="more than 10000"):
        enumerate_domain({"kind": "worker_range", "workers": 200})
    with pytest.raises(ValueError, match="empty"):
        enumerate_domain({"kind": "int", "min": 5, "max": 1, "scale": "linear"})
    with pytest.raises(ValueError, match="unknown int scale"):
        enumerate_domain({"kind": "int", "min": 1, "max": 4, "scale": "cubic"})
    with pytest.raises(ValueError, match="of kind None"):
        enumerate_domain({"values": [1]})
    with pytest.raises(TypeError, match="a domain is a dict"):
        enumerate_domain([1, 2])  # type: ignore[arg-type]
