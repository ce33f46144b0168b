"""Checks a result of run.py --out against the readings regenerated in NumPy:

    python examples/stream-analytics/verify.py result.json

Regenerates every frame's readings from the file's parameters (readings.py) and checks, frame by
frame: each sensor's mean, variance, min and max; each group's statistics over its G windows and
its counts of checked and anomalous sensors; each sensor's status (detect skipped, because the
window's maximum is not above the threshold, or normal, or anomalous); the frame's statistics and
counts; and the anomaly list exactly (the same sensors at the same reading, with the same z). Statistics and z agree to
a relative 1e-9 (absolute 1e-12 near zero). Then checks the post-node's totals against the frames
and the number of detect instances the runtime skipped against the condition. Exits 0 when all
agree, 1 naming the first differences otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import readings

RTOL, ATOL = 1e-9, 1e-12


def close(got: Any, want: Any) -> bool:
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    return got.shape == want.shape and bool(np.allclose(got, want, rtol=RTOL, atol=ATOL))


def summary(x: readings.F64) -> list[float]:
    return [float(x.mean()), float(x.var()), float(x.min()), float(x.max())]


def check_frame(p: readings.Params, frame: dict[str, Any]) -> tuple[list[str], int, int, int]:
    """What is wrong with one frame; and its checked, anomalous and spiked sensor counts."""
    number = frame["frame"]
    x, spiked = readings.frame(p, number)
    problems = []
    want = readings.stats(x)
    got = np.asarray(frame["sensors"], dtype=np.float64)
    if got.shape != want.shape:
        problems.append(f"frame {number}: {len(frame['sensors'])} sensors, not {p.sensors}")
    else:
        for s in np.flatnonzero(~np.isclose(got, want, rtol=RTOL, atol=ATOL).all(axis=1))[:3]:
            problems.append(f"frame {number} sensor {s}: stats {got[s]}, NumPy {want[s]}")
    checked = want[:, 3] > p.threshold
    z, at = readings.spike_z(x)
    anomalous = checked & (z > p.z_limit)
    status = np.where(anomalous, 1, np.where(checked, 0, -1)).tolist()
    if frame["status"] != status:
        got_status = frame["status"]
        wrong = [s for s in range(p.sensors) if s >= len(got_status) or got_status[s] != status[s]]
        problems.append(
            f"frame {number}: detect's status (-1 skipped, 0 normal, 1 anomalous) differs at "
            f"sensors {wrong[:5]}: NumPy says {[status[s] for s in wrong[:5]]}"
        )
    expected = {(int(s), int(at[s])): float(z[s]) for s in np.flatnonzero(anomalous)}
    listed = {(int(s), int(i)): float(v) for s, i, v in frame["anomalies"]}
    if set(listed) != set(expected):
        extra = sorted(set(listed) - set(expected))
        missing = sorted(set(expected) - set(listed))
        problems.append(
            f"frame {number}: anomalies (sensor, reading) listed but not found {extra}, "
            f"found but not listed {missing}"
        )
    elif not close([listed[k] for k in expected], list(expected.values())):
        problems.append(f"frame {number}: the anomalies' z differ from NumPy's")
    groups = p.sensors // p.group
    if len(frame["groups"]) != groups:
        problems.append(f"frame {number}: {len(frame['groups'])} groups, not {groups}")
    for b, row in enumerate(frame["groups"][:groups]):
        members = slice(b * p.group, (b + 1) * p.group)
        counts = [int(checked[members].sum()), int(anomalous[members].sum())]
        if not close(row[:4], summary(x[members])) or row[4:] != counts:
            problems.append(
                f"frame {number} group {b}: {row}, NumPy {summary(x[members]) + counts}"
            )
    counts = [int(checked.sum()), int(anomalous.sum())]
    if not close(frame["summary"][:4], summary(x)) or frame["summary"][4:] != counts:
        problems.append(f"frame {number}: summary {frame['summary']}, NumPy {summary(x) + counts}")
    return problems, counts[0], counts[1], int(spiked.sum())


def check(document: dict[str, Any]) -> tuple[list[str], str]:
    """What is wrong with the file, or nothing; and a line describing it."""
    p = readings.Params(**document["params"])
    frames = document["frames"]
    problems = []
    numbers = [frame["frame"] for frame in frames]
    if numbers != list(range(len(frames))) or not frames:
        problems.append(f"the frames are numbered {numbers}, not 0, 1, ..., in order")
    checked = anomalies = spiked = 0
    for frame in frames:
        wrong, c, a, s = check_frame(p, frame)
        problems += wrong
        checked, anomalies, spiked = checked + c, anomalies + a, spiked + s
    want = {"frames": len(frames), "checked": checked, "anomalies": anomalies}
    if document["totals"] != want:
        problems.append(f"totals {document['totals']}, from the frames {want}")
    skipped = p.sensors * len(frames) - checked
    if document["detect_skipped"] != skipped:
        problems.append(f"detect skipped {document['detect_skipped']} times, not {skipped}")
    line = (
        f"{len(frames)} frame(s) of {p.sensors} sensors x {p.window}: detect ran {checked} "
        f"times, skipped {skipped}; {anomalies} anomalies ({spiked} spikes injected)"
    )
    return problems, line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("result", type=Path, help="the JSON file of run.py --out")
    args = parser.parse_args(argv)
    try:
        document = json.loads(args.result.read_text(encoding="utf-8"))
        problems, line = check(document)
    except OSError as error:
        sys.exit(f"verify.py: cannot read {args.result}: {error.strerror}")
    except (ValueError, KeyError, TypeError, IndexError) as error:
        sys.exit(f"verify.py: {args.result} is not a result of run.py --out ({error!r})")
    if problems:
        print(f"verify.py: {args.result}: WRONG", *problems[:10], sep="\n  ", file=sys.stderr)
        return 1
    print(f"{args.result}: {line}; all equal to NumPy's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
