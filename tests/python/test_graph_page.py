"""The graph view in a real browser (headless Chromium without network, `browser.py`): a node
element per node and an edge element per edge, each kind styled apart, details on click, nothing
loaded from anywhere; and, through the editor's server, an edit saved from the page is a graph the
runtime loads, while an edit the parser refuses shows its message and writes nothing."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser import WebDriver, chromium, page_errors, wait_for
from reference import GRAPHS, ROOT
from selenium.webdriver.common.by import By

import tomii
from tomii.export_python import builder_script
from tomii.graph_editor import GraphEditor
from tomii.graph_view import load_graph_file, write_graph_page

FANOUT = ROOT / "examples" / "graphs" / "fanout.json"
PAGES = [
    FANOUT,
    ROOT / "examples" / "graphs" / "packets.json",
    GRAPHS / "post_node.json",
    GRAPHS / "loop.json",
    GRAPHS / "v12" / "every_construct.json",
]
EDGE_KINDS = ("$res", "$dep", "$barrier")
READY = "return document.querySelector('#graph').getAttribute('data-ready') === 'true'"


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    with chromium() as session:
        yield session


def show(browser: WebDriver, page: Path | str) -> None:
    """Loads `page` (a file or the editor's URL) and waits until the graph is drawn; the
    console's earlier messages are dropped."""
    page_errors(browser)
    browser.get(page if isinstance(page, str) else page.as_uri())
    wait_for(browser, READY)


def every_kind() -> dict[str, Any]:
    """A graph with every node kind and edge kind (a source with inputs, nodes reading them)."""
    graph = tomii.Graph(name="kinds")
    samples = graph.input("samples", factor=2)
    scale = graph.node("scale", func="checksum", factor=2, args=[samples.out()], priority="high")
    odd = graph.node(
        "odd",
        func="checksum",
        factor=2,
        args=[scale.dep()],
        condition=tomii.Condition("Eq", 1, "u64", "modulo", [tomii.INDEX, tomii.u64(2)]),
    )
    total = graph.node(
        "total", func="checksum", args=[scale.out(0, 2, wrap=False), odd.wait(every=True)]
    )
    graph.post_node("report", func="checksum", args=[total.out()])
    return graph.to_dict()


def drawn_vertices(graph: dict[str, Any]) -> Counter[tuple[str, str]]:
    kinds = [("input", spec) for spec in graph.get("inputs", [])]
    kinds += [("post", spec) for spec in graph.get("post_nodes", [])]
    for spec in graph["nodes"]:
        kinds.append(("conditional" if "condition" in spec else "compute", spec))
    vertices = Counter((spec["name"], kind) for kind, spec in kinds)
    if "network_config" in graph:
        vertices[("$network", "network")] += 1
    return vertices


def drawn_edges(graph: dict[str, Any]) -> Counter[tuple[str, str, str]]:
    edges: Counter[tuple[str, str, str]] = Counter()
    for spec in graph["nodes"] + graph.get("post_nodes", []):
        args = spec.get("args", []) + spec.get("loop_args", [])
        args += spec.get("condition", {}).get("args", [])
        for arg in args:
            if isinstance(arg, dict) and arg.get("type") in EDGE_KINDS:
                edges[(arg["predecessor"]["name"], spec["name"], arg["type"])] += 1
    return edges


def page_vertices(browser: WebDriver) -> Counter[tuple[str, str]]:
    found = browser.execute_script(
        "return [...document.querySelectorAll('#graph g.node')]"
        ".map(g => [g.dataset.name, g.getAttribute('class')])"
    )
    kinds: Counter[tuple[str, str]] = Counter()
    for name, classes in found:
        (kind,) = [c[len("node--") :] for c in classes.split() if c.startswith("node--")]
        kinds[(name, kind)] += 1
    return kinds


def page_edges(browser: WebDriver) -> Counter[tuple[str, str, str]]:
    found = browser.execute_script(
        "return [...document.querySelectorAll('#graph path.edge')]"
        ".map(p => [p.dataset.from, p.dataset.to, p.dataset.kind, p.getAttribute('class')])"
    )
    for _, _, kind, classes in found:
        assert f"edge--{kind[1:]}" in classes.split()
    return Counter((source, target, kind) for source, target, kind, _ in found)


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.name)
def test_a_node_element_per_node_and_an_edge_element_per_edge(
    browser: WebDriver, tmp_path: Path, path: Path
) -> None:
    graph = load_graph_file(path, workers=2)[0]
    show(browser, write_graph_page(graph, tmp_path / "page.html"))
    assert page_vertices(browser) == drawn_vertices(graph)
    assert page_edges(browser) == drawn_edges(graph)
    assert page_errors(browser) == []


def test_the_page_loads_nothing_but_itself(browser: WebDriver, tmp_path: Path) -> None:
    show(browser, write_graph_page(every_kind(), tmp_path / "page.html"))
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0
    linked = browser.execute_script(
        "return [...document.querySelectorAll('[src], [href]')]"
        ".map(e => e.getAttribute('src') || e.getAttribute('href'))"
    )
    assert all(link.startswith(("data:", "#")) for link in linked), linked
    assert page_errors(browser) == []


def test_each_kind_has_its_own_style(browser: WebDriver, tmp_path: Path) -> None:
    show(browser, write_graph_page(every_kind(), tmp_path / "kinds.html"))
    network = load_graph_file(ROOT / "examples" / "graphs" / "packets.json")[0]
    node_style = (
        "const s = getComputedStyle(document.querySelector('#graph g.node--' + arguments[0] +"
        " ' rect')); return [s.fill, s.stroke, s.strokeDasharray, s.strokeWidth].join(' ')"
    )
    styles = {kind: browser.execute_script(node_style, kind) for kind in ("compute", "conditional")}
    styles |= {kind: browser.execute_script(node_style, kind) for kind in ("post", "input")}
    edge_style = (
        "const s = getComputedStyle(document.querySelector('#graph path.edge--' + arguments[0]));"
        " return [s.stroke, s.strokeDasharray, s.strokeWidth].join(' ')"
    )
    edges = {kind: browser.execute_script(edge_style, kind) for kind in ("res", "dep", "barrier")}
    show(browser, write_graph_page(network, tmp_path / "network.html"))
    styles["network"] = browser.execute_script(node_style, "network")
    assert len(set(styles.values())) == 5, styles
    assert len(set(edges.values())) == 3, edges


def test_factors_and_priorities_are_on_the_nodes(browser: WebDriver, tmp_path: Path) -> None:
    graph = load_graph_file(GRAPHS / "v12" / "every_construct.json", workers=2)[0]
    show(browser, write_graph_page(graph, tmp_path / "page.html"))
    box = browser.find_element(By.CSS_SELECTOR, '#graph g.node[data-name="gen"]')
    assert [t.text for t in box.find_elements(By.TAG_NAME, "text")] == [
        "gen",
        "checksum × width (4)",
        "priority high · workers 0-1",
    ]


def details(browser: WebDriver) -> dict[str, str]:
    fields = browser.find_elements(By.CSS_SELECTOR, "#details [data-field]")
    return {f.get_attribute("data-field") or "": f.text for f in fields}


def test_a_click_on_a_node_shows_its_details(browser: WebDriver, tmp_path: Path) -> None:
    graph = load_graph_file(GRAPHS / "v12" / "every_construct.json", workers=2)[0]
    show(browser, write_graph_page(graph, tmp_path / "page.html"))
    browser.find_element(By.CSS_SELECTOR, '#graph g.node[data-name="gen"] rect').click()
    shown = details(browser)
    assert shown["function"] == "checksum"
    assert shown["factor"] == "width (4)"
    assert shown["priority"] == "high"
    assert shown["use_workers"] == "0-1"
    assert shown["args"].splitlines()[:2] == ["$index", "$workers"]
    assert shown["args"].splitlines()[-1] == "$dep ← values (same instance, wrapping)"
    assert (shown["condition"], shown["loop"], shown["group_size"]) == ("none", "none", "1")
    browser.find_element(By.CSS_SELECTOR, '#graph g.node[data-name="looped"] rect').click()
    assert details(browser)["loop"] == "it × two (2)"
    browser.find_element(By.CSS_SELECTOR, '#graph g.node[data-name="odd"] rect').click()
    assert details(browser)["condition"] == "modulo($index, u64 2) Eq 1 u64"
    assert details(browser)["kind"] == "conditional node"
    browser.find_element(By.CSS_SELECTOR, '#graph g.node[data-name="pairs"] rect').click()
    assert details(browser)["group_size"] == "2"
    assert page_errors(browser) == []


def test_export_python_shows_the_builder_script(browser: WebDriver, tmp_path: Path) -> None:
    graph = load_graph_file(FANOUT)[0]
    show(browser, write_graph_page(graph, tmp_path / "page.html"))
    browser.find_element(By.ID, "export-python").click()
    script = browser.find_element(By.ID, "python-script").get_property("value")
    assert script == builder_script(graph)
    link = browser.find_element(By.ID, "python-download")
    assert link.get_attribute("download") == "fanout.py"
    assert (link.get_attribute("href") or "").startswith("blob:")


# Editing, through the editor's server.


@pytest.fixture
def editor(tmp_path: Path) -> Iterator[GraphEditor]:
    with GraphEditor(load_graph_file(FANOUT)[0], tmp_path / "edited.json") as served:
        yield served


def fill(browser: WebDriver, form: str, values: dict[str, str]) -> None:
    for name, value in values.items():
        control = browser.find_element(By.CSS_SELECTOR, f"#{form} [name={name}]")
        if control.tag_name == "select":
            browser.execute_script("arguments[0].value = arguments[1]", control, value)
        else:
            control.clear()
            control.send_keys(value)
    browser.find_element(By.CSS_SELECTOR, f"#{form} button[type=submit]").click()


def saved_status(browser: WebDriver) -> tuple[str, str]:
    browser.find_element(By.ID, "save").click()
    wait_for(
        browser, "return /status--(ok|error)/.test(document.getElementById('status').className)"
    )
    status = browser.find_element(By.ID, "status")
    return status.get_attribute("class") or "", status.text


def test_an_edit_saved_from_the_page_is_a_graph_the_runtime_loads(
    browser: WebDriver, editor: GraphEditor
) -> None:
    show(browser, editor.url)
    fill(browser, "add-node", {"name": "extra", "function": "spin", "factor": "2"})
    fill(browser, "add-edge", {"from": "sink", "to": "extra", "kind": "$barrier"})
    assert len(browser.find_elements(By.CSS_SELECTOR, "#graph g.node")) == 4
    assert page_edges(browser)[("sink", "extra", "$barrier")] == 1
    status, text = saved_status(browser)
    assert "status--ok" in status.split(), text
    assert text == f"saved {editor.save_path}"
    saved = json.loads(editor.save_path.read_text())
    assert saved["nodes"][-1] == {
        "name": "extra",
        "function": "spin",
        "factor": 2,
        "args": [{"type": "$barrier", "predecessor": {"name": "sink"}}],
    }
    assert tomii.validate(editor.save_path) == "tomii"
    assert tomii.Graph.from_json(editor.save_path).to_dict() == saved
    assert page_errors(browser) == []


def test_an_edit_the_parser_refuses_shows_its_message_and_writes_nothing(
    browser: WebDriver, editor: GraphEditor
) -> None:
    show(browser, editor.url)
    fill(browser, "add-edge", {"from": "work", "to": "sink", "kind": "$res", "index": "0-65"})
    status, text = saved_status(browser)
    assert "status--error" in status.split()
    assert text.startswith(
        f'{editor.save_path}: node "sink" instance 0, argument 2 ($res from "work")'
    )
    assert "64 instances" in text
    assert not editor.save_path.exists()


def test_rewiring_and_deleting_change_the_drawing(browser: WebDriver, editor: GraphEditor) -> None:
    show(browser, editor.url)
    browser.execute_script(
        "document.querySelector('#graph path.edge[data-from=work]')"
        ".dispatchEvent(new MouseEvent('click', {bubbles: true}))"
    )
    fill(browser, "edit-edge", {"kind": "$dep", "from": "source"})
    assert page_edges(browser) == Counter(
        {("source", "work", "$res"): 1, ("source", "sink", "$dep"): 1}
    )
    browser.find_element(By.CSS_SELECTOR, '#graph g.node[data-name="source"] rect').click()
    browser.find_element(By.ID, "delete").click()
    assert page_vertices(browser) == Counter({("work", "compute"): 1, ("sink", "compute"): 1})
    assert page_edges(browser) == Counter()
    assert page_errors(browser) == []
