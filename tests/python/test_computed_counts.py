"""Counts the graph computes (vars with a function) in the builder's graphs: factors, group sizes,
range ends, a grouped barrier's group size and network numbers written by name, computed before
the graph compiles with the run's kernels, and meaning exactly what the same graph with the values
written out means (its compiled edges are the same). The shape is Tomii 1.2's MIMO uplink graph:
fft per symbol → beam behind every csi → demul behind its group of fft and every beam."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from reference import SYNTHETIC

import tomii

#: antennas, uplink symbols, demul tasks, demul's group size.
VALUES = {"antennas": 4, "ul_symbols": 8, "demul_tasks": 4, "demul_group": 2}


def uplink(computed: bool) -> tomii.Graph:
    """The MIMO-shaped graph; its counts computed by the synthetic `product` kernel, or written."""
    g = tomii.Graph()
    two = g.var("two", 2)
    counts: dict[str, Any] = {}
    if computed:
        counts["antennas"] = g.var("antennas", func="product", args=[two, two])
        counts["ul_symbols"] = g.var("ul_symbols", func="product", args=[counts["antennas"], two])
        counts["demul_tasks"] = g.var("demul_tasks", func="product", args=[two, two])
        counts["demul_group"] = g.var("demul_group", func="product", args=[two])
    else:
        counts = dict(VALUES)
    fft = g.node("fft", func="noop", factor=counts["ul_symbols"])
    csi = g.node("csi", func="noop", factor=2)
    beam = g.node("beam", func="noop", factor=2, priority="high", args=[csi.wait(0, 2)])
    g.node(
        "demul",
        func="noop",
        factor=counts["demul_tasks"],
        group_size=counts["demul_group"],
        args=[
            fft.wait(0, counts["ul_symbols"], group_by=counts["antennas"]),
            beam.wait(0, 2),
        ],
    )
    return g


def edges(graph: dict[str, Any], tmp_path: Path, name: str) -> str:
    """What `tomii convert --edges` prints for `graph`, with the synthetic kernels."""
    from tomii._tomii import cli_main

    source, out = tmp_path / f"{name}.json", tmp_path / f"{name}.edges"
    source.write_text(json.dumps(graph))
    argv = ["tomii", "convert", str(source), "--edges", "--dylib", str(SYNTHETIC), "-o", str(out)]
    assert cli_main(argv) == 0
    return out.read_text()


def test_the_builder_writes_computed_counts_by_name() -> None:
    spec = uplink(computed=True).to_dict()
    fft, _csi, _beam, demul = spec["nodes"]
    assert fft["factor"] == "ul_symbols"
    assert demul["group_size"] == "demul_group"
    assert demul["args"][0]["predecessor"] == {
        "name": "fft",
        "index": "0-ul_symbols",
        "group_by": "antennas",
        "rule": "tomii-1.2",
    }


def test_computed_counts_compile_to_the_edges_of_the_written_values(tmp_path: Path) -> None:
    computed = edges(uplink(computed=True).to_dict(), tmp_path, "computed")
    written = edges(uplink(computed=False).to_dict(), tmp_path, "written")
    assert computed == written
    # Two groups of 4 fft instances, each shared by 2 demul instances (one task of group size 2).
    assert "demul[0] waits fft[0..4]" in computed
    assert "demul[2] waits fft[4..8]" in computed


def test_a_graph_with_computed_counts_runs_and_simulates_with_its_kernels() -> None:
    graph = uplink(computed=True).to_dict()
    tasks_per_frame = 8 + 2 + 2 + 4
    run = tomii.run_graph(graph, dylibs=[SYNTHETIC], frames=3, workers=2)
    assert run.report["tasks"] == 3 * tasks_per_frame
    assert (
        tomii.simulate(graph, dylibs=[SYNTHETIC], frames=3).report["tasks"] == 3 * tasks_per_frame
    )


def test_validate_and_from_json_compute_counts_with_the_kernels_given() -> None:
    graph = uplink(computed=True).to_dict()
    assert tomii.validate(graph, dylibs=[SYNTHETIC]) == "tomii"
    loaded = tomii.Graph.from_json(graph, dylibs=[SYNTHETIC])
    assert loaded.to_dict()["nodes"][0]["factor"] == "ul_symbols"
    with pytest.raises(tomii.GraphError, match=r'computed initialization "ul_symbols".*--dylib'):
        tomii.validate(graph)


def test_network_numbers_may_be_computed() -> None:
    g = tomii.Graph()
    two = g.var("two", 2)
    sockets = g.var("sockets", func="product", args=[two])
    packets = g.var("packets", func="product", args=[two, two])
    length = g.var("length", func="product", args=[two, 32])
    network = g.network(
        num_sockets=sockets, packet_length=length, stream_packets=packets, start_port=0
    )
    g.node("fft", func="checksum", factor=packets, args=[network.out()])
    spec = g.to_dict()
    assert spec["network_config"]["num_sockets"] == "sockets"
    assert tomii.validate(spec, dylibs=[SYNTHETIC]) == "tomii"


def test_a_grouped_barrier_that_hangs_in_1_2_is_refused_once_its_counts_are_known() -> None:
    g = tomii.Graph()
    two = g.var("two", 2)
    three = g.var("three", func="product", args=[3])
    fft = g.node("fft", func="noop", factor=8)
    g.node("demul", func="noop", factor=three, args=[fft.wait(0, 8, group_by=two)])
    with pytest.raises(tomii.GraphError, match=r"4 group\(s\) of 2 for a node of 3 instance"):
        tomii.validate(g.to_dict(), dylibs=[SYNTHETIC])


def test_a_mimo_builder_script_in_1_2_forms_loads_with_its_kernels() -> None:
    """1.2's MIMO builder forms: the `$network` handle, a packet range and the socket numbers, the
    address, the factors, a group size and a grouped barrier, all computed by kernels."""
    from tomii._node import Node as _Node
    from tomii._types import TypedValue

    app = tomii.Graph()
    two = app.var("two", 2)
    antennas = app.var("antennas", func="product", args=[two, two])
    pilots = app.var("pilots", func="product", args=[two])
    packets = app.var("packets", func="product", args=[antennas, two, two])
    ul_symbols = app.var("ul_symbols", func="product", args=[antennas, two])
    address = app.var("address", func="typed", args=["String", "127.0.0.1"])
    length = app.var("length", func="product", args=[two, 32])
    app.network(
        socket_type="udp",
        num_sockets=antennas,
        packet_length=length,
        stream_packets=packets,
        address=address,
        start_port=0,
    )
    net = _Node("$network", func="")
    index = TypedValue("$ref", "$index")
    fft = app.node("fft", func="checksum", factor=ul_symbols, args=[net.out(pilots, packets)])
    csi = app.node("csi", func="checksum", factor=pilots, args=[net.out(0, pilots)])
    beam = app.node("beam", func="noop", factor=2, args=[index, csi.wait(0, pilots)])
    app.node(
        "demul",
        func="noop",
        factor=4,
        group_size=two,
        args=[fft.wait(0, ul_symbols, group_by=antennas), beam.wait(0, 2)],
    )
    spec = app.to_dict()
    assert spec["network_config"]["address"] == "address"
    assert tomii.validate(spec, dylibs=[SYNTHETIC]) == "tomii"
