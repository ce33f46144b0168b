"""`python -m tomii`: the package's discovery and inspection commands (the knob catalog, the graph
schema, the browser and terminal views of a graph, the graph editor), for people and agents
without a Python session.

Every failure is one `error:` line on stderr and a non-zero exit status, never a traceback. It
never runs a graph: `tomii run` and `tomii.run_graph` do that.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import NoReturn

from ._tomii import knobs_json, knobs_table, schema_json
from .errors import TomiiError
from .graph_editor import edit
from .graph_view import load_graph_file, open_page, write_graph_page
from .trace_view import view_trace
from .visualize import render_ascii

__all__ = ["main"]

#: Exit status of a usage error (argparse's own), and of a command that failed.
USAGE_ERROR, FAILURE = 2, 1


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one `error:` line, as every tomii command's are."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE_ERROR, f"error: {message} (`{self.prog} --help` lists the options)\n")


def _parser() -> _Parser:
    parser = _Parser(
        prog="python -m tomii",
        description="Inspect what a Tomii run can be given: its knobs, the graph format, a graph.",
        epilog="Running a graph: `tomii run GRAPH ...` or tomii.run_graph() in Python.",
    )
    # Not `required=True`: argparse would then report a missing command before an unknown flag.
    command = parser.add_mutually_exclusive_group()
    command.add_argument(
        "--list-knobs", action="store_true", help="every run option as a table (tomii.list_knobs())"
    )
    command.add_argument(
        "--list-knobs-json",
        action="store_true",
        help="the knob catalog as JSON, with each knob's domain, role and search hint",
    )
    command.add_argument(
        "--schema", action="store_true", help="the JSON Schema (draft 2020-12) of graph files"
    )
    command.add_argument(
        "--visualize",
        metavar="GRAPH",
        help="open the graph file GRAPH (either dialect) in the browser: a self-contained page "
        "that needs no network, the graph in layers, node and edge kinds styled apart, a node's "
        "details on click, 'Export Python'",
    )
    command.add_argument(
        "--view-trace",
        metavar="TRACE",
        help="open the trace file TRACE (a trace CSV, or a Chrome trace) in the browser: a "
        "self-contained page, each worker a lane of task bars coloured by frame, zoom and pan",
    )
    view = parser.add_argument_group("with --visualize")
    view.add_argument(
        "--ascii", action="store_true", help="print the terminal view (box drawing) instead"
    )
    view.add_argument(
        "--save",
        metavar="PAGE",
        help="write the page to the file PAGE, opening no browser (also with --view-trace)",
    )
    view.add_argument(
        "--edit",
        action="store_true",
        help="edit the graph in the browser (add, remove, rewire nodes and edges), served from "
        "127.0.0.1 until Done in the page or Ctrl-C; Save writes it once the runtime's parser "
        "accepts it",
    )
    view.add_argument(
        "--save-path",
        metavar="FILE",
        help="with --edit: where Save writes the graph (default: GRAPH itself)",
    )
    view.add_argument(
        "--port",
        type=int,
        default=0,
        help="with --edit: the port of 127.0.0.1 to serve on (default 0: any free port)",
    )
    parser.add_argument(
        "--dialect",
        choices=("tomii", "tomii-1.2"),
        default="tomii",
        help="with --schema: the current format (default) or files as Tomii 1.2 wrote them",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """Runs the command `argv` (default: the process's arguments) and returns the exit status;
    `--help` and usage errors return too, rather than leave through argparse's SystemExit."""
    try:
        options = _options(argv)
    except SystemExit as stop:
        return stop.code if isinstance(stop.code, int) else USAGE_ERROR
    try:
        sys.stdout.write(_output(options))
        sys.stdout.flush()
    except TomiiError as error:
        print(f"error: {error}", file=sys.stderr)
        return FAILURE
    except BrokenPipeError:
        # The reader (`| head`) left: say nothing, and keep Python from failing on exit too.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return FAILURE
    return 0


def _options(argv: list[str] | None) -> argparse.Namespace:
    parser = _parser()
    options = parser.parse_args(argv)
    listing = options.list_knobs or options.list_knobs_json or options.schema
    if not listing and options.visualize is None and options.view_trace is None:
        parser.error(
            "give a command: --list-knobs, --list-knobs-json, --schema, --visualize or --view-trace"
        )
    for flag in ("ascii", "save", "edit", "save_path"):
        if flag == "save" and options.view_trace is not None:
            continue
        if getattr(options, flag) not in (None, False) and options.visualize is None:
            parser.error(f"--{flag.replace('_', '-')} goes with --visualize GRAPH")
    if sum(map(bool, (options.ascii, options.save, options.edit))) > 1:
        parser.error("give one of --ascii, --save and --edit")
    if (options.save_path is not None or options.port != 0) and not options.edit:
        parser.error("--save-path and --port go with --edit")
    if not 0 <= options.port <= 65535:
        parser.error(f"--port {options.port}: a port is 0..65535 (0: any free port)")
    return options


def _output(options: argparse.Namespace) -> str:
    """What the chosen command prints, ending in a newline."""
    if options.list_knobs:
        return knobs_table()
    if options.list_knobs_json:
        return json.dumps(json.loads(knobs_json()), indent=2, ensure_ascii=False) + "\n"
    if options.schema:
        return (
            json.dumps(json.loads(schema_json(options.dialect)), indent=2, ensure_ascii=False)
            + "\n"
        )
    if options.view_trace is not None:
        return _trace_view(options)
    if options.ascii:
        # Read as the browser view and the runtime read it: a graph the runtime refuses is refused
        # here, with the runtime's message, rather than drawn.
        graph, notes = load_graph_file(options.visualize)
        for note in notes:
            print(f"warning: {note}", file=sys.stderr)
        return render_ascii(graph)
    return _browser_view(options)


def _trace_view(options: argparse.Namespace) -> str:
    """Writes or opens the trace's page; what it prints is a note on stderr."""
    try:
        path = view_trace(options.view_trace, html_path=options.save)
    except OSError as error:
        raise TomiiError(f"{options.save}: cannot write the page: {error.strerror}") from None
    shown = "wrote the trace view to" if options.save is not None else "opened the trace view"
    print(f"{shown} {path}", file=sys.stderr)
    return ""


def _browser_view(options: argparse.Namespace) -> str:
    """Writes, opens or serves the graph's page; what it prints is a note on stderr."""
    graph, notes = load_graph_file(options.visualize)
    title = Path(options.visualize).name
    for note in notes:
        print(f"warning: {note}", file=sys.stderr)
    if options.save is not None:
        try:
            path = write_graph_page(graph, options.save, title=title)
        except OSError as error:
            raise TomiiError(f"{options.save}: cannot write the page: {error.strerror}") from None
        print(f"wrote the graph view to {path}", file=sys.stderr)
    elif options.edit:
        try:
            edit(graph, options.save_path or options.visualize, port=options.port, title=title)
        except OSError as error:
            raise TomiiError(str(error)) from None
    else:
        path, opened = open_page(graph, title=title)
        shown = "opened the graph view" if opened else "no browser could be started; the page is"
        print(f"{shown} {path}", file=sys.stderr)
    return ""
