"""Checks a run of the MIMO uplink: compares the bits each scheduler's run decoded (rx-NAME.npz)
with the bits the sender transmitted (tx.npz), frame by frame, by frame id. Exit 0 when every
frame was decoded and the bit error rate is at most --max-ber (default 0: not one bit wrong);
exit 1 naming the file, the frames and the error counts otherwise.

    python examples/mimo/verify.py out/mimo
    python examples/mimo/verify.py out/mimo --max-ber 1e-3 --allow-missing
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray


def load(path: Path) -> tuple[NDArray[np.int64], NDArray[np.uint8]]:
    """The frame ids and packed bits of an .npz written by run.py."""
    try:
        with np.load(path) as data:
            frames, bits = data["frames"], data["bits"]
    except (OSError, ValueError, KeyError) as error:
        sys.exit(f"verify.py: {path}: not a bits file of run.py ({error})")
    if frames.ndim != 1 or bits.ndim != 2 or len(frames) != len(bits):
        sys.exit(f"verify.py: {path}: frames {frames.shape} and bits {bits.shape} do not match")
    return frames.astype(np.int64), bits.astype(np.uint8)


def check(
    path: Path,
    tx: dict[int, NDArray[np.uint8]],
    frame_bits: int,
    max_ber: float,
    allow_missing: bool,
) -> list[str]:
    """Prints what `path` decoded and returns the problems found (none: it passes)."""
    frames, bits = load(path)
    problems: list[str] = []
    unknown = sorted(set(frames.tolist()) - set(tx))
    if unknown:
        problems.append(f"frame ids never sent: {unknown[:10]}")
    ids, counts = np.unique(frames, return_counts=True)
    if np.any(counts > 1):
        problems.append(f"frames decoded twice: {ids[counts > 1][:10].tolist()}")
    errors = 0
    bad_frames: list[tuple[int, int]] = []
    for frame, row in zip(frames.tolist(), bits):
        sent = tx.get(frame)
        if sent is None:
            continue
        if row.shape != sent.shape:
            problems.append(f"frame {frame}: {row.size} bytes decoded, {sent.size} sent")
            continue
        wrong = int(np.unpackbits(row ^ sent)[:frame_bits].sum())
        errors += wrong
        if wrong:
            bad_frames.append((frame, wrong))
    checked = len(set(frames.tolist()) & set(tx))
    missing = sorted(set(tx) - set(frames.tolist()))
    ber = errors / (checked * frame_bits) if checked else float("nan")
    print(
        f"{path.name}: {checked} of {len(tx)} frames decoded, {errors} bit errors in "
        f"{checked * frame_bits} bits (BER {ber:.3g}); {len(missing)} frames missing"
    )
    if not checked:
        problems.append("no frame was decoded")
    if checked and ber > max_ber:
        worst = ", ".join(f"frame {f}: {w} bits" for f, w in bad_frames[:5])
        problems.append(f"BER {ber:.3g} above --max-ber {max_ber:g} ({worst})")
    if missing and not allow_missing:
        problems.append(
            f"{len(missing)} frames never decoded (first: {missing[:10]}), dropped or lost; "
            "--allow-missing checks the others only"
        )
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("dir", type=Path, help="the --out directory of run.py")
    parser.add_argument("--max-ber", type=float, default=0.0, help="largest bit error rate")
    parser.add_argument("--allow-missing", action="store_true", help="frames may be missing")
    args = parser.parse_args(argv)
    try:
        params: dict[str, Any] = json.loads((args.dir / "params.json").read_text())
        frame_bits = int(params["frame_bits"])
    except (OSError, ValueError, KeyError, TypeError) as error:
        sys.exit(f"verify.py: {args.dir / 'params.json'}: cannot read frame_bits ({error})")
    tx_frames, tx_bits = load(args.dir / "tx.npz")
    if tx_bits.shape[1] * 8 < frame_bits:
        sys.exit(f"verify.py: tx.npz holds {tx_bits.shape[1]} bytes a frame, not {frame_bits} bits")
    tx = dict(zip(tx_frames.tolist(), tx_bits))
    runs = sorted(args.dir.glob("rx-*.npz"))
    if not runs:
        sys.exit(f"verify.py: {args.dir}: no rx-*.npz; run run.py --out {args.dir} first")
    failed = False
    for path in runs:
        for problem in check(path, tx, frame_bits, args.max_ber, args.allow_missing):
            print(f"verify.py: {path}: {problem}", file=sys.stderr)
            failed = True
    if failed:
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
