"""Property-based checks of runs: `check(scheduler)` (`suite`) runs the property suite on any
scheduler and returns a report card; built from hypothesis strategies for valid graphs and run
knobs (`strategies`), a pure-Python reference executor of the synthetic kernels (`reference`) and
the invariants of a run's trace (`invariants`).

Needs hypothesis (`pip install tomii[check]`); `import tomii` never imports this package.
"""

from __future__ import annotations

from .invariants import Violation, check_trace
from .reference import Expected, KernelFailure, ModelError, ReferenceModel, expected_run
from .strategies import (
    FEATURES,
    SCHEDULER_OPTIONS,
    SCHEDULERS,
    Knobs,
    graphs,
    knobs,
    literals,
    runs,
)
from .suite import PROFILES, PropertyResult, ReportCard, check

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
    "Violation",
    "check",
    "check_trace",
    "expected_run",
    "graphs",
    "knobs",
    "literals",
    "runs",
]
