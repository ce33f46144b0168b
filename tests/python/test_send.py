"""`tomii.network.send`, the traffic generator: packets reach a UDP socket and a TCP listener of
the test (port 0 on 127.0.0.1) exactly as `packet()` predicts; a graph's network block gives the
settings (names of initializations resolved) and keywords override it; an iterable's bytes go as
they are; a closed port or a missing setting is an error that names it."""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import tomii as tm
import tomii.network as net


class Received:
    """Collects what a socket receives on its own thread, so that nothing is dropped meanwhile."""

    def __init__(self, target: Any, *args: Any) -> None:
        self.items: list[bytes] = []
        self._thread = threading.Thread(target=target, args=(self.items, *args), daemon=True)
        self._thread.start()

    def join(self) -> list[bytes]:
        self._thread.join(timeout=30)
        assert not self._thread.is_alive(), "the receiver did not finish within 30 s"
        return self.items


def _datagrams(items: list[bytes], sock: socket.socket, count: int) -> None:
    with sock:
        for _ in range(count):
            items.append(sock.recv(65536))


def _stream(items: list[bytes], listener: socket.socket) -> None:
    with listener:
        connection, _ = listener.accept()
    with connection:
        data = b""
        while chunk := connection.recv(65536):
            data += chunk
    while data:
        length = int.from_bytes(data[:4], "little")
        items.append(data[4 : 4 + length])
        data = data[4 + length :]


def udp_receiver(count: int) -> tuple[int, Received]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(30)
    return sock.getsockname()[1], Received(_datagrams, sock, count)


def tcp_receiver() -> tuple[int, Received]:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(30)
    return listener.getsockname()[1], Received(_stream, listener)


def generated(frames: range, frame_packets: int, packet_length: int) -> list[bytes]:
    return [net.packet(f, i, packet_length) for f in frames for i in range(frame_packets)]


def test_the_packet_helpers_follow_the_documented_format() -> None:
    assert net.header(0x0102030405060708, 77) == bytes.fromhex("0807060504030201") + bytes(
        [77, 0, 0, 0, 0, 0, 0, 0]
    )
    assert net.fill_payload(1, 2, 3) == bytes([193, 194, 195])
    assert net.fill_payload(1, 2, 300)[63] == 0
    assert net.packet(5, 1, 20) == net.header(5, 1) + net.fill_payload(5, 1, 4)
    with pytest.raises(ValueError, match="packet_length"):
        net.packet(0, 0, 8)


def test_generated_udp_packets_arrive_as_packet_predicts() -> None:
    port, received = udp_receiver(6)
    stats = net.send(
        socket_type="udp",
        start_port=port,
        packet_length=48,
        frame_packets=3,
        frames=2,
        first_frame=5,
    )
    assert (stats.packets, stats.bytes) == (6, 288)
    assert stats.packets_per_s > 0
    assert received.join() == generated(range(5, 7), 3, 48)


def network_graph(port: int, socket_type: str) -> tm.Graph:
    app = tm.Graph()
    start = app.var("start", port)
    per_frame = app.var("per_frame", 4)
    app.node("x", func="noop")
    app.network(
        socket_type=socket_type,
        address="127.0.0.1",
        start_port=start,
        num_sockets=1,
        packet_length=32,
        frame_packets=per_frame,
        index_function=tm.IndexFunc("index"),
    )
    return app


def test_a_graph_gives_tcp_settings_and_each_packet_is_length_prefixed() -> None:
    port, received = tcp_receiver()
    stats = net.send(network_graph(port, "tcp"), frames=2, rate=20_000)
    assert (stats.packets, stats.bytes) == (8, 256)
    assert received.join() == generated(range(2), 4, 32)


def test_a_graph_file_and_keyword_overrides(tmp_path: Path) -> None:
    port, received = udp_receiver(4)
    path = tmp_path / "network.json"
    path.write_text(json.dumps(network_graph(port, "tcp").to_dict()))
    stats = net.send(path, socket_type="udp", packet_length=20, frame_packets=2, frames=2)
    assert stats.packets == 4
    assert received.join() == generated(range(2), 2, 20)


def test_an_iterable_of_bytes_is_sent_in_order_as_it_is() -> None:
    port, received = udp_receiver(3)

    def packets() -> Iterator[bytes | bytearray | memoryview]:
        yield b"first"
        yield bytearray(b"second")
        yield memoryview(b"third!")

    stats = net.send(socket_type="udp", start_port=port, packets=packets())
    assert (stats.packets, stats.bytes) == (3, 17)
    assert received.join() == [b"first", b"second", b"third!"]


def test_a_file_of_packets_is_sent_as_it_is(tmp_path: Path) -> None:
    port, received = udp_receiver(3)
    data = [bytes([k]) * 24 for k in range(3)]
    path = tmp_path / "packets.bin"
    path.write_bytes(b"".join(data))
    stats = net.send(socket_type="udp", start_port=port, packet_length=24, path=path)
    assert stats.packets == 3
    assert received.join() == data


def test_the_iterables_own_exception_reaches_the_caller() -> None:
    port, received = udp_receiver(1)

    def packets() -> Iterator[bytes]:
        yield b"one"
        raise KeyError("no more packets")

    with pytest.raises(KeyError, match="no more packets"):
        net.send(socket_type="udp", start_port=port, packets=packets())
    assert received.join() == [b"one"]
    with pytest.raises(tm.ConfigError, match=r"packets\[0\]: a int is not bytes-like"):
        net.send(socket_type="udp", start_port=port, packets=[5])  # type: ignore[list-item]
    with pytest.raises(tm.ConfigError, match=r"packets\[1\] is 2 bytes, not packet_length \(3\)"):
        net.send(socket_type="udp", start_port=port, packet_length=3, packets=[b"abc", b"de"])


def closed_tcp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_a_closed_tcp_port_is_named() -> None:
    port = closed_tcp_port()
    with pytest.raises(
        tm.TomiiError, match=f"cannot connect to tcp 127.0.0.1:{port}: connection refused"
    ):
        net.send(socket_type="tcp", start_port=port, packet_length=32, frame_packets=1)


def test_missing_and_invalid_settings_are_named(tmp_path: Path) -> None:
    with pytest.raises(tm.ConfigError, match="start_port is required"):
        net.send(socket_type="udp", packet_length=32, frame_packets=1)
    with pytest.raises(tm.ConfigError, match="packet_length: 8 bytes is shorter"):
        net.send(socket_type="udp", start_port=9, packet_length=8, frame_packets=1)
    with pytest.raises(tm.ConfigError, match="socket_type"):
        net.send(socket_type="sctp", start_port=9, packet_length=32, frame_packets=1)
    plain = tm.Graph()
    plain.node("x", func="noop")
    with pytest.raises(tm.ConfigError, match="no network_config"):
        net.send(plain)
    graph: dict[str, Any] = {
        "initializations": [{"name": "p", "function": "pick_port", "args": []}],
        "nodes": [{"name": "x", "function": "noop"}],
        "network_config": {"socket_type": "udp", "start_port": "p"},
    }
    with pytest.raises(tm.ConfigError, match="network_config.start_port names initialization 'p'"):
        net.send(graph, packet_length=32, frame_packets=1)


def test_a_rate_outside_its_range_a_fifo_and_a_device_are_refused(tmp_path: Path) -> None:
    shape: dict[str, Any] = {"socket_type": "udp", "start_port": 9, "packet_length": 32}
    for rate in (1e-9, 1e12):
        with pytest.raises(
            tm.ConfigError, match=r"rate: .* packets/s is outside 0\.01\.\.1000000000"
        ):
            net.send(**shape, frame_packets=1, frames=2, rate=rate)
    fifo = tmp_path / "packets.fifo"
    os.mkfifo(fifo)
    with pytest.raises(tm.ConfigError, match="is a FIFO, not a regular file"):
        net.send(**shape, path=fifo)
    with pytest.raises(tm.ConfigError, match="is a character device, not a regular file"):
        net.send(**shape, path="/dev/zero")


def test_ctrl_c_stops_a_send_waiting_for_its_next_packet() -> None:
    # One packet every 100 s: Ctrl-C after the first one ends the wait for the second at once.
    port, received = udp_receiver(1)

    def interrupt() -> None:
        deadline = time.monotonic() + 30
        while not received.items and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt, daemon=True).start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        net.send(
            socket_type="udp",
            start_port=port,
            packet_length=32,
            frame_packets=1,
            frames=5,
            rate=0.01,
        )
    assert time.monotonic() - started < 20
    assert len(received.join()) == 1
