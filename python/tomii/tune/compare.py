"""The comparison of strategies: every strategy ("arm") tunes every graph with the same budget,
seed, objective, space and verifier; one table of every trial, one summary row per graph and arm,
one convergence figure. `tomii tune CONFIG` (config.py) runs it from a TOML file.

It only calls `tune` and summarises its rows: the verifier and the measurements are the driver's.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union

from ..knobs import GraphInput
from .driver import COLUMNS, _write_json, tune, write_rows

__all__ = ["SUMMARY_COLUMNS", "Arm", "Comparison", "compare"]

#: The columns of a summary row: one per graph and arm.
SUMMARY_COLUMNS = ["graph", "strategy", "best", "best_trial", "valid", "trials", "best_changed"]


@dataclass(frozen=True)
class Arm:
    """One arm: a strategy name ("random", "grid", "bayes", "agent"), its label, and for the
    agent its command line and time limit."""

    strategy: str
    label: str = ""
    agent: str | Sequence[str] | None = None
    timeout_s: float = 60.0


ArmSpec = Union[str, Arm]


@dataclass
class Comparison:
    """Every trial of every arm on every graph (`rows`, keys `COLUMNS`), the summary (`table`,
    keys `SUMMARY_COLUMNS`) and the environment of the first run."""

    rows: list[dict[str, Any]]
    table: list[dict[str, Any]]
    environment: dict[str, Any]
    #: Ctrl-C stopped it: the arm it cut holds its finished trials, and the arms after it none.
    interrupted: bool = False

    def text(self) -> str:
        """The summary as a Markdown table."""
        lines = ["| " + " | ".join(SUMMARY_COLUMNS) + " |", "|" + "---|" * len(SUMMARY_COLUMNS)]
        for row in self.table:
            cells = [_cell(row[c]) for c in SUMMARY_COLUMNS]
            lines.append("| " + " | ".join(cells) + " |")
        return "\n".join(lines)

    def without_valid_trial(self) -> list[tuple[str, str, str, bool]]:
        """The arms that found no valid trial on a graph: `(graph, strategy, the commonest
        reason, whether the strategy itself failed every time)`. The last is true when no trial
        got as far as the verifier's checks (each was an unreadable or missing proposal, such as
        an agent that did not answer): a mistake in the arm, not a finding."""
        found = []
        for summary in self.table:
            if summary["valid"]:
                continue
            rows = [
                row
                for row in self.rows
                if row["graph"] == summary["graph"] and row["strategy"] == summary["strategy"]
            ]
            reasons = Counter(str(row["reason"]) for row in rows)
            commonest = reasons.most_common(1)[0][0] if reasons else "no trial ran"
            broken = bool(rows) and all(row["invariant"] == "proposal" for row in rows)
            found.append((summary["graph"], summary["strategy"], commonest, broken))
        return found

    def save(self, directory: str | Path, *, plot: bool = True) -> list[Path]:
        """trials.csv, summary.csv, summary.md, environment.json and convergence.png."""
        where = Path(directory)
        written = [write_rows(where / "trials.csv", self.rows, list(COLUMNS))]
        written.append(write_rows(where / "summary.csv", self.table, SUMMARY_COLUMNS))
        (where / "summary.md").write_text(self.text() + "\n", encoding="utf-8")
        written += [where / "summary.md", _write_json(where / "environment.json", self.environment)]
        if plot and self.rows:
            from .plot import convergence

            title = f"{self.rows[0]['objective']}: best valid so far, same budget and verifier"
            written.append(convergence(self.rows, where / "convergence.png", title=title))
        return written


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return "-" if not math.isfinite(value) else f"{value:.4g}"
    return str(value).replace("|", "\\|")


def _arm(spec: ArmSpec) -> Arm:
    if isinstance(spec, Arm):
        return spec
    if isinstance(spec, str):
        return Arm(spec)
    raise TypeError(f"compare: an arm is a strategy name or an Arm, got {spec!r}")


def _summary(
    graph: str, label: str, rows: Sequence[Mapping[str, Any]], direction: str
) -> dict[str, Any]:
    valid = [r for r in rows if r["valid"] and math.isfinite(r["value"])]
    sign = 1 if direction == "max" else -1
    top = max(valid, key=lambda r: sign * r["value"]) if valid else None
    return {
        "graph": graph,
        "strategy": label,
        "best": top["value"] if top else math.nan,
        "best_trial": top["trial"] + 1 if top else "-",
        "valid": len(valid),
        "trials": len(rows),
        "best_changed": top["changed"] if top else "",
    }


def compare(
    graphs: Sequence[GraphInput],
    arms: Sequence[ArmSpec] = ("random", "grid", "bayes"),
    *,
    budget: int = 20,
    out: str | Path | None = None,
    plot: bool = True,
    **options: Any,
) -> Comparison:
    """Tunes each graph with each arm (`tune(graph, strategy=..., budget=budget, **options)`);
    with `out`, saves the comparison there. Ctrl-C stops it after the trials that finished, which
    are kept and saved (`interrupted`)."""
    rows: list[dict[str, Any]] = []
    table: list[dict[str, Any]] = []
    environment: dict[str, Any] = {}
    interrupted = False
    for graph, spec in itertools.product(graphs, arms):
        arm = _arm(spec)
        label = arm.label or arm.strategy
        result = tune(
            graph, strategy=arm.strategy, agent=arm.agent, agent_timeout_s=arm.timeout_s,
            budget=budget, label=label, plot=False, **options,
        )  # fmt: skip
        environment = environment or result.environment
        rows += result.rows
        direction = result.environment["parameters"]["direction"]
        name = result.environment["parameters"]["graph"]
        table.append(_summary(name, label, result.rows, direction))
        if result.interrupted:
            interrupted = True
            break
    parameters = dict(environment.get("parameters") or {})
    parameters["strategy"] = list(dict.fromkeys(row["strategy"] for row in table))
    parameters["graph"] = list(dict.fromkeys(row["graph"] for row in table))
    comparison = Comparison(
        rows, table, {**environment, "parameters": parameters}, interrupted=interrupted
    )
    if out is not None:
        comparison.save(out, plot=plot)
    return comparison
