"""Packets for a graph's network source: `send` is the traffic generator (`tomii send` in Python),
and `header`, `fill_payload` and `packet` build the bytes it generates, so that a test can predict
every packet a receiver sees.

    import tomii.network as net

    stats = net.send("graph.json", frames=100, rate=50_000)  # the graph's network_config
    net.send(socket_type="udp", start_port=9000, packets=[b"...", b"..."])

A generated packet is `packet_length` bytes: a 16-byte header (frame id as u64, index in the frame
as u32, little-endian, then 4 zero bytes) and a payload whose byte k is
`(131 * frame + 31 * index + k) % 256`. Packet `index` goes to port `start_port + index % num_sockets`;
over TCP each packet is preceded by its length as a little-endian u32. Sending happens in
tomii-core with the GIL released.
"""

from __future__ import annotations

import json
import os
import struct
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union

from ._tomii import send_packets
from .errors import ConfigError, TomiiError
from .graph import Graph

__all__ = [
    "HEADER_LEN",
    "SendStats",
    "fill_payload",
    "header",
    "packet",
    "send",
    "wait_listening",
]

#: Bytes of the packet header: frame id (u64), index (u32), 4 zero bytes, all little-endian.
HEADER_LEN = 16

_HEADER = struct.Struct("<QI4x")
_RAMP = bytes(range(256))

#: What `send(graph)` accepts as a graph: a builder, a graph-format dict, or a graph JSON file.
GraphLike = Union[Graph, Mapping[str, Any], str, "os.PathLike[str]"]
#: A packet of `send(packets=...)`.
BytesLike = Union[bytes, bytearray, memoryview]

#: The `network_config` fields `send` reads, and whether each holds an integer.
_FIELDS = {
    "socket_type": False,
    "address": False,
    "start_port": True,
    "num_sockets": True,
    "packet_length": True,
    "frame_packets": True,
}


@dataclass(frozen=True)
class SendStats:
    """What `send` did: packets and their bytes (without TCP's length prefixes), in `seconds`."""

    packets: int
    bytes: int
    seconds: float

    @property
    def packets_per_s(self) -> float:
        return self.packets / max(self.seconds, 1e-9)


def _check_int(
    name: str, value: object, low: int, high: int, error: type[Exception] = ValueError
) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if not low <= value <= high:
        raise error(f"{name} must be in {low}..{high}, got {value}")
    return value


def header(frame: int, index: int) -> bytes:
    """The 16-byte header of packet `index` of frame `frame`."""
    return _HEADER.pack(
        _check_int("frame", frame, 0, 2**64 - 1), _check_int("index", index, 0, 2**32 - 1)
    )


def fill_payload(frame: int, index: int, length: int) -> bytes:
    """The `length` payload bytes of generated packet `index` of frame `frame` (after its header):
    byte k is `(131 * frame + 31 * index + k) % 256`."""
    _check_int("length", length, 0, 2**63 - 1)
    start = (131 * frame + 31 * index) % 256
    repeats = (start + length) // 256 + 1
    return (_RAMP * repeats)[start : start + length]


def packet(frame: int, index: int, packet_length: int) -> bytes:
    """Generated packet `index` of frame `frame`, `packet_length` bytes: header, then payload."""
    _check_int("packet_length", packet_length, HEADER_LEN, 2**63 - 1)
    return header(frame, index) + fill_payload(frame, index, packet_length - HEADER_LEN)


def _graph_dict(graph: GraphLike) -> tuple[Mapping[str, Any], str]:
    """The graph as a graph-format dict, and how errors name it."""
    if isinstance(graph, Graph):
        return graph.to_dict(), "the graph"
    if isinstance(graph, Mapping):
        return graph, "the graph"
    if isinstance(graph, (str, os.PathLike)):
        path = Path(graph)
        try:
            return json.loads(path.read_text()), str(path)
        except OSError as error:
            raise ConfigError(f"{path}: cannot read the graph: {error.strerror}") from error
        except json.JSONDecodeError as error:
            raise ConfigError(f"{path}: not valid JSON: {error}") from error
    raise TypeError(f"graph must be a tomii.Graph, a dict or a path, got {type(graph).__name__}")


def _literal(value: Any) -> Any:
    """The value of an initialization's literal; a typed one {"type", "value"} holds it inside."""
    if isinstance(value, Mapping) and "value" in value:
        return value["value"]
    return value


def _network_settings(graph: GraphLike) -> dict[str, Any]:
    """The sender's fields of the graph's `network_config`, names of initializations resolved."""
    spec, where = _graph_dict(graph)
    config = spec.get("network_config")
    if not isinstance(config, Mapping):
        raise ConfigError(
            f"{where}: has no network_config block; give socket_type, start_port, packet_length "
            "and frame_packets as keywords"
        )
    inits = {i.get("name"): i for i in spec.get("initializations") or [] if isinstance(i, Mapping)}
    settings: dict[str, Any] = {}
    for field, integer in _FIELDS.items():
        value = config.get(field)
        if value is None:
            continue
        if isinstance(value, str) and value in inits:
            if "value" not in inits[value]:
                raise ConfigError(
                    f"{where}: network_config.{field} names initialization {value!r}, which a "
                    f"kernel computes; the sender needs a literal value: give {field}="
                )
            value = _literal(inits[value]["value"])
        if integer and (isinstance(value, bool) or not isinstance(value, int)):
            raise ConfigError(
                f"{where}: network_config.{field} is {value!r}: neither an integer nor the name "
                "of an initialization"
            )
        if not integer and not isinstance(value, str):
            raise ConfigError(f"{where}: network_config.{field} is {value!r}: not a string")
        settings[field] = value
    return settings


def send(
    graph: GraphLike | None = None,
    *,
    socket_type: str | None = None,
    address: str | None = None,
    start_port: int | None = None,
    num_sockets: int | None = None,
    packet_length: int | None = None,
    frame_packets: int | None = None,
    frames: int = 1,
    first_frame: int = 0,
    rate: float | None = None,
    packets: Iterable[BytesLike] | None = None,
    path: str | os.PathLike[str] | None = None,
) -> SendStats:
    """Sends packets to a network source and returns what it sent.

    `graph` (a `tomii.Graph`, a graph-format dict or a graph JSON file) gives `socket_type`
    ("udp" or "tcp"), `address`, `start_port`, `num_sockets`, `packet_length` and `frame_packets`
    from its `network_config` block, names of initializations resolved; keywords override it.
    `address` defaults to 127.0.0.1 and `num_sockets` to 1. `rate` is in packets per second,
    from 0.01 to 1e9 (None: as fast as the sockets take them).

    The packets are `packets` (an iterable of bytes-like objects, sent in order, round robin over
    the sockets; each must be `packet_length` bytes when that is known), else those of the file
    `path` (a regular file, read up to the size it has when the send starts: back to back, each
    `packet_length` bytes, sent as they are), else generated: frames
    `first_frame .. first_frame + frames`, each of `frame_packets` packets (see `packet`).

    Ctrl-C stops the send within a quarter of a second, even while it waits for the next packet
    of a slow rate (KeyboardInterrupt). Raises ConfigError for a missing or invalid setting or
    file (a FIFO or a device as `path`), TomiiError when a socket fails (naming its address and
    port), and whatever the `packets` iterable raises.
    """
    given = {
        "socket_type": socket_type,
        "address": address,
        "start_port": start_port,
        "num_sockets": num_sockets,
        "packet_length": packet_length,
        "frame_packets": frame_packets,
    }
    settings = _network_settings(graph) if graph is not None else {}
    settings.update({k: v for k, v in given.items() if v is not None})
    if packets is not None and path is not None:
        raise ConfigError("send(): give packets or path, not both")
    needed = ["socket_type", "start_port"]
    if packets is None:
        needed.append("packet_length")
    if packets is None and path is None:
        needed.append("frame_packets")
    for name in needed:
        if name not in settings:
            where = (
                "or a graph whose network_config has it"
                if graph is None
                else "(the graph has none)"
            )
            raise ConfigError(f"send(): {name} is required: give {name}= {where}")
    if not isinstance(settings["socket_type"], str):
        raise TypeError(f"socket_type must be a str, got {type(settings['socket_type']).__name__}")

    def setting(name: str, low: int, high: int) -> int | None:
        value = settings.get(name)
        return None if value is None else _check_int(name, value, low, high, ConfigError)

    if rate is not None and not (isinstance(rate, (int, float)) and not isinstance(rate, bool)):
        raise TypeError(f"rate must be a number of packets per second, got {type(rate).__name__}")
    packets_done, bytes_done, seconds = send_packets(
        socket_type=settings["socket_type"],
        address=str(settings.get("address", "127.0.0.1")),
        start_port=_check_int("start_port", settings["start_port"], 1, 65535, ConfigError),
        num_sockets=setting("num_sockets", 1, 65535) or 1,
        packet_length=setting("packet_length", 0, 2**63 - 1),
        frame_packets=setting("frame_packets", 1, 2**32 - 1),
        frames=_check_int("frames", frames, 1, 2**64 - 1, ConfigError),
        first_frame=_check_int("first_frame", first_frame, 0, 2**64 - 1, ConfigError),
        rate=None if rate is None else float(rate),
        path=None if path is None else os.fspath(path),
        packets=packets,
    )
    return SendStats(packets=packets_done, bytes=bytes_done, seconds=seconds)


def _listening_ports(socket_type: str) -> set[int]:
    """The local ports of this machine's sockets of `socket_type` that take packets now: bound UDP
    sockets, listening TCP ones (from /proc/net, which lists them without touching them)."""
    ports: set[int] = set()
    for table in (f"/proc/net/{socket_type}", f"/proc/net/{socket_type}6"):
        try:
            lines = Path(table).read_text(encoding="ascii").splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 3 and (socket_type == "udp" or fields[3] == "0A"):  # 0A: LISTEN
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def wait_listening(
    graph: GraphLike | None = None,
    *,
    socket_type: str | None = None,
    start_port: int | None = None,
    num_sockets: int | None = None,
    timeout: float = 10.0,
) -> None:
    """Waits until a network source listens on its ports: for a run started in another thread or
    process, before `send`. `graph` and the keywords are `send`'s. Looks at the system's socket
    tables (Linux), never at the ports themselves, so it cannot take a port from the run. Raises
    TomiiError after `timeout` seconds."""
    given = {"socket_type": socket_type, "start_port": start_port, "num_sockets": num_sockets}
    settings = _network_settings(graph) if graph is not None else {}
    settings.update({k: v for k, v in given.items() if v is not None})
    kind = str(settings.get("socket_type", "udp")).lower()
    if kind not in ("udp", "tcp"):
        raise ConfigError(f"wait_listening(): socket_type {kind!r} is not 'udp' or 'tcp'")
    if "start_port" not in settings:
        raise ConfigError("wait_listening(): start_port is required: give start_port= or a graph")
    first = _check_int("start_port", settings["start_port"], 1, 65535, ConfigError)
    wanted = set(range(first, first + int(settings.get("num_sockets") or 1)))
    deadline = time.monotonic() + timeout
    while not wanted <= _listening_ports(kind):
        if time.monotonic() > deadline:
            ports = f"{first}" if len(wanted) == 1 else f"{first}-{max(wanted)}"
            raise TomiiError(f"nothing listens on {kind} port {ports} after {timeout} s")
        time.sleep(0.005)
