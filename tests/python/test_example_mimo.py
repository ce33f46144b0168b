"""The MIMO uplink example (examples/mimo): run.py --quick feeds the graph over UDP loopback and
verify.py finds every bit; verify.py fails on corrupted or missing frames; on noisy frames the
graph's kernels make exactly the decisions of an independent NumPy receiver."""

from __future__ import annotations

import importlib
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from example_scripts import example_script

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "mimo"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def run_example(out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """run.py --quick, packet-driven over loopback, with the debug build of the kernels. Frames
    that find every slot busy wait for one, and a frame's packets may take 2 s to be read: a
    shared CI machine must not lose any."""
    options: list[str | Path] = ["--quick", "--debug", "--out", out, "--port", str(free_port())]
    options += ["--on-slots-busy", "wait", "--frame-timeout-ms", "2000", *extra]
    return example_script("mimo", "run.py", *options)


def verify(out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return example_script("mimo", "verify.py", out, *extra, timeout=60)


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("mimo")
    done = run_example(out, "--schedulers", "fifo,work-stealing")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "work-stealing" in done.stdout
    return out


MODULES = ("phy", "sender", "numpy_receiver")


@pytest.fixture
def example(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, ModuleType]]:
    """The example's modules, imported from its folder (and forgotten afterwards)."""
    monkeypatch.syspath_prepend(str(EXAMPLE))
    yield {name: importlib.import_module(name) for name in MODULES}
    for name in MODULES:
        sys.modules.pop(name, None)


def test_quick_run_decodes_every_bit(quick_run: Path) -> None:
    done = verify(quick_run)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "20 of 20 frames decoded, 0 bit errors" in done.stdout
    assert sorted(p.name for p in quick_run.glob("rx-*.npz")) == [
        "rx-fifo.npz",
        "rx-work-stealing.npz",
    ]


def corrupt(source: Path, target: Path, change: str) -> None:
    """A copy of run `source` in `target` whose rx-fifo.npz has one bit flipped or a frame
    removed."""
    target.mkdir()
    for name in ("params.json", "tx.npz"):
        (target / name).write_bytes((source / name).read_bytes())
    with np.load(source / "rx-fifo.npz") as data:
        frames, bits = data["frames"].copy(), data["bits"].copy()
    if change == "flip":
        bits[3, 7] ^= 0x10
    else:
        frames, bits = frames[1:], bits[1:]
    np.savez(target / "rx-fifo.npz", frames=frames, bits=bits)


def test_verify_fails_on_a_flipped_bit(quick_run: Path, tmp_path: Path) -> None:
    corrupt(quick_run, tmp_path / "flipped", "flip")
    done = verify(tmp_path / "flipped")
    assert done.returncode == 1
    assert "1 bit errors" in done.stdout
    assert "above --max-ber 0" in done.stderr and "frame " in done.stderr


def test_verify_fails_on_a_missing_frame(quick_run: Path, tmp_path: Path) -> None:
    corrupt(quick_run, tmp_path / "missing", "drop")
    done = verify(tmp_path / "missing")
    assert done.returncode == 1
    assert "1 frames never decoded" in done.stderr
    assert verify(tmp_path / "missing", "--allow-missing").returncode == 0


def test_verify_names_a_directory_without_a_run(tmp_path: Path) -> None:
    done = verify(tmp_path)
    assert done.returncode == 1
    assert "params.json" in done.stderr and "Traceback" not in done.stderr


def test_run_refuses_impossible_sizes(tmp_path: Path) -> None:
    done = run_example(tmp_path, "--users", "8")
    assert done.returncode == 1
    assert "8 users on 4 antennas" in done.stderr and "Traceback" not in done.stderr


def test_kernels_decide_as_the_numpy_receiver(
    tmp_path: Path, example: dict[str, ModuleType]
) -> None:
    """At 12 dB a 4x4 zero-forcing receiver makes many errors: the graph's bits must be the
    NumPy reference's, decision for decision, up to rounding at a decision boundary."""
    done = run_example(tmp_path, "--snr", "12", "--seed", "5", "--frames", "6")
    assert done.returncode == 0, done.stdout + done.stderr
    phy, sender, receiver = example["phy"], example["sender"], example["numpy_receiver"]
    n = phy.Numerology(4, 4, subcarriers=48, fft_size=64, data_symbols=4, block=16)
    with np.load(tmp_path / "rx-fifo.npz") as data:
        decoded = dict(zip(data["frames"].tolist(), data["bits"]))
    assert sorted(decoded) == list(range(6))
    errors = differ = 0
    for frame in sender.make_frames(6, n, 12.0, 5):
        graph_bits = np.unpackbits(decoded[frame.frame])[: n.frame_bits]
        numpy_bits = receiver.decode(frame.packets, n)
        errors += int((numpy_bits != frame.bits).sum())
        differ += int((graph_bits != numpy_bits).sum())
    assert errors > 1000  # the comparison is about real decisions, not a clean channel
    assert differ <= errors // 1000, f"{differ} of {errors} erroneous decisions differ"
