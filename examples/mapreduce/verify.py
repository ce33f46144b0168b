"""Checks a result of run.py --out against a count made by Python's collections.Counter:

    python examples/mapreduce/verify.py counts.json

Regenerates the corpus from the file's parameters (corpus.py), counts its words with
`Counter(text.split())`, and checks that the file's table equals it exactly (every word, every
count, no word missing or extra) and that every frame's digest is the SHA-256 of that count
written as collect writes it ("word\\tcount\\n" in byte order of the words). Exits 0 when all
agree, 1 naming the first difference otherwise.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import corpus


def differences(got: dict[str, int], want: Counter[str]) -> list[str]:
    """The first few words whose counts differ, described."""
    problems = []
    for word in sorted(set(got) | set(want)):
        if got.get(word) != want.get(word):
            problems.append(f"{word!r}: counted {got.get(word, 0)}, Counter {want.get(word, 0)}")
            if len(problems) == 5:
                break
    return problems


def check(document: dict[str, Any]) -> list[str]:
    """What is wrong with the file, or nothing."""
    p = document["params"]
    text = corpus.generate(p["words"], p["vocabulary"], p["exponent"], p["seed"])
    want = Counter(text.split())
    problems = differences(document["counts"], want)
    if sum(want.values()) != p["words"]:
        problems.append(f"the corpus has {sum(want.values())} words, not {p['words']}")
    lines = "".join(f"{word}\t{count}\n" for word, count in sorted(want.items()))
    digest = hashlib.sha256(lines.encode("ascii")).hexdigest()
    if not document["frames"]:
        problems.append("the file has no frames")
    for frame in document["frames"]:
        if frame["sha256"] != digest:
            problems.append(
                f"frame {frame['frame']}: its counts differ from Counter's "
                f"({frame['words']} words, {frame['distinct']} distinct; "
                f"Counter {sum(want.values())}, {len(want)})"
            )
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
    counts = document["counts"]
    print(
        f"{args.result}: {len(counts)} words, {sum(counts.values())} occurrences, "
        f"equal to Counter's in all {len(document['frames'])} frame(s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
