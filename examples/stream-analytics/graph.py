"""The stream-analytics graph: read (S) -> stats (S) -> detect (S, only where the window's maximum
exceeds the threshold) -> group (S / G, each reading G stats and G detect results through
group_by) -> alert (1, high priority) and report (1, low priority), both reading every group;
a post-node, totals, reads the run's tally after the last frame.

The tally is a computed initialization (`sa_tally_new`, once per run): alert adds each frame's
checks and anomalies to it, and totals returns them.
"""

from __future__ import annotations

import readings

import tomii


def build(p: readings.Params) -> tomii.Graph:
    """The graph of S = p.sensors sensors in groups of G = p.group."""
    app = tomii.Graph(name="stream-analytics")
    tally = app.var("tally", func="sa_tally_new")
    signal = [tomii.u64(p.seed), p.window, p.period, p.noise, p.spike, p.rate]
    read = app.node("read", func="sa_read", factor=p.sensors, args=signal)
    stats = app.node("stats", func="sa_stats", factor=p.sensors, args=[read.out()])
    peak = tomii.Condition("Gt", p.threshold, "f64", "sa_peak", [stats.out()])
    detect = app.node(
        "detect",
        func="sa_detect",
        factor=p.sensors,
        args=[read.out(), p.z_limit],
        condition=peak,
    )
    groups = p.sensors // p.group
    group = app.node(
        "group",
        func="sa_group",
        factor=groups,
        args=[stats.out(group_by=p.group), detect.out(group_by=p.group)],
    )
    every = group.out(every=True)
    app.node("alert", func="sa_alert", priority="high", args=[tally, p.group, every])
    app.node(
        "report", func="sa_report", priority="low", args=[p.group, stats.out(every=True), every]
    )
    app.post_node("totals", func="sa_totals", args=[tally])
    return app
