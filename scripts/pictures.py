"""The README's pictures, made by the package itself: the graph view and the trace view as headless
Chromium renders them (the browser of the tests, `tests/python/browser.py`), and the speed-up
figure of a small sweep. Nothing is drawn by hand.

    .venv-test/bin/python scripts/pictures.py        # after `bash scripts/test.sh setup python`

Writes docs/pictures/{graph,trace,speedup}.png. Needs the package (maturin develop or pip install),
the Rust workspace built (the schedulers and the synthetic kernels), chromium and chromium-driver.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "python"))

from browser import chromium, wait_for

import tomii
from tomii.experiments import sweep
from tomii.experiments.plot import plot
from tomii.graph_view import load_graph_file, write_graph_page
from tomii.graphs import LogNormal, fork_join, streaming_pipeline

OUT = ROOT / "docs" / "pictures"
SYNTHETIC = ROOT / "target" / "debug" / "libtomii_synthetic.so"


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="tomii-pictures-"))
    graph, _notes = load_graph_file(ROOT / "examples" / "compat" / "stream_analytics.json")
    pages = {"graph": write_graph_page(graph, work / "graph.html", title="stream_analytics.json")}
    pipeline = streaming_pipeline(width=8, cost=LogNormal(40, 0.5), seed=1)
    traced = tomii.run_graph(
        pipeline, dylibs=[SYNTHETIC], workers=2, slots=3, frames=12, trace=True
    )
    pages["trace"] = traced.view_trace(html_path=work / "trace.html")
    with chromium() as browser:
        for name, page in pages.items():
            browser.get(page.as_uri())
            svg = "graph" if name == "graph" else "timeline"
            wait_for(browser, f"return document.querySelector('#{svg}') !== null")
            if name == "graph":
                wait_for(
                    browser, "return document.querySelector('#graph').dataset.ready === 'true'"
                )
            browser.save_screenshot(str(OUT / f"{name}.png"))
            print(f"wrote {OUT / f'{name}.png'}")
    graphs = [pipeline, fork_join(width=8, depth=3, cost=LogNormal(40, 0.5), seed=1)]
    result = sweep(
        ["fifo", "work-stealing", "critical-path"],
        graphs,
        {"workers": [2], "slots": [4]},
        repeats=6,
        frames=100,
        out=work / "sweep",
        progress=False,
    )
    written = plot(result.rows, result.frames, result.traces, out_dir=work / "sweep")
    figure = next(path for path in written if path.name == "speedup.png")
    shutil.copy(figure, OUT / "speedup.png")
    print(f"wrote {OUT / 'speedup.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
