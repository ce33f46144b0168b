"""The two DNA sequences of the wavefront example, generated from a seed.

`b` is random except for a planted copy of a stretch of `a` (a third of the shorter length) with
about 10 % of its letters substituted and 4 % inserted or deleted, so the best local alignment is
that stretch and its score is far above a random pair's. NumPy's PCG64 (`default_rng(seed)`) draws
every choice, in a fixed order, so the same (n, m, seed) always gives the same pair.
"""

from __future__ import annotations

import numpy as np

ALPHABET = np.frombuffer(b"ACGT", dtype=np.uint8)


def generate(n: int, m: int, seed: int) -> tuple[str, str]:
    """Sequences `a` of n letters and `b` of m letters for `seed`."""
    rng = np.random.default_rng(seed)
    a = ALPHABET[rng.integers(0, 4, n)]
    b = ALPHABET[rng.integers(0, 4, m)]
    length = min(n, m) // 3
    origin = int(rng.integers(0, n - length + 1))
    planted = _mutate(rng, a[origin : origin + length])
    start = int(rng.integers(0, max(m - len(planted), 0) + 1))
    b[start : start + len(planted)] = planted[: m - start]
    return a.tobytes().decode("ascii"), b.tobytes().decode("ascii")


def _mutate(rng: np.random.Generator, letters: np.ndarray) -> np.ndarray:
    """`letters` with each one substituted with probability 0.1, deleted with 0.02 and followed
    by an inserted letter with 0.02."""
    kept: list[int] = []
    for letter in letters.tolist():
        roll = rng.random()
        if roll < 0.02:
            continue
        kept.append(int(ALPHABET[rng.integers(0, 4)]) if roll < 0.12 else letter)
        if rng.random() < 0.02:
            kept.append(int(ALPHABET[rng.integers(0, 4)]))
    return np.array(kept, dtype=np.uint8)
