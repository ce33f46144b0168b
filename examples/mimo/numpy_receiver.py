"""A NumPy receiver for one frame's packets: the same chain as the graph's kernels (FFT, least-
squares channel estimate on the pilots, zero-forcing by NumPy's pseudo-inverse, hard QAM
decisions), written independently of them. The tests compare the graph's bits with it on noisy
frames, where both make errors and must make the same ones.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import phy


def decode(packets: Sequence[bytes], numerology: phy.Numerology) -> phy.Bits:
    """The frame's bits, [user][data symbol][subcarrier][bit], 0/1 (unpacked)."""
    n = numerology
    y = np.zeros((n.symbols, n.antennas, n.subcarriers), dtype=np.complex128)
    where = phy.bins(n.subcarriers, n.fft_size)
    for data in packets:
        _, _, symbol, antenna, samples = phy.parse(data)
        y[symbol, antenna] = np.fft.fft(samples)[where] / np.sqrt(n.fft_size)
    # Pilot symbol u carries user u alone: H[k, a, u] = Y[u, a, k] / pilot[k].
    h = (y[: n.users] / phy.pilot(n.subcarriers)).transpose(2, 1, 0)
    w = np.linalg.pinv(h)  # (subcarriers, users, antennas)
    x = np.einsum("kua,dak->udk", w, y[n.users :])
    bits: phy.Bits = phy.demodulate(x, n.bits).reshape(-1)
    return bits
