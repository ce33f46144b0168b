"""Verifier-gated tuning: strategies search the knob space of a graph, and nothing that changes
what the graph computes is ever accepted.

    import tomii

    result = tomii.tune(graph, strategy="bayes", budget=30, frames=100)
    print(result.valid_trials, result.best and result.best["changed"])
    result.to_csv("trials.csv")

The candidates (`space`), the verifier (`verifier`), the strategies (`strategies`), the external
agent and its protocol (`agent`, README.md beside this file), the driver (`driver`), the
four-arm comparison (`compare`), `tomii tune CONFIG` (`config`) and the figures (`plot`). Importing
this package imports neither optuna, matplotlib nor the experiments: each is imported when used.
"""

from __future__ import annotations

from .agent import PROTOCOL, PROTOCOL_VERSION, Agent, AgentError
from .driver import COLUMNS, Objective, TuneResult, tune
from .space import Candidate, Dimension, TuneSpace, build_space, scheduler_catalog
from .strategies import STRATEGIES, Bayesian, Grid, RandomSearch, Strategy, TrialRecord
from .verifier import Verdict, Verifier, checksum_twin, domain_problem, structure_problems

__all__ = [
    "COLUMNS",
    "PROTOCOL",
    "PROTOCOL_VERSION",
    "STRATEGIES",
    "Agent",
    "AgentError",
    "Bayesian",
    "Candidate",
    "Dimension",
    "Grid",
    "Objective",
    "RandomSearch",
    "Strategy",
    "TrialRecord",
    "TuneResult",
    "TuneSpace",
    "Verdict",
    "Verifier",
    "build_space",
    "checksum_twin",
    "domain_problem",
    "scheduler_catalog",
    "structure_problems",
    "tune",
]
