"""The sensor readings of the stream-analytics example, and the analytics over them, in NumPy.

The readings are those of the C kernel sa_read (src/streamstats.c), generated the same way from
splitmix64: `draw(state, n)` is output n of the splitmix64 sequence whose state starts at
`state` (the state advanced by n + 1 golden-ratio steps, then mixed), and `unit(x)` the top 53
bits of a draw as a double in [0, 1). For sensor s in frame f, with key = draw(draw(seed, f), s):

    x[k] = sin(2 pi (f W + k) / period + phase_s) + noise (2 unit(draw(key, 2 + k)) - 1)

with phase_s = 2 pi unit(draw(~seed, s)), and, when unit(draw(key, 0)) < rate, a spike: x[p] +=
spike at p = draw(key, 1) mod W. The functions below recompute what the kernels compute, for
verify.py; they share no code with the C.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

GOLDEN = np.uint64(0x9E3779B97F4A7C15)
MIX1 = np.uint64(0xBF58476D1CE4E5B9)
MIX2 = np.uint64(0x94D049BB133111EB)

U64 = npt.NDArray[np.uint64]
F64 = npt.NDArray[np.float64]

#: The example's signal: noise amplitude, spike height and probability, the condition's threshold
#: on a window's maximum and the z above which a maximum is a spike (README, "The readings").
SIGNAL = {"noise": 0.3, "spike": 4.0, "rate": 0.1, "threshold": 1.2, "z_limit": 4.0}


@dataclass(frozen=True)
class Params:
    """What the readings and the checks depend on."""

    sensors: int
    window: int
    group: int
    seed: int
    period: float
    noise: float
    spike: float
    rate: float
    threshold: float
    z_limit: float


def draw(state: U64 | np.uint64, n: U64 | np.uint64) -> U64:
    """Output n of the splitmix64 sequence starting at `state` (element-wise, modulo 2^64)."""
    with np.errstate(over="ignore"):
        z = np.asarray(state, dtype=np.uint64) + (np.asarray(n, dtype=np.uint64) + 1) * GOLDEN
        z = (z ^ (z >> np.uint64(30))) * MIX1
        z = (z ^ (z >> np.uint64(27))) * MIX2
    return np.asarray(z ^ (z >> np.uint64(31)), dtype=np.uint64)


def unit(x: U64) -> F64:
    """Draws as doubles in [0, 1): their top 53 bits."""
    return np.asarray((x >> np.uint64(11)).astype(np.float64) * 2.0**-53, dtype=np.float64)


def frame(p: Params, number: int) -> tuple[F64, npt.NDArray[np.bool_]]:
    """The S x W readings of frame `number`, and which sensors got a spike."""
    seed = np.uint64(p.seed)
    sensors = np.arange(p.sensors, dtype=np.uint64)
    key = draw(draw(seed, np.uint64(number)), sensors)[:, None]
    phase = 2 * np.pi * unit(draw(~seed, sensors))[:, None]
    k = np.arange(p.window, dtype=np.uint64)
    start = float(number) * float(p.window)
    signal = np.sin(2 * np.pi * (start + k.astype(np.float64)) / p.period + phase)
    x = signal + p.noise * (2.0 * unit(draw(key, k + np.uint64(2))) - 1.0)
    spiked = unit(draw(key, np.uint64(0)))[:, 0] < p.rate
    where = (draw(key, np.uint64(1))[:, 0] % np.uint64(p.window)).astype(np.intp)
    rows = np.flatnonzero(spiked)
    x[rows, where[rows]] += p.spike
    return x, spiked


def stats(x: F64) -> F64:
    """Per row: mean, variance (over W), min, max."""
    return np.stack([x.mean(axis=1), x.var(axis=1), x.min(axis=1), x.max(axis=1)], axis=1)


def spike_z(x: F64) -> tuple[F64, npt.NDArray[np.intp]]:
    """Per row: how far its maximum stands above its neighbours' mean (one neighbour at an
    end), in standard deviations of the row's first differences; and where the maximum is."""
    at = np.argmax(x, axis=1)
    rows = np.arange(x.shape[0])
    left = x[rows, np.maximum(at - 1, 0)]
    right = x[rows, np.minimum(at + 1, x.shape[1] - 1)]
    neighbours = np.where(at == 0, right, np.where(at == x.shape[1] - 1, left, (left + right) / 2))
    spread = np.diff(x, axis=1).std(axis=1)
    return (x[rows, at] - neighbours) / spread, at
