"""The knob catalog and the Python API cannot drift apart: every runtime option of `tomii knobs` is
a keyword of `run_graph` (list knobs in the plural) with the same default."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

from reference import FIFO, SYNTHETIC

import tomii
from tomii import _tomii


def python_name(knob: dict[str, str]) -> str:
    return knob["name"] + ("s" if knob["type"].startswith("list<") else "")


def test_every_catalog_knob_is_a_run_graph_keyword_with_the_same_default() -> None:
    catalog = json.loads(_tomii.knobs_json())["knobs"]
    parameters = inspect.signature(tomii.run_graph).parameters
    for knob in catalog:
        name = python_name(knob)
        assert name in parameters, f"knob {knob['name']!r} is not accepted by run_graph ({name})"
        default = parameters[name].default
        if knob["default"] not in (None, []):
            assert default == knob["default"], f"{name}: {default!r} != catalog {knob['default']!r}"
    keywords = {name for name, p in parameters.items() if p.kind is inspect.Parameter.KEYWORD_ONLY}
    library_only = {"collect_outputs", "python_kernels"}
    assert keywords - library_only == {python_name(k) for k in catalog}


def test_list_knobs_is_the_catalog_table() -> None:
    table = tomii.list_knobs()
    assert table.splitlines()[0].split()[:3] == ["NAME", "CLI", "TYPE"]
    assert "stall_timeout_ms" in table


def test_trace_and_report_files_are_written(tmp_path: Path) -> None:
    graph = {"nodes": [{"name": "x", "function": "noop", "factor": 3}]}
    trace, report = tmp_path / "trace.csv", tmp_path / "report.json"
    tomii.run_graph(
        graph,
        dylibs=[SYNTHETIC],
        scheduler_plugin=FIFO,
        frames=2,
        trace=trace,
        report=report,
        quiet=True,
    )
    assert (
        trace.read_text().splitlines()[0]
        == "node,instance,frame,slot,worker,ready_ns,start_ns,end_ns"
    )
    assert len(trace.read_text().splitlines()) == 1 + 3 * 2
    assert json.loads(report.read_text())["tasks"] == 6
