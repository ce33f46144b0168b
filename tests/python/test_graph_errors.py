"""One exception family: a bad graph raises `tomii.GraphError` (a TomiiError and a ValueError)
whether the builder or the runtime's parser finds it, and the binding raises the very classes of
`tomii.errors`."""

from __future__ import annotations

import json
import pickle
from collections.abc import Callable
from typing import Any

import pytest
from reference import SYNTHETIC

import tomii as tm
import tomii.errors
from tomii import _tomii

FAMILY = (
    "TomiiError",
    "GraphError",
    "PluginError",
    "KernelError",
    "SchedulerFault",
    "ConfigError",
    "HangError",
    "NetworkIdleError",
    "SessionBusy",
    "SessionClosed",
)


@pytest.mark.parametrize("name", FAMILY)
def test_each_exception_is_defined_once_and_shown_by_its_public_name(name: str) -> None:
    error = getattr(tomii.errors, name)
    assert getattr(tm, name) is error
    assert not hasattr(_tomii, name)  # the compiled module raises these; it defines none
    assert issubclass(error, tm.TomiiError)
    assert error.__module__ == "tomii"
    assert error.__doc__
    raised = pickle.loads(pickle.dumps(error("what went wrong")))
    assert type(raised) is error and str(raised) == "what went wrong"


def test_a_graph_error_is_a_tomii_error_and_a_value_error() -> None:
    assert issubclass(tm.GraphError, tm.TomiiError)
    assert issubclass(tm.GraphError, ValueError)
    for other in FAMILY:
        if other not in ("TomiiError", "GraphError"):
            assert not issubclass(getattr(tm, other), ValueError), other


def _any(value: object) -> Any:
    """`value`, typed as anything: the wrong types below are what the tests give on purpose."""
    return value


def _graph() -> tm.Graph:
    g = tm.Graph()
    g.var("n", 4)
    g.node("a", func="noop", factor=2)
    return g


BAD_GRAPHS: list[tuple[str, Callable[[tm.Graph], Any], str]] = [
    ("duplicate node", lambda g: g.node("a", func="noop"), "duplicate node name 'a'"),
    ("duplicate var", lambda g: g.var("n", 5), "duplicate var name 'n'"),
    ("input over a node", lambda g: g.input("a"), "input 'a': a node or input has that name"),
    ("empty name", lambda g: g.node("", func="noop"), "a node name must be a non-empty string"),
    ("graph name", lambda g: tm.Graph(name=_any(3)), "name must be a str, got int"),
    ("empty func", lambda g: g.node("b", func=""), "node 'b': func must be a non-empty string"),
    ("zero factor", lambda g: g.node("b", func="noop", factor=0), "factor must be positive"),
    ("str factor", lambda g: g.node("b", func="noop", factor=_any("2")), "factor must be an int"),
    ("loop factor", lambda g: g.node("b", func="noop", loop=tm.Loop("l", 0)), "loop factor must"),
    ("group size", lambda g: g.node("b", func="noop", group_size=0), "node 'b': group_size"),
    ("priority", lambda g: g.node("b", func="noop", priority="urgent"), "node 'b': priority"),
    ("i32", lambda g: g.node("b", func="noop", priority=2**31), "does not fit in an i32"),
    ("workers", lambda g: g.node("b", func="noop", use_workers="3-1"), "is not a worker range"),
    ("workers type", lambda g: g.node("b", func="noop", use_workers=_any(1.5)), "'b': use_work"),
    ("loop args", lambda g: g.node("b", func="noop", loop_args=[1]), "loop_args needs a loop"),
    ("node as arg", lambda g: g.node("b", func="noop", args=[tm.Node("a")]), r"a\.out\(\)"),
    ("dep of a str", lambda g: g.node("b", func="noop", args=[("dep", "a")]), r"\('dep', x\)"),
    ("bad literal", lambda g: g.node("b", func="noop", args=[object()]), "cannot infer a Rust"),
    ("negative", lambda g: g.node("b", func="noop", args=[-1]), "wrap it as isize"),
    ("var literal", lambda g: g.var("v", tm.Var("n")), "var 'v': the value must be a literal"),
    ("var both", lambda g: g.var("v", 1, func="f"), "var 'v': give exactly one of value or func"),
    ("var on a node", lambda g: g.var("v", func="f", args=[tm.Node("a").out()]), "var 'v': a comp"),
    ("end", lambda g: g.node("b", func="f", args=[tm.Node("a").out(0, _any(1.5))]), "end must"),
    ("group_by", lambda g: tm.Node("a").out(group_by=0), "group_by must be positive"),
    ("group_by type", lambda g: tm.Node("a").out(group_by=_any("2")), "group_by must be an int"),
    ("wrap type", lambda g: tm.Node("a").out(1, wrap=_any("yes")), "wrap must be a bool"),
    ("wrap group", lambda g: tm.Node("a").out(group_by=2, wrap=True), "wrap does not apply"),
    ("no offsets", lambda g: tm.Node("a").out([]), "a list of offsets cannot be empty"),
    ("offset type", lambda g: tm.Node("a").out([1, _any("2")]), "a list of offsets must hold ints"),
    ("network key", lambda g: g.network(port=1), "network\\(\\): unknown key"),
    ("network", lambda g: g.network(start_port=1, packet_length=8), "frame_packets is required"),
]


@pytest.mark.parametrize(("case", "define", "message"), BAD_GRAPHS, ids=[c[0] for c in BAD_GRAPHS])
def test_the_builder_raises_a_graph_error_naming_what_is_wrong(
    case: str, define: Callable[[tm.Graph], Any], message: str
) -> None:
    with pytest.raises(tm.GraphError, match=message) as raised:
        define(_graph())
    assert isinstance(raised.value, tm.TomiiError)
    assert isinstance(raised.value, ValueError)


BROKEN = {"nodes": [{"name": "a", "function": "noop", "factor": 0}]}


@pytest.mark.parametrize(
    "load",
    [
        lambda: tm.validate(BROKEN),
        lambda: tm.validate(json.dumps(BROKEN)),
        lambda: tm.Graph.from_json(BROKEN),
        lambda: tm.run_graph(BROKEN, dylibs=[SYNTHETIC]),
        lambda: _tomii.convert_json(json.dumps(BROKEN), "broken.json", None),
    ],
    ids=["validate", "validate-text", "from_json", "run_graph", "binding"],
)
def test_the_runtime_parser_raises_the_same_graph_error(load: Callable[[], Any]) -> None:
    with pytest.raises(tm.GraphError, match='node "a": factor is 0') as raised:
        load()
    assert type(raised.value) is tomii.errors.GraphError
    assert isinstance(raised.value, ValueError)


def test_other_errors_of_the_binding_are_the_family_s_classes() -> None:
    with pytest.raises(tm.ConfigError, match='dialect "bogus"') as raised:
        _tomii.schema_json("bogus")
    assert type(raised.value) is tomii.errors.ConfigError
    with pytest.raises(tm.PluginError) as failed:
        tm.run_graph({"nodes": [{"name": "a", "function": "noop"}]}, dylibs=["/nonexistent.so"])
    assert type(failed.value) is tomii.errors.PluginError
