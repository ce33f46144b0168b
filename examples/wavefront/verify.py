"""Checks a result of run.py --out against an independent NumPy Smith-Waterman:

    python examples/wavefront/verify.py result.json

Regenerates the two sequences from the file's length and seed and checks that they are the
file's, then recomputes the table row by row (no blocks, no C): every frame's score, last row and
last column, and the whole table when the file has it, must equal the reference exactly. Exits 0
when they all do, 1 naming the first difference otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import sequences


def rows(a: str, b: str, match: int, mismatch: int, gap: int) -> Iterator[np.ndarray]:
    """The table's rows H[0], H[1], ..., H[n]. Within a row, H[i][j] = max over k <= j of
    T[k] - gap (j - k), where T[k] = max(0, diagonal, up) is known from the row above: a running
    maximum of T[k] + gap k, minus gap j."""
    letters = np.frombuffer(b.encode("ascii"), dtype=np.uint8)
    shift = gap * np.arange(len(b) + 1, dtype=np.int64)
    row = np.zeros(len(b) + 1, dtype=np.int64)
    yield row
    for letter in a.encode("ascii"):
        scores = np.where(letters == letter, match, mismatch)
        best = np.zeros(len(b) + 1, dtype=np.int64)
        best[1:] = np.maximum(np.maximum(row[:-1] + scores, row[1:] - gap), 0)
        row = np.maximum.accumulate(best + shift) - shift
        yield row


def reference(document: dict[str, Any]) -> dict[str, Any]:
    """Score, last row, last column and table of the file's sequences and scores."""
    p = document["params"]
    table = np.stack(list(rows(document["a"], document["b"], p["match"], p["mismatch"], p["gap"])))
    return {
        "score": int(table.max()),
        "last_row": table[-1],
        "last_col": table[:, -1],
        "table": table.ravel(),
    }


def first_difference(name: str, got: Any, want: np.ndarray) -> str | None:
    got = np.asarray(got, dtype=np.int64)
    if got.shape != want.shape:
        return f"{name} has {got.size} cells, the reference {want.size}"
    wrong = np.flatnonzero(got != want)
    if wrong.size:
        k = int(wrong[0])
        return f"{name}[{k}] is {int(got[k])}, the reference {int(want[k])} ({wrong.size} differ)"
    return None


def check(document: dict[str, Any]) -> list[str]:
    """What is wrong with the file, or nothing."""
    p = document["params"]
    if (document["a"], document["b"]) != sequences.generate(p["length"], p["length_b"], p["seed"]):
        return [
            f"the sequences are not those of length {p['length']}, {p['length_b']}, seed {p['seed']}"
        ]
    want = reference(document)
    if not document["frames"]:
        return ["the file has no frames"]
    problems = []
    for frame in document["frames"]:
        where = f"frame {frame['frame']}"
        if frame["score"] != want["score"]:
            problems.append(f"{where}: score {frame['score']}, the reference {want['score']}")
        for name in ("last_row", "last_col", "table"):
            if name in frame:
                problem = first_difference(name, frame[name], want[name])
                problems += [f"{where}: {problem}"] if problem else []
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("result", type=Path, help="the JSON file of run.py --out")
    args = parser.parse_args(argv)
    try:
        document = json.loads(args.result.read_text(encoding="utf-8"))
        problems = check(document)
    except OSError as error:
        sys.exit(f"verify.py: cannot read {args.result}: {error.strerror}")
    except (ValueError, KeyError, TypeError) as error:
        sys.exit(f"verify.py: {args.result} is not a result of run.py --out ({error!r})")
    if problems:
        print(f"verify.py: {args.result}: WRONG", *problems, sep="\n  ", file=sys.stderr)
        return 1
    frames = document["frames"]
    print(f"{args.result}: score {frames[-1]['score']} correct in all {len(frames)} frame(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
