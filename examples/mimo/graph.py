"""The MIMO uplink graph, built with the Python builder: `$network` (one packet per antenna and
symbol) → fft → csi (every pilot FFT) → beam (per subcarrier block) → demul (per data symbol and
block) → collect. README.md ("The graph") draws it; the kernels are those of kernels/src/lib.rs.
Building the graph runs nothing.
"""

from __future__ import annotations

import phy

import tomii


def mimo_graph(
    antennas: int,
    users: int,
    *,
    subcarriers: int = 192,
    fft_size: int = 256,
    data_symbols: int = 8,
    block: int = 16,
    bits: int = 4,
    port: int = 9600,
    address: str = "127.0.0.1",
) -> tomii.Graph:
    """The uplink of `antennas` × `users` for frames of `users` pilot and `data_symbols` data
    symbols, received as UDP packets on `address`:`port`. Raises ValueError for sizes that cannot
    work (phy.Numerology.check)."""
    n = phy.Numerology(antennas, users, subcarriers, fft_size, data_symbols, block, bits)
    n.check()
    return build(n, port=port, address=address)


def build(n: phy.Numerology, *, port: int, address: str = "127.0.0.1") -> tomii.Graph:
    """The graph of numerology `n` (already checked)."""
    app = tomii.Graph()
    plan = app.var("ofdm", func="ofdm_plan", args=[n.fft_size, n.subcarriers, n.antennas])
    packets = app.network(
        socket_type="udp",
        address=address,
        start_port=port,
        num_sockets=1,
        packet_length=n.packet_length,
        frame_packets=n.frame_packets,
    )
    # Instance i = symbol · antennas + antenna reads packet i as soon as it arrives.
    fft = app.node("fft", func="fft", factor=n.frame_packets, args=[plan, packets.out(0)])
    # Every csi block reads the first A·U FFTs: the pilot symbols of every antenna.
    pilots = fft.out(group_by={"size": n.antennas * n.users, "shared": n.blocks})
    csi = app.node("csi", func="csi", factor=n.blocks, args=[n.block, n.users, pilots], priority=1)
    beam = app.node("beam", func="beam", factor=n.blocks, args=[csi.out(0)], priority=1)
    # demul instance d · blocks + b: block b's beamweights and data symbol d's FFT per antenna.
    symbol = fft.out(
        group_by={"size": n.antennas, "from": n.antennas * n.users, "shared": n.blocks}
    )
    demul = app.node(
        "demul",
        func="demul",
        factor=n.data_symbols * n.blocks,
        args=[beam.out(0, wrap=True), n.bits, symbol],
    )
    app.node(
        "collect",
        func="collect",
        args=[packets.out(instance=0), n.users, n.blocks, demul.out(every=True)],
    )
    return app
