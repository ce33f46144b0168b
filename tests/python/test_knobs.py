"""The knob catalog and the Python API cannot drift apart: the keywords of `run_graph`, `Session`
and `simulate` are the knobs their entry point takes (list knobs in the plural) with the same
defaults, the compiled module's stub matches it, and the catalog's domains are what the callers
accept."""

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
        # None is the value of a knob unset by default (record_stream), not a bad one.
        bad = [
            v for v in _bad_values(knob["domain"]) if v is not None or knob["default"] is not None
        ]
        for value in bad:
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


#: Each entry point of the launcher and the Python callable that fronts it, with the keywords
#: that are the caller's own rather than run options.
_ENTRIES: list[tuple[str, Callable[..., Any], set[str]]] = [
    ("run", tomii.run_graph, {"collect_outputs", "python_kernels"}),
    ("session", tomii.Session.__init__, {"python_kernels", "busy", "timeout"}),
    (
        "simulate",
        tomii.simulate,
        {
            "cost_model",
            "seed",
            "arrival_interval_us",
            "overhead_pop_ns",
            "overhead_task_ns",
        },
    ),
]


def _empty(value: Any) -> bool:
    return value is None or (not isinstance(value, bool) and not value and value != 0)


@pytest.mark.parametrize(("entry", "caller", "own"), _ENTRIES, ids=[e[0] for e in _ENTRIES])
def test_every_entry_takes_its_catalog_knobs_with_their_defaults(
    entry: str, caller: Callable[..., Any], own: set[str]
) -> None:
    """The keywords of `run_graph`, `Session` and `simulate` are exactly the knobs the catalog
    says their entry point takes (list knobs in the plural), with the catalog's defaults for that
    entry (a simulation's frames included), besides the caller's own keywords."""
    parameters = inspect.signature(caller).parameters
    taken = {}
    for name, default in _tomii.knobs_taken(entry):
        keyword = tomii._options.PYTHON_NAMES.get(name, name)
        taken[keyword] = json.loads(default)
    keywords = {n for n, p in parameters.items() if p.kind is inspect.Parameter.KEYWORD_ONLY}
    assert keywords - own == set(taken), f"{entry}: keywords and catalog differ"
    for keyword, default in taken.items():
        given = parameters[keyword].default
        if _empty(default):
            assert _empty(given), f"{entry}: {keyword} defaults to {given!r}, the catalog to unset"
        else:
            assert given == default, (
                f"{entry}: {keyword} is {given!r}, the catalog says {default!r}"
            )


def _stub_functions() -> dict[str, list[str]]:
    """The parameters of every function and class `__init__` the compiled module's stub
    declares."""
    import ast

    stub = Path(tomii.__file__).with_name("_tomii.pyi")
    declared: dict[str, list[str]] = {}
    for node in ast.parse(stub.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef):
            functions = [(node.name, node)]
        elif isinstance(node, ast.ClassDef):
            functions = [
                (node.name, f)
                for f in node.body
                if isinstance(f, ast.FunctionDef) and f.name == "__init__"
            ]
        else:
            continue
        for name, function in functions:
            arguments = function.args
            every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
            declared[name] = [a.arg for a in every if a.arg != "self"]
    return declared


def test_the_stub_declares_the_compiled_functions_parameters() -> None:
    """Every function of the compiled module's stub takes the parameters the compiled function
    takes, in the same order, so that the typed callers and the binding cannot drift."""
    for name, stubbed in _stub_functions().items():
        compiled = getattr(_tomii, name)
        signature = inspect.signature(compiled)
        assert list(signature.parameters) == stubbed, f"{name}: stub {stubbed}"
