"""`tomii tune CONFIG`: a comparison of tuning strategies described by a TOML file, run, saved,
summarised and plotted. The keys follow `tomii sweep`'s (tomii/experiments/config.py):

    strategies = ["random", "grid", "bayes",
                  { agent = "{python} agent.py", label = "agent", timeout_s = 30 }]
    budget = 16          # trials per strategy and graph, invalid ones included
    seed = 0             # of every strategy and of the sweeps' trial order
    objective = "throughput"   # "p99", or a numeric column of a sweep row
    direction = "max"    # optional: the objective's own by default
    frames = 200         # per trial (held fixed: throughputs over other frame counts differ)
    repeats = 1          # measured runs per trial (the objective is their median)
    warmup = 1           # unrecorded runs before them
    verify_frames = 3    # frames of the verifier's run of the checksum twin
    trial_timeout_s = 120
    out = "results"      # relative to the config file; --out overrides it
    search = ["scheduler", "sched_opts.*", "workers", "slots", "*.priority"]  # default: all

    [values]             # narrow a searched knob to these values
    slots = [1, 2, 4, 8]

    [hold]               # hold a knob at one value (it is then not searched)
    inline_continuation = false

    [graphs]             # exactly as in `tomii sweep`: standard, cost, files, generate, seed
    [[graphs.generate]]
    generator = "fork_join"
    width = 8
    depth = 3
    cost = { fixed = 20 }

An agent's command line is split as a shell would; "{python}" stands for this Python, and an
argument naming a file beside the config file is made absolute. Every key is checked: an unknown
one is an error naming the file, the key and the valid keys.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import TomiiError

# A tuning file's graphs are a sweep file's, read the same way.
from ..experiments.config import _check_keys, _fail, _graphs, _overridden, _read_toml
from .compare import Arm, compare
from .strategies import STRATEGIES

__all__ = ["load_config", "main"]

_TOP = {"strategies", "budget", "seed", "objective", "direction", "frames", "repeats", "warmup"}
_TOP |= {"verify_frames", "trial_timeout_s", "out", "search", "values", "hold", "graphs"}
_ARM = {"strategy", "agent", "label", "timeout_s"}


def _command(path: Path, command: Any) -> list[str]:
    if isinstance(command, str):
        argv = shlex.split(command)
    elif isinstance(command, list) and all(isinstance(a, str) for a in command):
        argv = list(command)
    else:
        raise _fail(path, f"agent {command!r}: a command line, as a string or a list of strings")
    argv = [sys.executable if a == "{python}" else a for a in argv]
    return [str((path.parent / a).resolve()) if (path.parent / a).is_file() else a for a in argv]


def _arms(path: Path, specs: Any) -> list[Arm]:
    if not isinstance(specs, list) or not specs:
        raise _fail(path, "strategies must be a non-empty list of names or tables")
    arms = []
    for spec in specs:
        if isinstance(spec, str):
            if spec not in STRATEGIES:
                names = ", ".join(STRATEGIES)
                raise _fail(
                    path, f"unknown strategy {spec!r}; give one of {names} or {{agent = CMD}}"
                )
            arms.append(Arm(spec))
            continue
        if not isinstance(spec, dict):
            raise _fail(path, f"strategy {spec!r}: a name or a table {{agent, label, timeout_s}}")
        _check_keys(path, spec, _ARM, "a strategy")
        if "agent" in spec:
            arms.append(
                Arm("agent", str(spec.get("label", "agent")), _command(path, spec["agent"]),
                    float(spec.get("timeout_s", 60.0)))
            )  # fmt: skip
        elif spec.get("strategy") in STRATEGIES:
            arms.append(Arm(spec["strategy"], str(spec.get("label", ""))))
        else:
            raise _fail(path, f"strategy {spec}: give agent = CMD or strategy = a name")
    labels = [arm.label or arm.strategy for arm in arms]
    repeated = sorted({label for label in labels if labels.count(label) > 1})
    if repeated:
        raise _fail(path, f"two strategies are labelled {repeated[0]!r}: give them labels")
    return arms


def _knobs(path: Path, document: Mapping[str, Any]) -> dict[str, Any] | None:
    """The `knobs` selection of `tune`: search → None, values → a list, hold → the value."""
    if not any(key in document for key in ("search", "values", "hold")):
        return None
    search, values, hold = (document.get(k) for k in ("search", "values", "hold"))
    if search is not None and not (
        isinstance(search, list) and all(isinstance(s, str) for s in search)
    ):
        raise _fail(path, "search must be a list of knob names or glob patterns")
    for name, table in (("values", values), ("hold", hold)):
        if table is not None and not isinstance(table, dict):
            raise _fail(path, f"[{name}] must be a table of knob = value")
    knobs: dict[str, Any] = {name: None for name in search or ["*"]}
    for name, listed in (values or {}).items():
        if not isinstance(listed, list):
            raise _fail(path, f"[values] {name}: a list of values to search")
        knobs[name] = listed
    knobs.update(hold or {})
    return knobs


def load_config(path: str | Path) -> dict[str, Any]:
    """The arguments of `compare` (graphs, arms, and tune's options) a TOML file describes."""
    path = Path(path)
    document = _read_toml(path, "the tuning configuration")
    _check_keys(path, document, _TOP, "the file")
    options: dict[str, Any] = {
        key: document[key]
        for key in (
            "seed",
            "objective",
            "direction",
            "frames",
            "repeats",
            "warmup",
            "verify_frames",
        )
        if key in document
    }
    if "trial_timeout_s" in document:
        options["trial_timeout_s"] = float(document["trial_timeout_s"]) or None
    return {
        "graphs": _graphs(path, document.get("graphs")),
        "arms": _arms(path, document.get("strategies", ["random", "grid", "bayes"])),
        "budget": int(document.get("budget", 20)),
        "knobs": _knobs(path, document),
        "out": path.parent / document["out"] if "out" in document else None,
        **options,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """`tomii tune CONFIG [--out DIR] [--budget N] [--frames N] [--no-plots] [--quiet]`."""
    parser = argparse.ArgumentParser(
        prog="tomii tune", description="Compare tuning strategies as a TOML file describes."
    )
    parser.add_argument("config", type=Path, help="the comparison's TOML file")
    parser.add_argument(
        "--out", type=Path, help="where results and figures go (default: the file's out)"
    )
    parser.add_argument("--budget", type=int, help="override the file's budget")
    parser.add_argument("--frames", type=int, help="override the file's frames")
    parser.add_argument("--no-plots", action="store_true", help="write the tables only")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    args = parser.parse_args(argv)
    try:
        config = load_config(args.config)
        out = _overridden(config, args, ("budget", "frames"))
        result = compare(out=out, plot=not args.no_plots, progress=not args.quiet, **config)
    except (TomiiError, ValueError, TypeError, OSError) as error:  # AgentError included
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(result.text())
    print(f"\n{len(result.rows)} trials; wrote {out}/ (trials.csv, summary.md, convergence.png)")
    failed = result.without_valid_trial()
    for graph, strategy, reason, _ in failed:
        print(f"warning: {strategy} found no valid trial on {graph}: {reason}", file=sys.stderr)
    if result.interrupted:
        print("interrupted: the tables hold the trials that finished", file=sys.stderr)
        return 130
    if any(broken for *_, broken in failed):
        print("error: a strategy never made a proposal the verifier could read", file=sys.stderr)
        return 1
    return 0
