"""Graphs fed by packets, in-process: `Graph.network()` builds the `network_config` block,
`run_graph` receives while `tomii.send` sends on loopback (UDP and TCP, a port chosen free at run
time), and every frame's sink equals the checksum recomputed from the packets; the report counts
packets and drops; bad settings and a port in use are errors that name them."""

from __future__ import annotations

import socket
import threading
from pathlib import Path
from typing import Any

import pytest
from reference import ROOT, SYNTHETIC, checksum, fnv1a, run_documented_example

import tomii as tm
import tomii.network as net

GUIDE = ROOT / "python" / "README.md"
PACKET = 48
PACKETS = 4


def free_port(kind: int) -> int:
    """A port nothing listens on now (the run binds it moments later)."""
    with socket.socket(socket.AF_INET, kind) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def pipeline(socket_type: str, port: int) -> tm.Graph:
    """`fft` instance i reads packet i; `sum` reads every `fft`."""
    app = tm.Graph()
    packets = app.network(
        socket_type=socket_type,
        address="127.0.0.1",
        start_port=port,
        num_sockets=1,
        packet_length=PACKET,
        frame_packets=PACKETS,
    )
    fft = app.node("fft", func="checksum", factor=PACKETS, args=[packets.out()])
    app.node("sum", func="checksum", args=[fft.out(0, PACKETS, wrap=False)])
    return app


def expected_sum(number: int, frame_id: int) -> int:
    """The sink of frame number `number`, made of the generated packets of frame `frame_id`."""
    ffts = [
        checksum("fft", i, number, [fnv1a(net.packet(frame_id, i, PACKET))]) for i in range(PACKETS)
    ]
    return checksum("sum", 0, number, ffts)


def run_while_sending(
    app: tm.Graph,
    frames: int,
    *,
    sent: int | None = None,
    packets: list[bytes] | None = None,
    **knobs: Any,
) -> tm.RunResult:
    """Runs `app` for `frames` frames while this thread sends them (or the first `sent`, or
    `packets`), paced."""
    result: dict[str, Any] = {}

    def receive() -> None:
        try:
            result["run"] = app.run(dylib=SYNTHETIC, frames=frames, workers=2, slots=4, **knobs)
        except tm.TomiiError as error:  # raised again on the test's thread
            result["error"] = error

    receiver = threading.Thread(target=receive)
    receiver.start()
    try:
        net.wait_listening(app)
        if packets is not None:
            net.send(app, packets=packets, rate=20_000)
        else:
            net.send(app, frames=frames if sent is None else sent, rate=20_000)
    except tm.TomiiError:
        receiver.join(timeout=60)
        if "error" in result:
            raise result["error"] from None  # why nothing listened: the run's own error
        raise
    finally:
        receiver.join(timeout=60)
    assert not receiver.is_alive(), "the run did not end"
    if "error" in result:
        raise result["error"]
    run: tm.RunResult = result["run"]
    return run


@pytest.mark.parametrize("socket_type", ["udp", "tcp"])
def test_frames_from_packets_match_the_reference(socket_type: str) -> None:
    kind = socket.SOCK_DGRAM if socket_type == "udp" else socket.SOCK_STREAM
    frames = 30
    for attempt in range(3):
        # The port was free a moment ago; another process may have taken it since.
        try:
            run = run_while_sending(
                pipeline(socket_type, free_port(kind)), frames, on_slots_busy="wait"
            )
            break
        except tm.ConfigError as error:
            if "the port is in use" not in str(error) or attempt == 2:
                raise
    assert run.report["frames"] == frames
    network = run.report["network"]
    assert network["socket_type"] == socket_type
    assert network["frames_complete"] == frames
    assert network["packets_accepted"] == frames * PACKETS
    for number, outputs in enumerate(run.outputs):
        # One socket, one receiver, packets in order: frame number k is frame id k.
        assert outputs[-1] == ("sum", 0, expected_sum(number, number)), f"frame {number}"


def test_a_run_whose_sender_stops_early_raises_at_the_idle_timeout() -> None:
    app = pipeline("udp", free_port(socket.SOCK_DGRAM))
    taken = "no packet for 300 ms after frame 2: 3 of 10 frames taken"
    with pytest.raises(tm.NetworkIdleError, match=taken) as raised:
        run_while_sending(app, 10, sent=3, on_slots_busy="wait", network_idle_timeout_ms=300)
    assert "--network-idle-timeout-ms" in str(raised.value)
    result: tm.RunResult = raised.value.result  # type: ignore[attr-defined]
    assert result.report["status"] == "failed"
    assert result.report["frames"] == 3
    assert result.report["network"]["idle_timeout_ms"] == 300
    for number, outputs in enumerate(result.outputs):
        assert outputs[-1] == ("sum", 0, expected_sum(number, number)), f"frame {number}"


def test_a_stray_first_packet_and_frames_reordered_within_the_window_lose_nothing() -> None:
    # A datagram of frame 10^9 first (a stray), then frames 0..8 newest first, their packets
    # interleaved: the window starts again at frame 0 and takes them all (network README,
    # "Frames from packets").
    frames = 8
    packets = [net.packet(10**9, 0, PACKET)] + [
        net.packet(frame, index, PACKET)
        for index in range(PACKETS)
        for frame in reversed(range(frames))
    ]
    app = pipeline("udp", free_port(socket.SOCK_DGRAM))
    run = run_while_sending(
        app, frames, packets=packets, on_slots_busy="wait", network_idle_timeout_ms=3000
    )
    network = run.report["network"]
    assert run.report["frames"] == frames, network
    assert network["frames_complete"] == frames, network
    assert network["frames_stray"] == 1, network
    assert network["packets_dropped"]["late"] == 0, network
    assert network["packets_dropped"]["outside_window"] == 1, network


def test_the_builder_writes_the_network_block_and_returns_the_packets() -> None:
    app = tm.Graph()
    port = app.var("port", 9000)
    packets = app.network(start_port=port, packet_length=64, frame_packets=8)
    app.node("a", func="checksum", factor=8, args=[packets.out()])
    graph = app.to_dict()
    assert graph["network_config"] == {
        "buffer_depth": 128,
        "start_port": "port",
        "packet_length": 64,
        "frame_packets": 8,
    }
    assert graph["nodes"][0]["args"][0]["predecessor"]["name"] == "$network"
    with pytest.raises(ValueError, match="frame_packets is required"):
        tm.Graph().network(start_port=1, packet_length=64)
    with pytest.raises(ValueError, match="unknown key"):
        tm.Graph().network(start_port=1, packet_length=64, frame_packets=1, port=3)


def test_a_port_in_use_is_an_error_naming_it() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as taken:
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        with pytest.raises(tm.ConfigError, match=f"udp 127.0.0.1:{port}: the port is in use"):
            pipeline("udp", port).run(dylib=SYNTHETIC, frames=1)


def test_bad_network_knobs_are_config_errors() -> None:
    app = pipeline("udp", free_port(socket.SOCK_DGRAM))
    with pytest.raises(tm.ConfigError, match="on_slots_busy"):
        app.run(dylib=SYNTHETIC, on_slots_busy="sometimes")
    with pytest.raises(tm.ConfigError, match="frame_window 2 is smaller than slots 4"):
        app.run(dylib=SYNTHETIC, slots=4, frame_window=2)


def test_knob_space_keeps_network_knobs_only_for_network_graphs() -> None:
    with_network = tm.knob_space(pipeline("udp", 9000).to_dict())
    assert "receiver_threads" in {k["name"] for k in with_network["knobs"]}
    plain = tm.knob_space(tm.graphs.fork_join(4, 2))
    assert "receiver_threads" not in {k["name"] for k in plain["knobs"]}
    assert "receiver_threads" in {k["name"] for k in plain["excluded"]}


def test_the_guide_example_runs(tmp_path: Path) -> None:
    done = run_documented_example(GUIDE, "## Frames from packets", tmp_path)
    assert done.returncode == 0, done.stderr
    assert "1600 accepted" in done.stdout, done.stdout


def test_mimo_uplink_reads_one_packet_per_antenna() -> None:
    cost = tm.graphs.Fixed(10)
    fed = tm.graphs.mimo_uplink(
        8, 4, 4, cost=cost, network={"start_port": 9000, "packet_length": 64}
    )
    assert fed["network_config"] == {"start_port": 9000, "packet_length": 64, "frame_packets": 8}
    fft = next(node for node in fed["nodes"] if node["name"] == "fft")
    assert {"type": "$res", "predecessor": {"name": "$network"}} in fft["args"]
    plain = tm.graphs.mimo_uplink(8, 4, 4, cost=cost)
    # Packets cost nothing: the shape's work and critical path are the same.
    assert tm.graphs.critical_path_us(fed) == tm.graphs.critical_path_us(plain)
    assert tm.graphs.total_work_us(fed) == tm.graphs.total_work_us(plain)
    with pytest.raises(ValueError, match="frame_packets"):
        tm.graphs.mimo_uplink(8, 4, 4, network={"start_port": 1, "frame_packets": 3})


def test_wait_listening_sees_a_bound_socket_and_times_out_naming_the_port() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as bound:
        bound.bind(("127.0.0.1", 0))
        net.wait_listening(socket_type="udp", start_port=bound.getsockname()[1], timeout=5)
    port = free_port(socket.SOCK_STREAM)
    with pytest.raises(tm.TomiiError, match=f"nothing listens on tcp port {port}"):
        net.wait_listening(socket_type="tcp", start_port=port, timeout=0.05)
