"""Property-based checks of runs: `check(scheduler)` (`suite`) runs the property suite on any
scheduler and returns a report card; built from hypothesis strategies for valid graphs and run
knobs (`strategies`), a pure-Python reference executor of the synthetic kernels (`reference`) and
the invariants of a run's trace (`invariants`). `same_decisions(a, b, graphs=...)` (`ports`)
compares two schedulers decision by decision in simulation (a Python prototype and its port).

`check`, the strategies and the suite use hypothesis (a dependency of tomii), imported only when
one of them is first used: the reference model and the invariants do not need it, and the
experiments, which check every trial with them, do not pay for its import. `import tomii` never
imports this package.
"""

from __future__ import annotations

import importlib
from typing import Any

from .invariants import Violation, check_trace
from .ports import SameDecisions, same_decisions
from .reference import Expected, KernelFailure, ModelError, ReferenceModel, expected_run

#: The names that need hypothesis, and the module of each.
_WITH_HYPOTHESIS = {
    "FEATURES": "strategies",
    "SCHEDULERS": "strategies",
    "SCHEDULER_OPTIONS": "strategies",
    "Knobs": "strategies",
    "graphs": "strategies",
    "knobs": "strategies",
    "literals": "strategies",
    "runs": "strategies",
    "PROFILES": "suite",
    "PropertyResult": "suite",
    "ReportCard": "suite",
    "check": "suite",
}

__all__ = [
    "FEATURES",
    "PROFILES",
    "SCHEDULERS",
    "SCHEDULER_OPTIONS",
    "Expected",
    "KernelFailure",
    "Knobs",
    "ModelError",
    "PropertyResult",
    "ReferenceModel",
    "ReportCard",
    "SameDecisions",
    "Violation",
    "check",
    "check_trace",
    "expected_run",
    "graphs",
    "knobs",
    "literals",
    "runs",
    "same_decisions",
]


def __getattr__(name: str) -> Any:
    module = _WITH_HYPOTHESIS.get(name)
    if module is None:
        raise AttributeError(f"module 'tomii.check' has no attribute {name!r}")
    try:
        return getattr(importlib.import_module(f".{module}", __name__), name)
    except ImportError as error:
        if error.name != "hypothesis":
            raise
        raise ImportError(
            f"tomii.check.{name} needs hypothesis, which tomii depends on but this environment "
            "lacks: pip install hypothesis (or reinstall tomii)"
        ) from None
