"""Run options on their way to the runtime. `check_run_options` holds them to the knob catalog
(`tomii knobs --json`), so that a value of the wrong type or outside its domain is refused with a
message naming the option, its range and what it is, instead of the binding's bare "out of range
integral type conversion" (the runtime checks the same domains from the same catalog).
`runtime_options` turns a front end's keywords into the `[(knob, value), ...]` list the binding
takes, for the knobs the catalog says the entry point takes: no option is named here.
"""

from __future__ import annotations

import functools
import json
import operator
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ._tomii import knobs_json, knobs_taken
from .errors import ConfigError

__all__ = ["PYTHON_NAMES", "catalog_knobs", "check_run_options", "runtime_options"]

#: Python's keyword for each list knob: the catalog's name in the plural.
PYTHON_NAMES = {"dylib": "dylibs", "sched_opt": "sched_opts"}

#: The domain kinds checked here; paths, schedulers and their options are checked where they are
#: opened and loaded.
_CHECKED_KINDS = ("int", "bool", "choice")


@functools.cache
def catalog_knobs() -> tuple[dict[str, Any], ...]:
    """The catalog's knobs (`tomii knobs --json`), read once; callers must not change them."""
    return tuple(json.loads(knobs_json())["knobs"])


@functools.cache
def _checked_knobs() -> dict[str, dict[str, Any]]:
    """The catalog's knobs whose value can be checked alone, by name."""
    return {
        knob["name"]: knob for knob in catalog_knobs() if knob["domain"]["kind"] in _CHECKED_KINDS
    }


def check_run_options(values: Mapping[str, Any]) -> None:
    """Raises ConfigError for the first of `values` (option name to value) that is a catalog knob
    with a value of the wrong type or outside its domain; names that are not such knobs are left
    to their own checks."""
    knobs = _checked_knobs()
    for name, value in values.items():
        knob = knobs.get(name)
        # None is a knob left unset, where its default is unset too (record_stream).
        if knob is not None and not (value is None and knob["default"] is None):
            _check(knob, value)


def _check(knob: dict[str, Any], value: Any) -> None:
    name, domain = knob["name"], knob["domain"]
    what = f"{name}: {knob['description']}"
    if domain["kind"] == "bool":
        if not isinstance(value, (bool, np.bool_)):
            raise ConfigError(f"{name} is {value!r}: it must be True or False. {what}")
        return
    if domain["kind"] == "choice":
        if value not in domain["values"]:
            choices = ", ".join(map(repr, domain["values"]))
            raise ConfigError(f"{name} is {value!r}: it must be one of {choices}. {what}")
        return
    lo, hi = domain["min"], domain["max"]
    number = None if isinstance(value, bool) else _integer(value)
    if number is None:
        raise ConfigError(f"{name} is {value!r}: it must be an int. {what}")
    if not lo <= number <= hi:
        span = f"at least {lo}" if hi == 2**64 - 1 else f"between {lo} and {hi}"
        raise ConfigError(f"{name} is {number}: it must be {span}. {what}")


def _integer(value: Any) -> int | None:
    """`value` as an int if it is one (numpy's integers too, through `__index__`), else None."""
    try:
        return operator.index(value)
    except TypeError:
        return None


@functools.cache
def _knob_types() -> dict[str, str]:
    """Each catalog knob's type, by name; callers must not change it."""
    return {knob["name"]: knob["type"] for knob in catalog_knobs()}


@functools.cache
def _taken_by(entry: str) -> tuple[str, ...]:
    """The names of the knobs `entry` takes, in the catalog's order."""
    return tuple(name for name, _default in knobs_taken(entry))


def runtime_options(entry: str, values: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The options of `entry` ("run", "session" or "simulate") as the binding takes them: for each
    knob the entry takes, `(name, value)` from `values` (keyed by Python's keywords). An option
    that is absent, None or False where a path is expected is left out (unset); `True` for the
    scheduler record asks for its default place; NumPy numbers become Python's."""
    types = _knob_types()
    options: list[tuple[str, Any]] = []
    for name in _taken_by(entry):
        value = values.get(PYTHON_NAMES.get(name, name))
        if value is None or (value is False and types[name] == "path"):
            continue
        if name == "sched_opt":
            value = sorted(dict(value).items())
        elif name == "dylib":
            value = [str(path) for path in value]
        elif isinstance(value, (bool, np.bool_)):
            value = bool(value)
        elif (number := _integer(value)) is not None:
            value = number
        elif isinstance(value, Path):
            value = str(value)
        options.append((name, value))
    return options
