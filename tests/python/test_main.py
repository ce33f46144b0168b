"""`python -m tomii` as a user runs it: each command's output parses, and every bad input is one
`error:` line on stderr with a non-zero exit status, never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from reference import GRAPHS, ROOT, tomii_cli

from tomii import _tomii
from tomii.cli_module import main
from tomii.visualize import render_ascii

FANOUT = ROOT / "examples" / "graphs" / "fanout.json"


def test_list_knobs_prints_the_catalog_table() -> None:
    run = tomii_cli("--list-knobs")
    assert (run.returncode, run.stderr) == (0, "")
    assert run.stdout == _tomii.knobs_table()


def test_list_knobs_json_is_the_catalog_with_search_hints() -> None:
    run = tomii_cli("--list-knobs-json")
    assert (run.returncode, run.stderr) == (0, "")
    listing = json.loads(run.stdout)
    assert listing == json.loads(_tomii.knobs_json())
    assert all(knob["search_hint"] for knob in listing["knobs"])


def test_schema_is_the_graph_json_schema() -> None:
    run = tomii_cli("--schema")
    assert (run.returncode, run.stderr) == (0, "")
    schema = json.loads(run.stdout)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["required"] == ["nodes"]
    run = tomii_cli("--schema", "--dialect", "tomii-1.2")
    assert (run.returncode, run.stderr) == (0, "")
    assert json.loads(run.stdout)["title"] == "Tomii 1.2 graph"
    assert json.loads(run.stdout) == json.loads(_tomii.schema_json("tomii-1.2"))


def test_visualize_ascii_prints_the_terminal_view() -> None:
    run = tomii_cli("--visualize", FANOUT, "--ascii")
    assert (run.returncode, run.stderr) == (0, "")
    assert run.stdout == render_ascii(json.loads(FANOUT.read_text()))


def test_visualize_saves_the_browser_view(tmp_path: Path) -> None:
    run = tomii_cli("--visualize", FANOUT, "--save", tmp_path / "fanout.html")
    assert (run.returncode, run.stdout) == (0, "")
    assert run.stderr == f"wrote the graph view to {tmp_path / 'fanout.html'}\n"
    assert (tmp_path / "fanout.html").read_text().startswith("<!DOCTYPE html>")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--visualize", "no/such/graph.json"], "no/such/graph.json: cannot read the graph"),
        (["--visualize", GRAPHS / "malformed.json", "--ascii"], "malformed.json: not valid JSON"),
        (["--visualize", ROOT / "pyproject.toml"], "pyproject.toml: not valid JSON"),
        (["--visualize", GRAPHS, "--ascii"], "is not a regular file"),
        (["--visualize", GRAPHS], "is not a regular file"),
        (["--no-such-flag"], "unrecognized arguments: --no-such-flag"),
        ([], "give a command"),
        (["--ascii"], "give a command"),
        (["--schema", "--ascii"], "--ascii goes with --visualize"),
        (["--schema", "--list-knobs"], "not allowed with"),
        (["--visualize"], "expected one argument"),
    ],
)
def test_bad_input_is_one_error_line_and_a_failure_status(
    args: list[str | Path], message: str
) -> None:
    run = tomii_cli(*args)
    assert run.returncode != 0
    assert run.stdout == ""
    assert len(run.stderr.splitlines()) == 1, run.stderr
    assert run.stderr.startswith("error: ")
    assert message in run.stderr


def test_help_lists_every_command() -> None:
    run = tomii_cli("--help")
    assert run.returncode == 0
    for flag in ["--list-knobs", "--list-knobs-json", "--schema", "--visualize", "--ascii"]:
        assert flag in run.stdout


def test_main_returns_the_status_instead_of_exiting(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert main(["--bogus"]) == 2
    assert main(["--visualize", "no/such/graph.json"]) == 1
    assert main(["--list-knobs"]) == 0
    assert capsys.readouterr().out.endswith(_tomii.knobs_table())


def test_tomii_run_imports_python_kernels_that_sit_beside_the_graph(tmp_path: Path) -> None:
    (tmp_path / "beside_kernels.py").write_text(
        "import tomii\n\n@tomii.export\ndef answer() -> int:\n    return 42\n", encoding="utf-8"
    )
    graph = tmp_path / "graph.json"
    graph.write_text(
        json.dumps({"nodes": [{"name": "a", "function": "beside_kernels.answer"}]}),
        encoding="utf-8",
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from tomii.cli import main; sys.exit(main())"]
        + ["run", str(graph), "--frames", "3"],
        capture_output=True,
        text=True,
        cwd=elsewhere,  # not the graph's directory: the module is found beside the graph
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "3 frames" in done.stdout, done.stdout


def test_an_in_process_command_leaves_ctrl_c_to_python() -> None:
    """The command line's interrupt handlers last as long as its command: afterwards each Ctrl-C
    is Python's KeyboardInterrupt again. (Left installed, the second would end this process with
    status 130: the first sets the stop flag, and a signal with the flag set exits.)"""
    import signal

    from reference import SYNTHETIC

    from tomii._tomii import cli_main

    argv = ["tomii", "run", str(FANOUT), "--dylib", str(SYNTHETIC), "--frames", "2", "--quiet"]
    assert cli_main(argv) == 0
    for _ in range(2):
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)


#: Runs the console command's entry point with a Ctrl-C arriving while `tomii.cli` loads: an
#: import hook sends SIGINT to this process at that moment, as a user pressing Ctrl-C would.
CTRL_C_WHILE_LOADING = """\
import importlib.abc, os, signal, sys

class CtrlC(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "tomii.cli":
            os.kill(os.getpid(), signal.SIGINT)
        return None

sys.meta_path.insert(0, CtrlC())
import tomii_command
sys.argv = ["tomii", "run", {graph!r}, "--dylib", {dylib!r}, "--frames", "0", "--report", {report!r}]
sys.exit(tomii_command.main())
"""


def test_ctrl_c_while_the_command_loads_ends_it_with_one_line(tmp_path: Path) -> None:
    from reference import SYNTHETIC

    report = tmp_path / "report.json"
    script = CTRL_C_WHILE_LOADING.format(
        graph=str(FANOUT), dylib=str(SYNTHETIC), report=str(report)
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 130, done.stderr
    assert done.stderr == "tomii: SIGINT while starting; nothing ran, nothing written\n"
    assert not report.exists()


@pytest.mark.parametrize("name", ["cycle.json", "duplicate_node.json", "unknown_predecessor.json"])
@pytest.mark.parametrize("view", [["--ascii"], ["--save", "page.html"]])
def test_the_views_refuse_what_the_runtime_refuses_with_its_message(
    name: str, view: list[str], tmp_path: Path
) -> None:
    graph = GRAPHS / name
    run = subprocess.run(
        [sys.executable, "-m", "tomii.cli", "run", str(graph), "--frames", "1"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    shown = tomii_cli(
        "--visualize", graph, *[str(tmp_path / a) if a.endswith(".html") else a for a in view]
    )
    assert run.returncode != 0 and shown.returncode != 0
    assert shown.stdout == "" and not (tmp_path / "page.html").exists()
    assert shown.stderr.splitlines() == run.stderr.splitlines()[:1], run.stderr
