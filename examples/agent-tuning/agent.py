"""A scripted stand-in for an LLM agent, speaking the agent protocol of `tomii tune`
(python/tomii/tune/README.md): it reads the space and the history as JSON lines on stdin and
prints the next candidate as one JSON line on stdout.

It follows the search hints the way a careful reader would: measure the baseline, try every
scheduler at the machine's worker count, then walk from the best valid trial one knob at a time (from the next best once
the best has no untried neighbour)
(slots by powers of two up to 4 × workers, pop_batch, inline_continuation, group sizes, the
scheduler's options). It never pins workers (use_workers: the hint says ranges must fit the run's
workers, and a wrong one is rejected) and never edits the graph's structure. Stateless: every
proposal is worked out again from the history it is sent.
"""

from __future__ import annotations

import json
import sys
from typing import Any

VERSION = 1


def read() -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    space: dict[str, Any] = {}
    trials: list[dict[str, Any]] = []
    ask: dict[str, Any] = {}
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        if message["version"] != VERSION:
            sys.exit(f"agent: protocol version {message['version']}; I speak {VERSION}")
        if message["type"] == "space":
            space = message
        elif message["type"] == "trial":
            trials.append(message)
        elif message["type"] == "ask":
            ask = message
    return space, trials, ask


def dimensions(space: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {d["name"]: d for d in space["dimensions"]}


def ranked(space: dict[str, Any], trials: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The knobs of the valid trials, best first, then the baseline."""
    sign = 1 if space["objective"]["direction"] == "max" else -1
    valid = [t for t in trials if t["valid"] and t["value"] is not None]
    valid.sort(key=lambda t: -sign * t["value"])
    return [dict(t["knobs"]) for t in valid] + [dict(space["baseline"])]


def moves(space: dict[str, Any], start: dict[str, Any]) -> list[dict[str, Any]]:
    """Candidates one step from `start`, in the order the hints suggest trying them."""
    dims = dimensions(space)
    found: list[dict[str, Any]] = []

    def step(**changes: Any) -> None:
        found.append({**start, **changes})

    workers = dims.get("workers")
    top = max(workers["values"]) if workers else start.get("workers", 1)
    if "scheduler" in dims:
        for name in dims["scheduler"]["values"]:
            found.append(options_of(dims, {**start, "scheduler": name, "workers": top}, name))
    if "slots" in dims:
        current = int(start.get("slots", 1))
        for slots in (current * 2, current // 2):
            if slots in dims["slots"]["values"] and slots <= 4 * int(start.get("workers", top)):
                step(slots=slots)
    for name, flip in (("pop_batch", 2), ("inline_continuation", None)):
        if name in dims:
            value = start.get(name, dims[name]["default"])
            changed = (not value) if flip is None else value * flip
            if changed in dims[name]["values"]:
                step(**{name: changed})
    for name, dim in dims.items():
        if name.endswith(".group_size"):
            size = int(start.get(name, dim["default"])) * 2
            if size in dim["values"]:
                step(**{name: size})
    for name, dim in dims.items():
        when = dim.get("when") or {}
        if when.get("scheduler") == start.get("scheduler") and dim["domain"]["kind"] == "bool":
            step(**{name: not start.get(name, dim["default"])})
    return found


def options_of(dims: dict[str, Any], knobs: dict[str, Any], scheduler: str) -> dict[str, Any]:
    """`knobs` without the options of other schedulers, with this one's at their defaults."""
    kept = {k: v for k, v in knobs.items() if not k.startswith("sched_opts.")}
    for name, dim in dims.items():
        if (dim.get("when") or {}).get("scheduler") == scheduler:
            kept[name] = dim["default"]
    return kept


def main() -> None:
    space, trials, _ask = read()
    tried = {json.dumps(t["knobs"], sort_keys=True) for t in trials}
    if not trials:
        print(json.dumps({"version": VERSION, "knobs": {}, "note": "the baseline first"}))
        return
    for rank, start in enumerate(ranked(space, trials)):
        for candidate in moves(space, start):
            if json.dumps(candidate, sort_keys=True) not in tried:
                note = f"one step from the valid trial ranked {rank + 1}"
                print(json.dumps({"version": VERSION, "knobs": candidate, "note": note}))
                return
    print(json.dumps({"version": VERSION, "stop": True, "note": "no untried neighbour"}))


if __name__ == "__main__":
    main()
