"""The trace view in a real browser (headless Chromium without network, `browser.py`): a lane
per worker and per slot, a bar per task and per frame, bars coloured by frame, details on click,
zoom on the time axis, nothing loaded; the same page from the trace in memory, its CSV file and
its Chrome trace file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser import WebDriver, chromium, page_errors, wait_for
from reference import GRAPHS, SYNTHETIC
from selenium.webdriver.common.by import By

import tomii
from tomii.trace_view import MAX_TASKS, load_trace, trace_payload

READY = "return document.querySelector('#timeline').getAttribute('data-ready') === 'true'"
RUN: dict[str, Any] = {"dylibs": [SYNTHETIC], "workers": 2, "slots": 2, "frames": 6}


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    with chromium() as session:
        yield session


def show(browser: WebDriver, page: Path) -> None:
    page_errors(browser)
    browser.get(page.as_uri())
    wait_for(browser, READY)


def count(browser: WebDriver, selector: str) -> int:
    return len(browser.find_elements(By.CSS_SELECTOR, selector))


def test_lanes_bars_colours_and_details(browser: WebDriver, tmp_path: Path) -> None:
    result = tomii.run_graph(GRAPHS / "diamond.json", trace=True, **RUN)
    assert result.trace is not None
    page = result.view_trace(html_path=tmp_path / "trace.html")
    assert "://" not in page.read_text().split("tomii-payload")[0]
    show(browser, page)
    assert count(browser, "svg#timeline g.lane") == 2
    assert count(browser, "svg#timeline g.frame-lane") == 2
    assert count(browser, "rect.task") == len(result.trace) == 18
    assert count(browser, "rect.frame") == 6
    fills: dict[str, set[str]] = {}
    for bar in browser.find_elements(By.CSS_SELECTOR, "rect.task"):
        fills.setdefault(bar.get_attribute("data-frame") or "", set()).add(
            bar.value_of_css_property("fill")
        )
    assert all(len(colours) == 1 for colours in fills.values()), fills
    assert len({next(iter(colours)) for colours in fills.values()}) == 6
    first = browser.find_element(By.CSS_SELECTOR, "rect.task")
    browser.execute_script(
        "arguments[0].dispatchEvent(new MouseEvent('click', {bubbles: true}))", first
    )
    detail = browser.find_element(By.CSS_SELECTOR, "#details [data-field=node]")
    assert detail.text == first.get_attribute("data-node")
    assert page_errors(browser) == []


def test_zoom_widens_the_bars(browser: WebDriver, tmp_path: Path) -> None:
    result = tomii.run_graph(GRAPHS / "diamond.json", trace=True, **RUN)
    show(browser, result.view_trace(html_path=tmp_path / "trace.html"))
    width = "return Math.max(...[...document.querySelectorAll('rect.task')].map(r => +r.getAttribute('width')))"
    before = browser.execute_script(width)
    browser.execute_script(
        "const svg = document.querySelector('#timeline');"
        "const box = svg.getBoundingClientRect();"
        "for (let i = 0; i < 5; i++) svg.dispatchEvent(new WheelEvent('wheel', {bubbles: true,"
        " deltaY: -500, clientX: box.left + box.width / 2, clientY: box.top + 40}));"
    )
    assert browser.execute_script(width) > before * 2


def test_files_of_either_format_give_the_same_page(browser: WebDriver, tmp_path: Path) -> None:
    csv, chrome = tmp_path / "t.csv", tmp_path / "t.json"
    result = tomii.run_graph(GRAPHS / "diamond.json", trace=True, **RUN)
    result.save_trace(csv)
    result.save_trace(chrome, format="chrome")
    from_csv, from_chrome = load_trace(csv), load_trace(chrome)
    assert len(from_csv["tasks"]) == len(from_chrome["tasks"]) == 18
    assert from_csv["frames"] == from_chrome["frames"]
    # A CSV does not say how many workers ran: its lanes are those up to the last that ran a task.
    workers = {"csv": max(t[0] for t in from_csv["tasks"]) + 1, "json": 2}
    for path in (csv, chrome):
        page = tomii.view_trace(path, html_path=tmp_path / f"{path.suffix[1:]}.html")
        show(browser, page)
        assert count(browser, "rect.task") == 18
        assert count(browser, "g.lane") == workers[path.suffix[1:]]


def test_a_long_trace_is_cut_with_a_note() -> None:
    tasks = [(0, k, k + 1, 0, 0, k, 0, k) for k in range(MAX_TASKS + 5)]
    payload = trace_payload(tasks, ["a"], title="long")
    assert len(payload["tasks"]) == MAX_TASKS
    assert payload["total_tasks"] == MAX_TASKS + 5
    assert len(payload["frames"]) == MAX_TASKS + 5


def test_a_file_that_is_no_trace_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    with pytest.raises(tomii.TomiiError, match="bad.csv: not a trace"):
        load_trace(bad)
    with pytest.raises(tomii.TomiiError, match="missing.csv: cannot read the trace"):
        load_trace(tmp_path / "missing.csv")


def test_the_command_writes_the_page(tmp_path: Path) -> None:
    import subprocess
    import sys

    trace = tmp_path / "t.csv"
    tomii.run_graph(GRAPHS / "diamond.json", trace=trace, **RUN)
    page = tmp_path / "page.html"
    done = subprocess.run(
        [sys.executable, "-m", "tomii", "--view-trace", str(trace), "--save", str(page)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, ""), done.stderr
    assert "wrote the trace view" in done.stderr
    assert 'id="timeline"' in page.read_text()
    bad = subprocess.run(
        [sys.executable, "-m", "tomii", "--view-trace", str(tmp_path / "none.csv")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 1
    assert bad.stderr.startswith("error: ") and bad.stderr.count("\n") == 1, bad.stderr
