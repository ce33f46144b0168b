"""The browser view of a graph without a browser: the page is self-contained (libraries inlined
from the XStatic packages, no URL to load, data that cannot break out of its script), the
command line and `Graph.visualize` write and refuse what they say, and the editor's server saves
only what the runtime's parser accepts. The page in a real browser: test_graph_page.py."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from reference import GRAPHS, ROOT, tomii_cli

import tomii
from tomii import webpage
from tomii.export_python import builder_script
from tomii.graph_editor import GraphEditor
from tomii.graph_view import graph_page, load_graph_file
from tomii.webpage import assemble, library_script

FANOUT = ROOT / "examples" / "graphs" / "fanout.json"
V12 = ROOT / "tomii-core" / "tests" / "graphs" / "v12" / "every_construct.json"
WEB = ROOT / "python" / "tomii" / "_web"


# The page.


def test_the_page_inlines_d3_and_dagre_from_their_packages() -> None:
    import xstatic.pkg.d3  # type: ignore[import-untyped]
    import xstatic.pkg.dagre  # type: ignore[import-untyped]

    page = graph_page(json.loads(FANOUT.read_text()))
    d3 = Path(xstatic.pkg.d3.BASE_DIR, "d3.js").read_text(encoding="utf-8")
    dagre = Path(xstatic.pkg.dagre.BASE_DIR, "dagre.min.js").read_text(encoding="utf-8")
    assert library_script("d3") == d3 and d3 in page
    assert library_script("dagre") == dagre and dagre in page
    assert (xstatic.pkg.d3.VERSION, xstatic.pkg.dagre.VERSION) == ("3.5.17", "0.6.4")


def test_the_page_loads_nothing_from_anywhere() -> None:
    page = graph_page(json.loads(FANOUT.read_text()))
    assert not re.search(r"<(script|link|img|iframe)[^>]*\s(src|href)=[\"']?(https?:)?//", page)
    assert "default-src 'none'" in page
    # The package's own files name no URL at all (the libraries hold XML namespace names).
    for own in WEB.iterdir():
        assert not re.search(r"https?:|//[a-z]", own.read_text(encoding="utf-8")), own.name


def test_the_payload_cannot_end_its_script_element() -> None:
    graph = {"nodes": [{"name": "</script><script>alert(1)</script>", "function": "f&<>"}]}
    page = graph_page(graph)
    payload = re.search(r'<script type="application/json" id="tomii-payload">(.*?)</script>', page)
    assert payload is not None
    assert json.loads(payload.group(1))["graph"] == graph
    assert page.count("<script") == page.count("</script>") == 4  # Payload, d3, dagre, graph.js.


def test_a_template_must_hold_each_marker_once() -> None:
    with pytest.raises(ValueError, match=r"must hold \{\{title\}\} once"):
        assemble("graph.css", title="t", payload={})
    with pytest.raises(ValueError, match="no page library 'jquery'"):
        library_script("jquery")


# The command line.


def test_temporary_pages_are_removed_by_a_later_page_after_a_day(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page opened in a browser outlives the process that wrote it; a later page removes this
    user's pages of its kind older than a day, and only those."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    old, recent, other = (
        tmp_path / name
        for name in ("tomii-graph-old.html", "tomii-graph-new.html", "tomii-graph-keep.txt")
    )
    for file in (old, recent, other):
        file.write_text("<html></html>")
    two_days_ago = time.time() - 2 * webpage.TEMPORARY_PAGES_KEPT_S
    os.utime(old, (two_days_ago, two_days_ago))
    os.utime(other, (two_days_ago, two_days_ago))
    page = webpage.temporary_page("tomii-graph-", "<html>new</html>")
    assert page.parent == tmp_path and page.read_text() == "<html>new</html>"
    assert not old.exists() and recent.exists() and other.exists()


def test_save_writes_the_page_of_either_dialect(tmp_path: Path) -> None:
    for graph in (FANOUT, V12):
        page = tmp_path / f"{graph.stem}.html"
        run = tomii_cli("--visualize", graph, "--save", page)
        assert run.returncode == 0, run.stderr
        assert run.stdout == ""
        assert run.stderr.endswith(f"wrote the graph view to {page}\n")
        assert graph_page(load_graph_file(graph)[0], title=graph.name) == page.read_text()
    assert "warning: " in run.stderr  # The Tomii 1.2 file's notes.


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--visualize", GRAPHS / "cycle.json"], "cycle.json: the graph has a cycle"),
        (
            ["--visualize", GRAPHS / "malformed.json", "--save", "x.html"],
            "malformed.json: not valid",
        ),
        (["--visualize", GRAPHS / "unknown_predecessor.json", "--edit"], 'predecessor "ghost"'),
        (["--visualize", GRAPHS], "graphs: is not a regular file"),
        (["--visualize", FANOUT, "--save", "/no/such/dir/page.html"], "cannot write the page"),
        (["--schema", "--save", "page.html"], "--save goes with --visualize GRAPH"),
        (["--list-knobs", "--edit"], "--edit goes with --visualize GRAPH"),
        (["--visualize", FANOUT, "--ascii", "--save", "p.html"], "give one of --ascii, --save"),
        (["--visualize", FANOUT, "--port", "8000"], "--save-path and --port go with --edit"),
        (["--visualize", FANOUT, "--edit", "--port", "70000"], "a port is 0..65535"),
    ],
)
def test_a_bad_graph_or_option_is_one_error_line(args: list[str | Path], message: str) -> None:
    run = tomii_cli(*args)
    assert run.returncode != 0
    assert len(run.stderr.splitlines()) == 1, run.stderr
    assert run.stderr.startswith("error: ")
    assert message in run.stderr


def test_visualize_opens_the_page_in_the_browser(tmp_path: Path) -> None:
    # `BROWSER` is what webbrowser starts: here a command that records the page it is given.
    record = tmp_path / "opened"
    env = {**os.environ, "BROWSER": f"sh -c 'echo $0 > {record}' %s"}
    run = subprocess.run(
        [sys.executable, "-m", "tomii", "--visualize", str(FANOUT)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env,
    )
    assert run.returncode == 0, run.stderr
    (page,) = re.findall(r"^opened the graph view (\S+)$", run.stderr, re.MULTILINE)
    assert record.read_text().strip() == Path(page).as_uri()
    assert graph_page(load_graph_file(FANOUT)[0], title="fanout.json") == Path(page).read_text()
    Path(page).unlink()


def test_edit_serves_the_editor_until_done_and_saves_the_graph(tmp_path: Path) -> None:
    saved = tmp_path / "edited.json"
    env = {**os.environ, "BROWSER": "true"}
    command = [sys.executable, "-m", "tomii", "--visualize", str(FANOUT), "--edit"]
    with subprocess.Popen(
        [*command, "--save-path", str(saved)], stderr=subprocess.PIPE, text=True, env=env
    ) as served:
        assert served.stderr is not None
        line = served.stderr.readline()
        (url,) = re.findall(r"editing the graph at (\S+) ", line)
        with urllib.request.urlopen(url, timeout=30) as answer:
            page = answer.read().decode()
        token = json.loads(re.findall(r'id="tomii-payload">(.*?)</script>', page)[0])["token"]
        for path, body in (("save", {"graph": load_graph_file(FANOUT)[0]}), ("quit", {})):
            call = urllib.request.Request(
                url + path, data=json.dumps(body).encode(), headers={"X-Tomii-Token": token}
            )
            urllib.request.urlopen(call, timeout=30).close()
        assert served.wait(timeout=30) == 0
    assert tomii.Graph.from_json(saved).to_dict() == load_graph_file(FANOUT)[0]


# Graph.visualize.


def test_visualize_writes_the_page_to_html_path(tmp_path: Path) -> None:
    graph = tomii.Graph.from_json(FANOUT)
    assert graph.visualize("web", html_path=tmp_path / "g.html") == tmp_path / "g.html"
    assert graph_page(graph.to_dict()) == (tmp_path / "g.html").read_text()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"mode": "svg"}, "mode must be 'ascii' or 'web'"),
        ({"editable": True}, "need mode='web'"),
        ({"mode": "web", "editable": True}, "needs save_path"),
        ({"mode": "web", "save_path": "g.json"}, "go with editable=True"),
        ({"mode": "web", "port": 8000}, "go with editable=True"),
        (
            {"mode": "web", "editable": True, "save_path": "g.json", "html_path": "g.html"},
            "read-only",
        ),
    ],
)
def test_visualize_refuses_options_that_do_not_go_together(
    options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        tomii.Graph.from_json(FANOUT).visualize(**options)


# The editor's server.


@pytest.fixture
def editor(tmp_path: Path) -> Iterator[GraphEditor]:
    with GraphEditor(load_graph_file(FANOUT)[0], tmp_path / "edited.json") as served:
        yield served


def request(
    editor: GraphEditor, path: str, body: Any = None, headers: dict[str, str] | None = None
) -> tuple[int, Any]:
    sent = {"X-Tomii-Token": editor.token, **(headers or {})}
    data = None if body is None else json.dumps(body).encode()
    call = urllib.request.Request(editor.url + path.lstrip("/"), data=data, headers=sent)
    try:
        with urllib.request.urlopen(call, timeout=30) as answer:
            text = answer.read().decode()
            return answer.status, text if path == "/" else json.loads(text)
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read().decode())


def test_the_editor_serves_the_editable_page(editor: GraphEditor) -> None:
    status, page = request(editor, "/")
    assert status == 200
    payload = re.search(r'id="tomii-payload">(.*?)</script>', page)
    assert payload is not None
    assert json.loads(payload.group(1))["editable"] is True
    assert json.loads(payload.group(1))["token"] == editor.token


def test_the_editor_saves_a_graph_the_parser_accepts(editor: GraphEditor) -> None:
    graph = load_graph_file(FANOUT)[0]
    graph["nodes"].append(
        {
            "name": "extra",
            "function": "spin",
            "args": [{"type": "$dep", "predecessor": {"name": "sink"}}],
        }
    )
    status, answer = request(editor, "/save", {"graph": graph})
    assert (status, answer) == (200, {"path": str(editor.save_path), "warnings": []})
    assert json.loads(editor.save_path.read_text()) == graph
    assert tomii.validate(editor.save_path) == "tomii"


def test_the_editor_refuses_a_graph_with_the_parsers_message(editor: GraphEditor) -> None:
    graph = load_graph_file(FANOUT)[0]
    graph["nodes"][2]["args"].append({"type": "$res", "predecessor": {"name": "ghost"}})
    status, answer = request(editor, "/save", {"graph": graph})
    assert status == 400
    assert answer["error"].startswith(f'{editor.save_path}: node "sink" argument 2')
    assert 'predecessor "ghost"' in answer["error"]
    assert not editor.save_path.exists()


def test_the_editor_writes_the_builder_script(editor: GraphEditor) -> None:
    graph = load_graph_file(FANOUT)[0]
    status, answer = request(editor, "/export-python", {"graph": graph})
    assert status == 200
    assert answer["script"] == builder_script(graph)


def test_the_editor_answers_its_own_page_only(editor: GraphEditor) -> None:
    graph = load_graph_file(FANOUT)[0]
    assert request(editor, "/save", {"graph": graph}, {"X-Tomii-Token": "guess"})[0] == 403
    assert request(editor, "/save", {"graph": graph}, {"Host": "evil.example:80"})[0] == 403
    assert request(editor, "/save", {"nodes": []})[0] == 400
    assert request(editor, "/nothing", {"graph": graph})[0] == 404
    assert not editor.save_path.exists()
    assert request(editor, "/quit", {}) == (200, {"stopped": True})
    # The server sets the event after it has answered, so wait for it briefly.
    assert editor.stopped.wait(timeout=10)
