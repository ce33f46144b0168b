"""Runs the packet-driven MIMO uplink: builds the kernels, generates the frames, and for each
scheduler starts the graph listening on UDP loopback, sends every frame's packets to it at the
frame rate, and reports frames/s, p50/p99 frame latency, the share of frames that missed their
deadline (the frame period) and the frames dropped. Writes the transmitted and decoded bits to
--out for verify.py.

    python examples/mimo/run.py --quick
    python examples/mimo/run.py --antennas 16 --users 16 --schedulers fifo,work-stealing
    python examples/mimo/verify.py out/mimo
"""

from __future__ import annotations

import argparse
import json
import math
import socket
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import phy
import sender
from graph import build
from numpy.typing import NDArray

import tomii
from tomii.build import build as build_plugin

HERE = Path(__file__).resolve().parent
KERNELS = HERE / "kernels" / "src" / "lib.rs"
MODULATIONS = {"qpsk": 2, "16qam": 4, "64qam": 6}

#: The sizes and run options of a full run and of --quick; an option given on the command line
#: overrides either.
PRESETS: dict[str, dict[str, Any]] = {
    "full": {
        "antennas": 16,
        "users": 16,
        "subcarriers": 192,
        "fft_size": 256,
        "data_symbols": 8,
        "block": 16,
        "frames": 200,
        "rate": 100.0,
    },
    "quick": {
        "antennas": 4,
        "users": 4,
        "subcarriers": 48,
        "fft_size": 64,
        "data_symbols": 4,
        "block": 16,
        "frames": 20,
        "rate": 100.0,
    },
}


@dataclass
class Measured:
    """One scheduler's run, as the table shows it."""

    scheduler: str
    frames_sent: int
    frames_decoded: int
    frames_dropped: int
    frames_per_s: float
    p50_us: float
    p99_us: float
    deadline_us: float | None
    missed_share: float | None
    packets_sent: int
    packets_received: int

    def row(self) -> str:
        missed = "n/a" if self.missed_share is None else f"{100 * self.missed_share:.1f} %"
        return (
            f"{self.scheduler:<16} {self.frames_per_s:>9.1f} {self.p50_us:>10.0f} "
            f"{self.p99_us:>10.0f} {missed:>9} {self.frames_dropped:>8}"
        )


HEADER = (
    f"{'scheduler':<16} {'frames/s':>9} {'p50 µs':>10} {'p99 µs':>10} {'missed':>9} {'dropped':>8}"
)


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text}: must be at least 1")
    return value


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=(__doc__ or "").splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="4x4, 20 small frames: seconds")
    sizes = parser.add_argument_group("frame (default: 16x16; --quick: 4x4)")
    sizes.add_argument("--antennas", type=positive_int, help="base-station antennas A")
    sizes.add_argument("--users", type=positive_int, help="single-antenna users U (<= A)")
    sizes.add_argument("--subcarriers", type=positive_int, help="data subcarriers S (even)")
    sizes.add_argument("--fft-size", type=positive_int, help="FFT size NFFT (> S)")
    sizes.add_argument("--data-symbols", type=positive_int, help="data symbols D per frame")
    sizes.add_argument("--block", type=positive_int, help="subcarriers per csi/beam block")
    sizes.add_argument("--modulation", choices=sorted(MODULATIONS), default="16qam")
    sizes.add_argument("--snr", type=float, default=100.0, help="SNR in dB per user and antenna")
    sizes.add_argument("--seed", type=int, default=1, help="seed of bits, channels and noise")
    run = parser.add_argument_group("run")
    run.add_argument("--frames", type=positive_int, help="frames sent (and run)")
    run.add_argument("--rate", type=float, help="frames per second sent (0: unpaced)")
    run.add_argument("--workers", type=positive_int, default=2)
    run.add_argument("--slots", type=positive_int, default=4, help="frames in flight")
    run.add_argument("--scheduler", default=None, help="one scheduler (default fifo)")
    run.add_argument("--schedulers", default=None, help="comma-separated schedulers to compare")
    run.add_argument(
        "--pacing",
        choices=["frame", "symbol"],
        default="frame",
        help="frame: each frame's packets back to back at its period's start; symbol: spread "
        "evenly over the period",
    )
    run.add_argument("--on-slots-busy", choices=["drop", "wait"], default="drop")
    run.add_argument(
        "--frame-timeout-ms",
        type=positive_int,
        help="a frame still missing packets this long after its first is abandoned (default: "
        "4 frame periods, at least 20 ms; unpaced: 200 ms)",
    )
    run.add_argument("--port", type=int, default=9600, help="UDP port on 127.0.0.1")
    run.add_argument("--dylib", type=Path, help="a built kernel library (default: build it)")
    run.add_argument("--debug", action="store_true", help="build the kernels in debug profile")
    run.add_argument("--verbose", action="store_true", help="print network and node figures")
    run.add_argument("--out", type=Path, default=Path("out/mimo"), help="bits and results")
    args = parser.parse_args(argv)
    preset = PRESETS["quick" if args.quick else "full"]
    for name, value in preset.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    if args.scheduler is not None and args.schedulers is not None:
        parser.error("give --scheduler or --schedulers, not both")
    names = args.schedulers if args.schedulers is not None else args.scheduler or "fifo"
    args.scheduler_list = [s.strip() for s in names.split(",") if s.strip()]
    if not args.scheduler_list:
        parser.error("--schedulers: give at least one name")
    if args.rate < 0:
        parser.error(f"--rate {args.rate}: give frames per second, or 0 for unpaced")
    if args.frame_timeout_ms is None:
        args.frame_timeout_ms = max(20, math.ceil(4000 / args.rate)) if args.rate else 200
    if not 1 <= args.port <= 65535:
        parser.error(f"--port {args.port}: give 1..65535")
    return args


def numerology(args: argparse.Namespace) -> phy.Numerology:
    n = phy.Numerology(
        antennas=args.antennas,
        users=args.users,
        subcarriers=args.subcarriers,
        fft_size=args.fft_size,
        data_symbols=args.data_symbols,
        block=args.block,
        bits=MODULATIONS[args.modulation],
    )
    try:
        n.check()
    except ValueError as error:
        sys.exit(f"run.py: {error}")
    return n


def kernel_library(args: argparse.Namespace) -> str:
    if args.dylib is not None:
        if not args.dylib.is_file():
            sys.exit(f"run.py: --dylib {args.dylib}: no such file; omit it to build the kernels")
        return str(args.dylib)
    try:
        return str(build_plugin(func_path=KERNELS, release=not args.debug).path)
    except tomii.TomiiError as error:
        sys.exit(f"run.py: building {KERNELS.parent.parent}: {error}")


def frame_latencies(result: tomii.RunResult) -> NDArray[np.float64]:
    """Per completed frame (its collect ran), from the first ready task (packet 0 delivered) to
    collect's end, in µs."""
    trace = result.trace
    if trace is None or len(trace) == 0:
        return np.zeros(0)
    frame = trace["frame"].astype(np.int64)
    count = int(frame.max()) + 1
    start = np.full(count, np.iinfo(np.int64).max)
    end = np.zeros(count, dtype=np.int64)
    np.minimum.at(start, frame, trace["ready_ns"].astype(np.int64))
    np.maximum.at(end, frame, trace["end_ns"].astype(np.int64))
    collect = result.node_names.index("collect")
    done = np.unique(frame[trace["node"] == collect])
    latencies: NDArray[np.float64] = (end[done] - start[done]) / 1000.0
    return latencies


def check_port(port: int) -> None:
    """Exits naming the port when something else already holds it: the sender would feed it."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.bind(("127.0.0.1", port))
    except OSError as error:
        sys.exit(
            f"run.py: --port {port}: UDP port in use on 127.0.0.1 ({error.strerror}); "
            "give another --port"
        )
    finally:
        probe.close()


def run_one(
    args: argparse.Namespace,
    n: phy.Numerology,
    library: str,
    scheduler: str,
    frames: list[sender.Frame],
) -> tuple[tomii.RunResult, tomii.network.SendStats]:
    """One run of the graph with `scheduler`, fed by the sender over UDP loopback."""
    check_port(args.port)
    app = build(n, port=args.port)
    outcome: list[tomii.RunResult | tomii.TomiiError] = []
    # A run whose packets stop coming ends at the idle timeout (NetworkIdleError); one whose
    # packets keep coming without making its frames stops on this limit.
    max_runtime = 30 + (int(len(frames) / args.rate) if args.rate else 0)

    def receive() -> None:
        try:
            outcome.append(
                app.run(
                    dylib=library,
                    scheduler=scheduler,
                    workers=args.workers,
                    slots=args.slots,
                    frames=len(frames),
                    on_slots_busy=args.on_slots_busy,
                    frame_timeout_ms=args.frame_timeout_ms,
                    max_runtime_s=max_runtime,
                    trace=True,
                )
            )
        except tomii.TomiiError as error:  # handed to the main thread, which reports it
            outcome.append(error)

    receiving = threading.Thread(target=receive, name=f"mimo-{scheduler}")
    receiving.start()
    listening = False
    while not listening and not outcome and receiving.is_alive():
        try:
            tomii.network.wait_listening(app, timeout=0.5)
            listening = True
        except tomii.TomiiError:
            continue
    stats = sender.send(app, frames, args.rate or None, args.pacing) if listening else None
    receiving.join()
    if not outcome:
        sys.exit(f"run.py: scheduler {scheduler}: the run failed (its error is above)")
    got = outcome[0]
    if isinstance(got, tomii.TomiiError):
        sys.exit(f"run.py: scheduler {scheduler}: {got}")
    if stats is None:
        sys.exit(f"run.py: scheduler {scheduler}: the run ended before it listened")
    return got, stats


def decoded(result: tomii.RunResult) -> tuple[NDArray[np.int64], NDArray[np.uint8]]:
    """The frame ids and packed bits the collector returned, one row per completed frame."""
    ids: list[int] = []
    rows: list[NDArray[np.uint8]] = []
    for outputs in result.outputs:
        for name, _, value in outputs:
            # An abandoned frame (a packet never came) skips collect: its value is None.
            if name == "collect" and value is not None:
                record = np.asarray(value, dtype=np.uint8)
                ids.append(int(record[:8].view("<u8")[0]))
                rows.append(record[8:])
    bits = np.stack(rows) if rows else np.zeros((0, 0), dtype=np.uint8)
    return np.asarray(ids, dtype=np.int64), bits


def measure(
    args: argparse.Namespace, scheduler: str, result: tomii.RunResult, sent: int, packets: int
) -> Measured:
    latencies = frame_latencies(result)
    network = result.report["network"]
    dropped = (
        int(network["frames_dropped"])
        + int(network["frames_incomplete"])
        + int(network["frames_failed"])
    )
    deadline = 1e6 / args.rate if args.rate else None
    missed = None
    if deadline is not None:
        late = int((latencies > deadline).sum())
        missed = (late + sent - len(latencies)) / sent
    percentile = (lambda q: float(np.percentile(latencies, q))) if len(latencies) else None
    return Measured(
        scheduler=scheduler,
        frames_sent=sent,
        frames_decoded=len(latencies),
        frames_dropped=dropped,
        frames_per_s=float(result.report.throughput_frames_per_s),
        p50_us=percentile(50) if percentile else float("nan"),
        p99_us=percentile(99) if percentile else float("nan"),
        deadline_us=deadline,
        missed_share=missed,
        packets_sent=packets,
        packets_received=int(network["packets_received"]),
    )


def write_tx(
    out: Path, args: argparse.Namespace, n: phy.Numerology, frames: list[sender.Frame]
) -> None:
    out.mkdir(parents=True, exist_ok=True)
    ids = np.asarray([f.frame for f in frames], dtype=np.int64)
    bits = np.stack([sender.pack(f.bits) for f in frames])
    np.savez(out / "tx.npz", frames=ids, bits=bits)
    params = {
        "numerology": n.to_dict(),
        "frame_bits": n.frame_bits,
        "snr_db": args.snr,
        "seed": args.seed,
        "rate_fps": args.rate,
        "frames": len(frames),
    }
    (out / "params.json").write_text(json.dumps(params, indent=2) + "\n")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    n = numerology(args)
    library = kernel_library(args)
    started = time.perf_counter()
    frames = sender.make_frames(args.frames, n, args.snr, args.seed)
    print(
        f"{n.antennas}x{n.users}, {n.subcarriers} of {n.fft_size} subcarriers, "
        f"{n.users}+{n.data_symbols} symbols: {args.frames} frames of {n.frame_packets} packets "
        f"({n.packet_length} B) generated in {time.perf_counter() - started:.1f} s; "
        f"{args.rate:g} frames/s, {args.workers} workers, {args.slots} slots"
    )
    try:
        args.out.mkdir(parents=True, exist_ok=True)
        write_tx(args.out, args, n, frames)
    except OSError as error:
        sys.exit(f"run.py: --out {args.out}: {error.strerror}")
    rows: list[Measured] = []
    print(HEADER)
    for scheduler in args.scheduler_list:
        result, stats = run_one(args, n, library, scheduler, frames)
        ids, bits = decoded(result)
        np.savez(args.out / f"rx-{scheduler}.npz", frames=ids, bits=bits)
        rows.append(measure(args, scheduler, result, len(frames), stats.packets))
        print(rows[-1].row(), flush=True)
        if args.verbose:
            print(json.dumps(result.report["network"], indent=1))
            for node in result.report.per_node:
                name = result.node_names[node["node"]]
                print(f"  {name:<8} {node['count']:>7} calls, mean {node['mean_us']:.1f} µs")
    results = [vars(row) for row in rows]
    (args.out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    deadline = f"{1e3 / args.rate:.2f} ms" if args.rate else "none (unpaced)"
    print(f"deadline: the frame period, {deadline}; missed: late or never decoded")
    print(f"bits in {args.out}: python {HERE / 'verify.py'} {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
