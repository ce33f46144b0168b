"""The knob catalog and the Python API cannot drift apart: every runtime option of `tomii knobs` is
a keyword of `run_graph` (list knobs in the plural) with the same default, and the catalog's
domains are what the callers accept."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
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


def _bad_values(domain: dict[str, Any]) -> list[Any]:
    """Values of the wrong type or just outside `domain` (an int, bool or choice domain)."""
    if domain["kind"] == "bool":
        return [1, "yes", None]
    if domain["kind"] == "choice":
        return ["no such choice", 0]
    outside = [domain["min"] - 1] + ([domain["max"] + 1] if domain["max"] < 2**64 - 1 else [])
    return [*outside, "2", 2.5, True, None]


#: The callers that take run options, each with the keyword arguments a call needs besides them.
_CALLERS: dict[str, tuple[Callable[..., Any], dict[str, Any]]] = {
    "run_graph": (tomii.run_graph, {"dylibs": [SYNTHETIC], "scheduler_plugin": FIFO}),
    "Session": (tomii.Session, {"dylibs": [SYNTHETIC], "scheduler_plugin": FIFO}),
    "simulate": (tomii.simulate, {"scheduler_plugin": FIFO}),
}


@pytest.mark.parametrize("caller", sorted(_CALLERS))
def test_a_bad_option_value_is_refused_naming_the_option_and_its_domain(caller: str) -> None:
    """Every int, bool and choice knob a caller takes refuses a value of the wrong type or outside
    the catalog's domain with a ConfigError that names it (not the binding's bare conversion
    error), before anything runs."""
    function, needed = _CALLERS[caller]
    parameters = inspect.signature(function).parameters
    graph = {"nodes": [{"name": "x", "function": "noop"}]}
    checked = 0
    for knob in json.loads(_tomii.knobs_json())["knobs"]:
        kind = knob["domain"]["kind"]
        if knob["name"] not in parameters or kind not in ("int", "bool", "choice"):
            continue
        for value in _bad_values(knob["domain"]):
            with pytest.raises(tomii.ConfigError, match=rf"^{knob['name']} is .*: it must be"):
                function(graph, **needed, **{knob["name"]: value})
            checked += 1
    assert checked >= 20, f"{caller}: only {checked} bad values tried"


def test_numpy_integers_and_bools_are_ints_and_bools() -> None:
    """Sweeps and tuners often hold knob values in NumPy arrays: their integers pass as ints, and
    their bools as bools."""
    knobs: dict[str, Any] = {
        "workers": np.int64(2),
        "frames": np.uint32(3),
        "task_timing": np.True_,
    }
    result = tomii.run_graph(
        {"nodes": [{"name": "x", "function": "noop"}]},
        dylibs=[SYNTHETIC],
        scheduler_plugin=FIFO,
        **knobs,
    )
    assert result.report["frames"] == 3
