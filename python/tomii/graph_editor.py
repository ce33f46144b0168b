"""The graph editor: a small HTTP server on 127.0.0.1 that serves the editable graph view and
answers its page: check and save the edited graph, write its builder script, stop.

A graph is written only once the runtime's parser (the one `tomii.validate` uses) accepts it;
otherwise the page is given the parser's message, which names the node or field. The server
listens on the loopback interface only, and answers a request only when it names this server as
its host and, for a change, carries the token of the page it served.
"""

from __future__ import annotations

import json
import os
import secrets
import sys
import threading
import webbrowser
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, final

from ._tomii import convert_json
from .errors import GraphError
from .export_python import builder_script
from .graph_view import graph_page

__all__ = ["GraphEditor", "edit"]

#: The largest request body the editor reads: a graph file's largest size.
_MAX_BODY = 64 * 1024 * 1024
_HOST = "127.0.0.1"


@final
class GraphEditor:
    """The editor of `graph` (a graph-format dict), saving to `save_path`, on `port` of
    127.0.0.1 (0: a free port). `with GraphEditor(...) as editor:` serves it from a thread
    while the block runs; `editor.url` is its page."""

    def __init__(
        self,
        graph: dict[str, Any],
        save_path: str | Path,
        *,
        port: int = 0,
        title: str | None = None,
    ) -> None:
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
            raise ValueError(f"port must be an int in 0..65535 (0: any free port), got {port!r}")
        self.save_path = Path(save_path)
        self.token = secrets.token_urlsafe(16)
        self.saved = threading.Event()
        self.stopped = threading.Event()
        self._page = graph_page(graph, title=title, editable=True, token=self.token).encode()
        try:
            self._server = _Server((_HOST, port), _Handler)
        except OSError as error:
            raise OSError(f"the graph editor cannot listen on {_HOST}:{port}: {error}") from None
        self._server.editor = self
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{_HOST}:{self.port}/"

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="tomii-graph-editor", daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
        self._server.server_close()

    def __enter__(self) -> GraphEditor:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def wait(self) -> None:
        """Returns once the page's Done was pressed (or on Ctrl-C, KeyboardInterrupt)."""
        while not self.stopped.wait(0.2):
            pass

    # What the page asks.

    def page(self) -> bytes:
        return self._page

    def save(self, graph: Any) -> dict[str, Any]:
        """Writes `graph` to the save path if the parser accepts it; the parser's warnings
        come back with the path. Raises GraphError with the parser's message otherwise."""
        text = json.dumps(graph, indent=2, ensure_ascii=False) + "\n"
        notes = _check(text, self.save_path)
        temporary = self.save_path.with_name(self.save_path.name + ".saving")
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, self.save_path)
        self.saved.set()
        return {"path": str(self.save_path), "warnings": notes}

    def python(self, graph: Any) -> dict[str, Any]:
        """The builder script of `graph`, once the parser accepts it."""
        _check(json.dumps(graph), self.save_path)
        return {"script": builder_script(graph)}


def _check(text: str, source: Path) -> list[str]:
    """The parser's warnings about graph `text` (named as `source` in messages); raises
    GraphError with its message when it refuses the graph."""
    _dialect, _current, notes = convert_json(text, str(source), None)
    return list(notes)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    editor: GraphEditor


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        if not self._host_is_ours():
            return
        if self.path.split("?", 1)[0] != "/":
            self._answer(HTTPStatus.NOT_FOUND, {"error": f"no page {self.path}"})
            return
        self._send(HTTPStatus.OK, "text/html; charset=utf-8", self.server.editor.page())

    def do_POST(self) -> None:
        if not self._host_is_ours():
            return
        if self.headers.get("X-Tomii-Token") != self.server.editor.token:
            self._answer(HTTPStatus.FORBIDDEN, {"error": "not a request of the editor's page"})
            return
        editor = self.server.editor
        actions = {"/save": editor.save, "/export-python": editor.python}
        if self.path == "/quit":
            # Answered first, so the page hears it before edit() returns and the process
            # ends; the event is therefore set a moment after the answer arrives.
            self._answer(HTTPStatus.OK, {"stopped": True})
            editor.stopped.set()
            return
        if self.path not in actions:
            self._answer(HTTPStatus.NOT_FOUND, {"error": f"no action {self.path}"})
            return
        try:
            graph = self._graph()
            self._answer(HTTPStatus.OK, actions[self.path](graph))
        except (GraphError, ValueError, OSError) as error:
            self._answer(HTTPStatus.BAD_REQUEST, {"error": str(error)})

    def _graph(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        if length > _MAX_BODY:
            raise ValueError(f"the graph has {length} bytes, more than the {_MAX_BODY} allowed")
        body = json.loads(self.rfile.read(length) or b"{}")
        if not isinstance(body, dict) or "graph" not in body:
            raise ValueError('the request must be {"graph": ...}')
        return body["graph"]

    def _host_is_ours(self) -> bool:
        """Whether the request names this server (not another host name that resolves here)."""
        port = self.server.editor.port
        if self.headers.get("Host") in (f"{_HOST}:{port}", f"localhost:{port}"):
            return True
        self._answer(HTTPStatus.FORBIDDEN, {"error": "the editor answers 127.0.0.1 only"})
        return False

    def _answer(self, status: HTTPStatus, answer: dict[str, Any]) -> None:
        self._send(status, "application/json", json.dumps(answer).encode())

    def _send(self, status: HTTPStatus, kind: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the page shows what happened."""


def edit(
    graph: dict[str, Any],
    save_path: str | Path,
    *,
    port: int = 0,
    title: str | None = None,
    open_browser: bool = True,
) -> bool:
    """Serves the editor of `graph` until its page's Done (or Ctrl-C), opening the page in the
    browser; returns whether the graph was saved."""
    with GraphEditor(graph, save_path, port=port, title=title) as editor:
        print(
            f"editing the graph at {editor.url} (saved to {editor.save_path}); "
            "Done in the page or Ctrl-C stops",
            file=sys.stderr,
        )
        if open_browser and not webbrowser.open(editor.url):
            print(f"note: no browser could be started; open {editor.url}", file=sys.stderr)
        try:
            editor.wait()
        except KeyboardInterrupt:
            pass
        return editor.saved.is_set()
