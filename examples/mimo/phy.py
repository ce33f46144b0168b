"""The air interface of the MIMO uplink example in NumPy: the numerology, which FFT bins carry
data, the Zadoff-Chu pilot, square Gray-coded QAM and the packet layout. The Rust kernels
(kernels/src/ofdm.rs) implement the same definitions; README.md ("Air interface", "Packet
format") states them. This module only defines and converts; it never sends or decodes a frame.
"""

from __future__ import annotations

import struct
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

#: Bytes of the runtime's packet header (frame id u64, index u32, 4 zero bytes).
TOMII_HEADER = 16
#: Bytes of this example's header: symbol, antenna, samples, 0 (u16 each, little-endian).
MIMO_HEADER = 8
_HEADERS = struct.Struct("<QI4xHHHH")

Bits = NDArray[np.uint8]
Complex = NDArray[np.complex128]


@dataclass(frozen=True)
class Numerology:
    """The sizes of one TDD frame: `users` pilot symbols (user u alone on symbol u), then
    `data_symbols` data symbols, each OFDM symbol `fft_size` samples of which `subcarriers` bins
    carry data; demodulation works on blocks of `block` subcarriers."""

    antennas: int
    users: int
    subcarriers: int = 192
    fft_size: int = 256
    data_symbols: int = 8
    block: int = 16
    bits: int = 4

    def check(self) -> None:
        """Raises ValueError naming the first size that cannot work."""
        if self.antennas < 1 or self.users < 1:
            raise ValueError("antennas and users must be at least 1")
        if self.users > self.antennas:
            raise ValueError(
                f"{self.users} users on {self.antennas} antennas: zero-forcing needs users <= "
                "antennas"
            )
        if self.subcarriers < 2 or self.subcarriers % 2 or self.subcarriers >= self.fft_size:
            raise ValueError(
                f"{self.subcarriers} subcarriers in a {self.fft_size}-point FFT: give an even "
                "number below the FFT size"
            )
        if self.fft_size > 65535:
            raise ValueError(f"FFT size {self.fft_size}: at most 65535 (a u16 in the header)")
        if not 1 <= self.block <= self.subcarriers:
            raise ValueError(f"block of {self.block} subcarriers: give 1..{self.subcarriers}")
        if self.data_symbols < 1:
            raise ValueError("data symbols must be at least 1")
        if self.bits not in (2, 4, 6):
            raise ValueError(f"{self.bits} bits per symbol: give 2, 4 or 6")

    @property
    def pilot_symbols(self) -> int:
        return self.users

    @property
    def symbols(self) -> int:
        return self.users + self.data_symbols

    @property
    def frame_packets(self) -> int:
        return self.antennas * self.symbols

    @property
    def blocks(self) -> int:
        return -(-self.subcarriers // self.block)

    @property
    def packet_length(self) -> int:
        return TOMII_HEADER + MIMO_HEADER + 8 * self.fft_size

    @property
    def frame_bits(self) -> int:
        """Bits a frame carries: users × data symbols × subcarriers × bits per symbol."""
        return self.users * self.data_symbols * self.subcarriers * self.bits

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def bins(subcarriers: int, fft_size: int) -> NDArray[np.int64]:
    """The FFT bin of each data subcarrier: the lower half on −S/2 … −1, the upper on 1 … S/2."""
    half = subcarriers // 2
    k = np.arange(subcarriers)
    return np.where(k < half, fft_size - half + k, k - half + 1).astype(np.int64)


def pilot(subcarriers: int) -> Complex:
    """The Zadoff-Chu sequence of root 1 and even length S: exp(−iπ·k²/S)."""
    k = np.arange(subcarriers, dtype=np.float64)
    sequence: Complex = np.exp(-1j * np.pi * k * k / subcarriers)
    return sequence


def _levels(bits: int) -> tuple[int, float]:
    """Levels per axis and the scale giving the constellation mean energy 1."""
    levels = 1 << (bits // 2)
    return levels, float(np.sqrt(2.0 * (levels * levels - 1) / 3.0))


def modulate(bits: Bits, order: int) -> Complex:
    """Square Gray QAM of `order` bits per symbol: the last axis of `bits` (0/1) is cut into
    groups of `order`; the first half of a group picks the in-phase level, the rest the
    quadrature one, each MSB first. Returns one complex symbol per group."""
    levels, scale = _levels(order)
    half = order // 2
    groups = bits.reshape(*bits.shape[:-1], -1, 2, half).astype(np.int64)
    weights = 1 << np.arange(half - 1, -1, -1)
    gray = (groups * weights).sum(axis=-1)
    index = gray.copy()
    shift = gray >> 1
    while np.any(shift):
        index ^= shift
        shift >>= 1
    amplitude = (2 * index - (levels - 1)) / scale
    symbols: Complex = amplitude[..., 0] + 1j * amplitude[..., 1]
    return symbols


def demodulate(symbols: Complex, order: int) -> Bits:
    """Hard decisions on `symbols`: for each, `order` bits (0/1) in the layout `modulate` reads."""
    levels, scale = _levels(order)
    half = order // 2
    axes = np.stack([symbols.real, symbols.imag], axis=-1) * scale
    index = np.clip(np.round((axes + (levels - 1)) / 2), 0, levels - 1).astype(np.int64)
    gray = index ^ (index >> 1)
    shifts = np.arange(half - 1, -1, -1)
    out = (gray[..., None] >> shifts) & 1
    return out.reshape(*symbols.shape, order).reshape(*symbols.shape[:-1], -1).astype(np.uint8)


def packet(frame: int, symbol: int, antenna: int, antennas: int, samples: Complex) -> bytes:
    """One packet: both headers, then `samples` as little-endian f32 (I, Q) pairs."""
    index = symbol * antennas + antenna
    head = _HEADERS.pack(frame, index, symbol, antenna, samples.shape[0], 0)
    return head + samples.astype("<c8").tobytes()


def parse(data: bytes) -> tuple[int, int, int, int, NDArray[np.complex128]]:
    """A packet's frame id, index, symbol, antenna and samples."""
    frame, index, symbol, antenna, count, _ = _HEADERS.unpack_from(data)
    samples = np.frombuffer(data, dtype="<c8", offset=TOMII_HEADER + MIMO_HEADER)
    if samples.size != count:
        raise ValueError(f"packet {index} of frame {frame}: {samples.size} samples, header {count}")
    return frame, index, symbol, antenna, samples.astype(np.complex128)
