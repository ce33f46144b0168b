"""Run options checked against the knob catalog (`tomii knobs --json`) before they reach the
runtime, so that a value of the wrong type or outside its domain is refused with a message naming
the option, its range and what it is, instead of the binding's bare "out of range integral type
conversion". The runtime checks the same ranges from the same catalog (`RunConfig::check_ranges`);
this is the Python side's copy of the check, for the values the binding cannot even convert.
"""

from __future__ import annotations

import functools
import json
import operator
from collections.abc import Mapping
from typing import Any

import numpy as np

from ._tomii import knobs_json
from .errors import ConfigError

__all__ = ["catalog_knobs", "check_run_options"]

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
        if knob is not None:
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
