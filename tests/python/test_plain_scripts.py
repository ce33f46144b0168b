"""`sweep`, `check` and `tune` in a plain script: their child processes start from the package
(`tomii.isolation`), not by importing the caller's script again, so a script without
`if __name__ == "__main__":` works, from a file, from stdin and in a Jupyter notebook (a real
kernel, through nbclient). A Python kernel defined in the script itself is the one case where a
child imports the script: guarded, it runs; unguarded, the sweep stops with the fix named instead
of running a second sweep inside its child."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

#: A plain script: every call at the top level, each printing one line the tests read.
PLAIN = """\
import tomii
from tomii.check import check
from tomii.experiments import sweep

graph = tomii.graphs.map_reduce(4, 2, cost=tomii.graphs.Fixed(2))
result = sweep(["fifo"], [graph], repeats=1, frames=10, progress=False)
print("sweep", len(result.rows), all(row["valid"] for row in result.rows))
card = check("fifo", max_examples=3)
print("check", card.passed)
tuned = tomii.tune(graph, budget=2, frames=10, knobs={"slots": [1, 2]}, progress=False)
print("tune", tuned.valid_trials)
"""
PLAIN_PRINTS = ["sweep 1 True", "check True", "tune 2"]

#: A script that defines its own Python kernel and sweeps a graph of it: at the top level
#: (UNGUARDED) or under the guard.
KERNEL_IN_SCRIPT = """\
import tomii
from tomii.experiments import sweep


@tomii.export
def double(x: int) -> int:
    return 2 * x


graph = tomii.Graph()
graph.py_node("doubled", fn=double, factor=2, args=[21])
print("sweeping")
result = sweep(["fifo"], [graph], repeats=1, frames=5, progress=False)
print("sweep", [row["valid"] for row in result.rows])
"""


def guarded(script: str) -> str:
    """`script` with everything after its function definitions under the guard."""
    head, _, body = script.partition("graph = tomii.Graph()")
    lines = ["graph = tomii.Graph()", *body.splitlines()[1:]]
    return head + 'if __name__ == "__main__":\n' + "".join(f"    {line}\n" for line in lines)


def run(
    command: list[str], cwd: Path, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, cwd=cwd, input=stdin, capture_output=True, text=True, timeout=300, check=False
    )


def test_a_plain_script_sweeps_checks_and_tunes(tmp_path: Path) -> None:
    (tmp_path / "plain.py").write_text(PLAIN, encoding="utf-8")
    done = run([sys.executable, "plain.py"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == PLAIN_PRINTS


def test_a_script_read_from_stdin_sweeps_checks_and_tunes(tmp_path: Path) -> None:
    done = run([sys.executable, "-"], tmp_path, stdin=PLAIN)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == PLAIN_PRINTS


def test_a_notebook_sweeps_checks_and_tunes(tmp_path: Path) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    cells = [nbformat.v4.new_code_cell(PLAIN)]
    # A kernel defined in the notebook cannot reach a child process: the error says what to do.
    cells.append(nbformat.v4.new_code_cell(KERNEL_IN_SCRIPT.replace("print(", "0 and print(")))
    notebook = nbformat.v4.new_notebook(cells=cells)
    client = nbclient.NotebookClient(
        notebook, timeout=300, kernel_name="python3", allow_errors=True,
        resources={"metadata": {"path": str(tmp_path)}},
    )  # fmt: skip
    client.execute()
    first, second = notebook.cells
    printed = "".join(output.get("text", "") for output in first.outputs)
    assert printed.splitlines() == PLAIN_PRINTS, first.outputs
    errors = [output for output in second.outputs if output.output_type == "error"]
    assert [error.ename for error in errors] == ["ParentScriptError"], second.outputs
    assert "has no script file (a notebook" in errors[0].evalue
    assert "Define it in a module" in errors[0].evalue


def test_a_kernel_defined_in_a_guarded_script_runs(tmp_path: Path) -> None:
    (tmp_path / "guarded.py").write_text(guarded(KERNEL_IN_SCRIPT), encoding="utf-8")
    done = run([sys.executable, "guarded.py"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["sweeping", "sweep [True]"]


def test_a_kernel_defined_in_an_unguarded_script_names_the_fix(tmp_path: Path) -> None:
    """The child imports the script to find its kernel, and the script starts a sweep at its
    top level: that inner sweep is refused, and the outer one stops with the reason."""
    (tmp_path / "unguarded.py").write_text(KERNEL_IN_SCRIPT, encoding="utf-8")
    done = run([sys.executable, "unguarded.py"], tmp_path)
    assert done.returncode == 1
    # The script began a sweep (and its child, importing it, printed that too); none finished.
    assert set(done.stdout.splitlines()) == {"sweeping"}
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("tomii.isolation.ParentScriptError: "), done.stderr
    assert "unguarded.py calls sweep at its top level" in last
    assert 'if __name__ == "__main__":' in last
