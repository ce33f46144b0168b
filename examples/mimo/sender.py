"""The transmit side of the MIMO uplink example: per frame, random bits per user → Gray QAM on the
data symbols, each user's Zadoff-Chu pilot alone on its pilot symbol, a seeded multipath Rayleigh
channel to every antenna, AWGN at the given SNR, an IFFT per antenna and symbol (f32 samples),
and one UDP packet per (symbol, antenna). `send` paces them over real sockets into the graph's
network source; it never hands a frame to the graph any other way.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import phy
from numpy.typing import NDArray

import tomii

#: Channel taps of the multipath Rayleigh channel (equal power, spread over the first samples).
TAPS = 4


@dataclass(frozen=True)
class Frame:
    """One transmitted frame: its id, its bits ([user][data symbol][subcarrier][bit], 0/1) and
    its packets in index order (symbol · antennas + antenna)."""

    frame: int
    bits: phy.Bits
    packets: list[bytes]


def channel(rng: np.random.Generator, numerology: phy.Numerology) -> phy.Complex:
    """A multipath Rayleigh channel: per (antenna, user) `TAPS` equal-power complex Gaussian taps
    (total power 1), as its frequency response on the data bins: shape (subcarriers, A, U)."""
    a, u = numerology.antennas, numerology.users
    taps = (rng.standard_normal((TAPS, a, u)) + 1j * rng.standard_normal((TAPS, a, u))) / np.sqrt(
        2 * TAPS
    )
    k = phy.bins(numerology.subcarriers, numerology.fft_size)
    phase = np.exp(-2j * np.pi * np.outer(k, np.arange(TAPS)) / numerology.fft_size)
    response: phy.Complex = np.einsum("kl,lau->kau", phase, taps)
    return response


def make_frame(frame: int, numerology: phy.Numerology, snr_db: float, seed: int) -> Frame:
    """Frame `frame` of the seeded stream: the same (frame, seed) always gives the same frame."""
    n = numerology
    rng = np.random.default_rng([seed, frame])
    bits = rng.integers(
        0, 2, size=(n.users, n.data_symbols, n.subcarriers * n.bits), dtype=np.uint8
    )
    grid = np.zeros((n.symbols, n.users, n.subcarriers), dtype=np.complex128)
    zc = phy.pilot(n.subcarriers)
    for user in range(n.users):
        grid[user, user] = zc
    grid[n.users :] = phy.modulate(bits, n.bits).transpose(1, 0, 2)
    h = channel(rng, n)
    received = np.einsum("kau,suk->sak", h, grid)  # (symbols, antennas, subcarriers)
    spectrum = np.zeros((n.symbols, n.antennas, n.fft_size), dtype=np.complex128)
    spectrum[:, :, phy.bins(n.subcarriers, n.fft_size)] = received
    samples = np.fft.ifft(spectrum, axis=-1) * np.sqrt(n.fft_size)
    sigma = np.sqrt(10.0 ** (-snr_db / 10.0) / 2.0)
    noise = rng.standard_normal(samples.shape) + 1j * rng.standard_normal(samples.shape)
    samples = samples + sigma * noise
    packets = [
        phy.packet(frame, symbol, antenna, n.antennas, samples[symbol, antenna])
        for symbol in range(n.symbols)
        for antenna in range(n.antennas)
    ]
    return Frame(frame=frame, bits=bits.reshape(-1), packets=packets)


def make_frames(count: int, numerology: phy.Numerology, snr_db: float, seed: int) -> list[Frame]:
    return [make_frame(f, numerology, snr_db, seed) for f in range(count)]


def _packets(frames: list[Frame]) -> Iterator[bytes]:
    for frame in frames:
        yield from frame.packets


def send(
    graph: tomii.Graph, frames: list[Frame], rate_fps: float | None, pacing: str = "frame"
) -> tomii.network.SendStats:
    """Sends every packet of `frames` to `graph`'s network source over its sockets, `rate_fps`
    frames a second (None: every packet as fast as the socket takes it). `pacing` "frame" sends
    each frame's packets back to back at the start of its period (frame i at i / rate_fps);
    "symbol" spreads them evenly over the period, symbol by symbol, as a radio's samples arrive."""
    if pacing not in ("frame", "symbol"):
        raise ValueError(f"pacing {pacing!r}: give 'frame' or 'symbol'")
    config = graph.to_dict()["network_config"]
    target = {
        "socket_type": config["socket_type"],
        "address": config["address"],
        "start_port": config["start_port"],
        "num_sockets": config["num_sockets"],
        "packet_length": config["packet_length"],
    }
    if rate_fps is None or pacing == "symbol":
        per_frame = len(frames[0].packets) if frames else 1
        rate = None if rate_fps is None else rate_fps * per_frame
        return tomii.network.send(packets=_packets(frames), rate=rate, **target)
    packets = sent_bytes = 0
    began = time.perf_counter()
    start = began
    for i, frame in enumerate(frames):
        wait = start + i / rate_fps - time.perf_counter()
        if wait > 0:
            time.sleep(wait)
        stats = tomii.network.send(packets=frame.packets, **target)
        if i == 0:
            # The first send also sets the sender up (several ms): the clock starts after it.
            start = time.perf_counter()
        packets += stats.packets
        sent_bytes += stats.bytes
    return tomii.network.SendStats(packets, sent_bytes, time.perf_counter() - began)


def pack(bits: NDArray[np.uint8]) -> NDArray[np.uint8]:
    """A frame's 0/1 bits packed as the collector packs them (MSB first, NumPy's packbits)."""
    packed: NDArray[np.uint8] = np.packbits(bits)
    return packed
