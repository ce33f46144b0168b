"""`python -m tomii`: the package's discovery and inspection commands (the knob catalog, the graph
schema, the terminal view of a graph), for people and agents without a Python session.

Every failure is one `error:` line on stderr and a non-zero exit status, never a traceback. It
never runs a graph: `tomii run` and `tomii.run_graph` do that.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import NoReturn

from ._tomii import TomiiError, knobs_json, knobs_table, schema_json
from .knobs import load_graph
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
        help="draw the graph file GRAPH: nodes in topological layers with their incoming edges; "
        "the browser view is not built yet, so this is the terminal view for now",
    )
    parser.add_argument(
        "--ascii", action="store_true", help="with --visualize: the terminal view (box drawing)"
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
    if not listing and options.visualize is None:
        parser.error("give a command: --list-knobs, --list-knobs-json, --schema or --visualize")
    if options.ascii and options.visualize is None:
        parser.error("--ascii goes with --visualize GRAPH")
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
    drawing = render_ascii(load_graph(options.visualize))
    if not options.ascii:
        print(
            "note: the browser view is not available yet; showing the terminal view",
            file=sys.stderr,
        )
    return drawing
