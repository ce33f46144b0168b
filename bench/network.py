#!/usr/bin/env python3
"""The network source on loopback, with the release `tomii` binary (`tomii run` receiving,
`tomii send` sending), in one invocation:

- `rate`: the highest packet rate the source takes without losing a packet, for 1 and 2 receiver
  threads (2 sockets either way) and 64-byte and 8-KiB packets. A trial sends `--seconds` worth of
  16-packet frames at a rate; it passes when every packet was accepted and every frame completed
  (packets the kernel drops from a full socket buffer count: they never arrive). The rate grows by
  half until a trial fails or the sender cannot reach it, then is bisected.
- `cpu`: the CPU the receiving process uses (every thread's run time, `/proc/PID/task/*/schedstat`)
  against the floor, a plain `recvmmsg` loop (`recvmmsg_floor.c`, built here with gcc) receiving
  the same packets from `tomii send` on the same sockets: CPU per packet at paced rates, and the
  ratio of the two within one run; and idle, the CPU of a run that gets no packet for
  `--idle-seconds`, before its first packet and after a burst of frames, as % of a core.
- `latency`: packet-driven dispatch against collect-the-frame-then-start, on
  `tomii.graphs.mimo_uplink(16, 4, 4)` (one 1-KiB packet per antenna, `fft` 20 µs, the other
  stages 10 µs) with paced packets: the latency from a frame's first packet to its completion
  (the report's `network.latency_from_first_packet_us`), the two alternating round by round.

    cargo build --release --workspace
    python bench/network.py [rate|cpu|latency|all] [--seconds S] [--rounds R] [--frames F]
        [--idle-spin adaptive|full]
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RELEASE = ROOT / "target" / "release"
TOMII = RELEASE / "tomii"
SYNTHETIC = RELEASE / "libtomii_synthetic.so"
FLOOR_SOURCE = Path(__file__).resolve().parent / "recvmmsg_floor.c"
FRAME_PACKETS = 16
# The receiving run of the rate and CPU measurements.
RATE_KNOBS = ["--workers", "1", "--slots", "16", "--frame-timeout-ms", "200"]
RATE_KNOBS += ["--on-slots-busy", "wait"]


def free_ports(count: int) -> int:
    """The first of `count` consecutive UDP ports free on 127.0.0.1 now."""
    for _ in range(200):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.bind(("127.0.0.1", 0))
            first: int = probe.getsockname()[1]
        if first + count > 65535:
            continue
        try:
            held = []
            for port in range(first, first + count):
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                held.append(s)
                s.bind(("127.0.0.1", port))
            return first
        except OSError:
            continue
        finally:
            for s in held:
                s.close()
    raise RuntimeError("no consecutive free ports found")


def rate_graph(packet_length: int, port: int) -> dict[str, Any]:
    """16 packets a frame on 2 sockets; one `noop` per packet and one per frame."""
    return {
        "name": f"rate_{packet_length}",
        "network_config": {
            "socket_type": "udp",
            "address": "127.0.0.1",
            "start_port": port,
            "num_sockets": 2,
            "packet_length": packet_length,
            "frame_packets": FRAME_PACKETS,
        },
        "nodes": [
            {
                "name": "take",
                "function": "noop",
                "factor": FRAME_PACKETS,
                "args": [{"type": "$dep", "predecessor": {"name": "$network"}}],
            },
            {
                "name": "frame",
                "function": "noop",
                "args": [{"type": "$dep", "predecessor": {"name": "take", "index": "all"}}],
            },
        ],
    }


def run_and_send(
    graph: dict[str, Any], frames: int, rate: float, run_args: list[str]
) -> tuple[dict[str, Any], float]:
    """Runs `graph` for `frames` frames while `tomii send` sends them at `rate` packets/s;
    returns the report and the rate the sender reached."""
    with tempfile.TemporaryDirectory() as tmp:
        path, report = Path(tmp) / "graph.json", Path(tmp) / "report.json"
        path.write_text(json.dumps(graph), encoding="utf-8")
        run = [str(TOMII), "run", str(path), "--dylib", str(SYNTHETIC), "--quiet"]
        run += ["--frames", str(frames), "--report", str(report), *run_args]
        receiver = subprocess.Popen(run, stderr=subprocess.PIPE, text=True)
        time.sleep(0.3)  # binds its sockets, starts its threads
        send = [str(TOMII), "send", "--graph", str(path), "--frames", str(frames)]
        sent = subprocess.run(
            [*send, "--rate", f"{rate:.0f}"], capture_output=True, text=True, check=False
        )
        try:
            _, errors = receiver.communicate(timeout=3)
        except subprocess.TimeoutExpired:
            # The last frames lost every packet (no later id shows they were sent): stop it; the
            # report then says interrupted, and the frames it did not take.
            receiver.send_signal(signal.SIGINT)
            _, errors = receiver.communicate(timeout=60)
        if sent.returncode != 0 or receiver.returncode != 0:
            raise RuntimeError(f"send: {sent.stderr.strip()} run: {errors.strip()}")
        reached = float(sent.stdout.rsplit(":", 1)[1].split()[0])
        return json.loads(report.read_text(encoding="utf-8")), reached


def lossless(report: dict[str, Any], frames: int) -> bool:
    network = report["network"]
    return bool(
        network["packets_accepted"] == frames * FRAME_PACKETS
        and network["frames_complete"] == frames
        and not report["interrupted"]
    )


def highest_rate(threads: int, packet_length: int, seconds: float) -> tuple[float, str, int]:
    """The highest rate passed, why the search stopped, and the trials run."""

    def trial(rate: float) -> tuple[bool, float]:
        frames = max(100, int(rate * seconds / FRAME_PACKETS))
        graph = rate_graph(packet_length, free_ports(2))
        knobs = ["--receiver-threads", str(threads), *RATE_KNOBS]
        report, reached = run_and_send(graph, frames, rate, knobs)
        return lossless(report, frames), reached

    rate, best, trials, stop = 20_000.0, 0.0, 0, "the socket or the receiver lost packets"
    failed = None
    while failed is None:
        ok, reached = trial(rate)
        trials += 1
        if reached < 0.95 * rate:
            stop = f"the sender reached only {reached:,.0f} packets/s"
            if ok:
                best = max(best, reached)
            break
        if ok:
            best = reached
            rate *= 1.5
        else:
            failed = rate
    if failed is not None:
        low, high = best, failed
        for _ in range(3):
            middle = (low + high) / 2
            ok, reached = trial(middle)
            trials += 1
            if ok and reached >= 0.95 * middle:
                low, best = middle, reached
            else:
                high = middle
    return best, stop, trials


def rate_table(seconds: float) -> None:
    print(
        "| receiver threads | packet | highest rate without loss | MB/s | stopped because | trials |"
    )
    print("|---:|---:|---:|---:|---|---:|")
    for packet_length in (64, 8192):
        for threads in (1, 2):
            best, stop, trials = highest_rate(threads, packet_length, seconds)
            mbs = best * packet_length / 1e6
            size = "64 B" if packet_length == 64 else "8 KiB"
            print(
                f"| {threads} | {size} | {best:,.0f} packets/s | {mbs:,.1f} | {stop} | {trials} |"
            )
            sys.stdout.flush()


def cpu_seconds(pid: int) -> float:
    """The run time of every thread of process `pid` so far, in seconds (threads that exited
    are not counted: the processes measured here keep theirs)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text(encoding="ascii").split()[0])
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total / 1e9


def build_floor(directory: Path) -> Path:
    """`recvmmsg_floor.c`, compiled into `directory`."""
    gcc = shutil.which("gcc")
    if gcc is None:
        sys.exit("error: the cpu part builds its recvmmsg floor with gcc, which is not on PATH")
    binary = directory / "recvmmsg_floor"
    subprocess.run([gcc, "-O2", "-o", str(binary), str(FLOOR_SOURCE)], check=True)
    return binary


def started(receiver: subprocess.Popen[str]) -> None:
    """Raises, with what it said, if `tomii run` has already exited."""
    if receiver.poll() is not None:
        _, errors = receiver.communicate()
        raise RuntimeError(f"tomii run: exit status {receiver.returncode}: {errors.strip()}")


def stop(process: subprocess.Popen[str], what: str) -> str:
    """Interrupts `process`, waits for it and returns what it printed; raises if it failed."""
    process.send_signal(signal.SIGINT)
    out, errors = process.communicate(timeout=60)
    if process.returncode != 0:
        raise RuntimeError(f"{what}: exit status {process.returncode}: {errors.strip()}")
    return out


def send_measured(pid: int, graph: Path, frames: int, rate: float) -> tuple[float, float]:
    """Sends `frames` frames of `graph` at `rate` packets/s; returns the CPU seconds process
    `pid` used meanwhile (until its sockets are drained) and the rate the sender reached."""
    before = cpu_seconds(pid)
    send = [str(TOMII), "send", "--graph", str(graph), "--frames", str(frames)]
    sent = subprocess.run(
        [*send, "--rate", f"{rate:.0f}"], capture_output=True, text=True, check=False
    )
    if sent.returncode != 0:
        raise RuntimeError(f"send: {sent.stderr.strip()}")
    time.sleep(0.05)  # the last packets read
    return cpu_seconds(pid) - before, float(sent.stdout.rsplit(":", 1)[1].split()[0])


def tomii_receiving(graph: Path, report: Path) -> subprocess.Popen[str]:
    """`tomii run` of `graph` until interrupted, with the rate trials' knobs."""
    run = [str(TOMII), "run", str(graph), "--dylib", str(SYNTHETIC), "--quiet", "--frames", "0"]
    return subprocess.Popen(
        [*run, "--report", str(report), *RATE_KNOBS],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def per_packet(floor: Path, tmp: Path, rate: float, seconds: float) -> dict[str, float]:
    """CPU per packet of Tomii and of the floor, each receiving the same frames at `rate`."""
    frames = max(100, int(rate * seconds / FRAME_PACKETS))
    packets = frames * FRAME_PACKETS
    port = free_ports(2)
    graph, report = tmp / "cpu.json", tmp / "cpu-report.json"
    graph.write_text(json.dumps(rate_graph(64, port)), encoding="utf-8")
    receiver = tomii_receiving(graph, report)
    time.sleep(0.3)  # binds its sockets, starts its threads
    started(receiver)
    tomii_cpu, reached = send_measured(receiver.pid, graph, frames, rate)
    stop(receiver, "tomii run")
    network = json.loads(report.read_text(encoding="utf-8"))["network"]
    floor_run = [str(floor), "127.0.0.1", str(port), "2", "64"]
    baseline = subprocess.Popen(
        floor_run, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert baseline.stdout is not None
    baseline.stdout.readline()  # "ready": its sockets are bound
    floor_cpu, floor_reached = send_measured(baseline.pid, graph, frames, rate)
    floor_received = int(stop(baseline, "recvmmsg floor").split()[-1])
    return {
        "reached": min(reached, floor_reached),
        "tomii_us": tomii_cpu / packets * 1e6,
        "floor_us": floor_cpu / packets * 1e6,
        "tomii_lost": packets - network["packets_accepted"],
        "floor_lost": packets - floor_received,
    }


def idle_share(tmp: Path, seconds: float, burst: int) -> float:
    """% of a core a run uses over `seconds` without a packet, after `burst` frames (0: before
    its first packet)."""
    graph, report = tmp / "idle.json", tmp / "idle-report.json"
    graph.write_text(json.dumps(rate_graph(64, free_ports(2))), encoding="utf-8")
    receiver = tomii_receiving(graph, report)
    time.sleep(0.3)
    started(receiver)
    if burst:
        send_measured(receiver.pid, graph, burst, 20_000)
    time.sleep(0.2)  # the burst's frames completed
    before, start = cpu_seconds(receiver.pid), time.monotonic()
    time.sleep(seconds)
    used, wall = cpu_seconds(receiver.pid) - before, time.monotonic() - start
    stop(receiver, "tomii run")
    return 100 * used / wall


def cpu_table(rates: list[float], seconds: float, idle_seconds: float) -> None:
    with tempfile.TemporaryDirectory() as directory:
        tmp = Path(directory)
        floor = build_floor(tmp)
        print("CPU per packet, 64-byte packets on 2 sockets, 1 receiver thread, 1 worker:")
        print()
        print("| rate | Tomii | recvmmsg loop | Tomii ÷ loop | lost (Tomii, loop) |")
        print("|---:|---:|---:|---:|---|")
        for rate in rates:
            r = per_packet(floor, tmp, rate, seconds)
            print(
                f"| {r['reached']:,.0f} packets/s | {r['tomii_us']:.2f} µs | {r['floor_us']:.2f} µs "
                f"| {r['tomii_us'] / r['floor_us']:.2f} | {r['tomii_lost']:.0f}, {r['floor_lost']:.0f} |"
            )
            sys.stdout.flush()
        print()
        before = idle_share(tmp, idle_seconds, 0)
        after = idle_share(tmp, idle_seconds, 100)
        print(
            f"idle, {idle_seconds:g} s without a packet: {before:.1f} % of a core before the first "
            f"packet, {after:.1f} % after 100 frames"
        )


def mimo(port: int) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT / "python"))
    from tomii import graphs

    cost = {
        "fft": graphs.Fixed(20),
        "chest": graphs.Fixed(10),
        "beamform": graphs.Fixed(10),
        "demod": graphs.Fixed(10),
    }
    network = {"socket_type": "udp", "address": "127.0.0.1", "start_port": port}
    network["packet_length"] = 1024
    return graphs.mimo_uplink(16, 4, 4, cost=cost, network=network)


def latency_table(rounds: int, frames: int, rate: float) -> None:
    results: dict[str, list[dict[str, float]]] = {"packet": [], "frame": []}
    for _ in range(rounds):
        for dispatch in ("packet", "frame"):
            knobs = ["--network-dispatch", dispatch, "--workers", "2", "--slots", "4"]
            knobs += ["--on-slots-busy", "wait"]
            report, _ = run_and_send(mimo(free_ports(1)), frames, rate, knobs)
            if not lossless(report, frames):
                raise RuntimeError(
                    f"{dispatch}: lost packets at {rate} packets/s: {report['network']}"
                )
            results[dispatch].append(report["network"]["latency_from_first_packet_us"])
    med = {
        d: {k: statistics.median(r[k] for r in results[d]) for k in ("p50", "p99")} for d in results
    }
    print(f"mimo_uplink(16, 4, 4), {frames} frames a run, {rounds} rounds, {rate:,.0f} packets/s")
    print(
        "(one frame's 16 packets arrive over "
        f"{FRAME_PACKETS / rate * 1e6:,.0f} µs); latency from a frame's first packet to its completion:"
    )
    print()
    print("| dispatch | p50 (median of rounds) | p99 (median of rounds) | p50 per round |")
    print("|---|---:|---:|---|")
    for dispatch in ("packet", "frame"):
        rounds_p50 = ", ".join(f"{r['p50']:.0f}" for r in results[dispatch])
        print(
            f"| {dispatch} | {med[dispatch]['p50']:.0f} µs | {med[dispatch]['p99']:.0f} µs | {rounds_p50} |"
        )
    ratio = med["frame"]["p50"] / med["packet"]["p50"]
    ratios = [f["p50"] / p["p50"] for p, f in zip(results["packet"], results["frame"])]
    print()
    print(
        f"collect-first ÷ packet-driven, p50: {ratio:.2f} (per round: "
        + ", ".join(f"{r:.2f}" for r in ratios)
        + ")"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("part", nargs="?", default="all", choices=["rate", "cpu", "latency", "all"])
    parser.add_argument("--seconds", type=float, default=0.5, help="of packets per rate trial")
    parser.add_argument("--rounds", type=int, default=5, help="latency rounds")
    parser.add_argument("--frames", type=int, default=500, help="frames per latency run")
    parser.add_argument("--rate", type=float, default=32_000, help="latency: packets/s")
    parser.add_argument(
        "--cpu-rates",
        default="20000,100000",
        help="cpu: the packet rates to measure CPU per packet at, comma-separated",
    )
    parser.add_argument("--cpu-seconds", type=float, default=3, help="cpu: of packets per rate")
    parser.add_argument("--idle-seconds", type=float, default=5, help="cpu: of no packets")
    parser.add_argument(
        "--idle-spin",
        choices=["adaptive", "full"],
        help="rate and cpu: the receiving run's idle_spin knob (default: the runtime's)",
    )
    args = parser.parse_args()
    if args.idle_spin is not None:
        RATE_KNOBS.extend(["--idle-spin", args.idle_spin])
    for binary in (TOMII, SYNTHETIC):
        if not binary.exists():
            sys.exit(f"error: {binary} is missing; run `cargo build --release --workspace` first")
    if args.part in ("rate", "all"):
        rate_table(args.seconds)
        print()
    if args.part in ("cpu", "all"):
        rates = [float(rate) for rate in args.cpu_rates.split(",")]
        cpu_table(rates, args.cpu_seconds, args.idle_seconds)
        print()
    if args.part in ("latency", "all"):
        latency_table(args.rounds, args.frames, args.rate)


if __name__ == "__main__":
    main()
