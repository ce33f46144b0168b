"""`tomii new scheduler`: a Rust and a C project written outside the repository, built with their
own tools (cargo, make), run by the `tomii` command, checked by `tomii.check` (and by the
project's own test) and swept against fifo; and the command's errors.

Rust projects build in debug into target/plugin-tests (their target and build directory), shared
with test_build and test_properties, so the SDK's dependencies compile once per clone; the build
directory they share outside the tests, and the Python their README and Makefile name, are checked
as written."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from reference import GRAPHS, ROOT

import tomii
import tomii.check
from tomii.build import CARGO_DIRECTORY_VARIABLES, cargo_build_dir, sdk_dir
from tomii.cli import main
from tomii.experiments import sweep
from tomii.experiments.config import load_config
from tomii.scaffold import PROJECT_FILES

#: Where the Rust projects build (target/ is never committed).
CARGO_TARGET = ROOT / "target" / "plugin-tests"
#: Cargo's environment for them: the same directory for the library and for the intermediate
#: files, which their .cargo/config.toml would send to the user's shared build directory.
CARGO_ENV = {**os.environ, "CARGO_TARGET_DIR": str(CARGO_TARGET),
             "CARGO_BUILD_BUILD_DIR": str(CARGO_TARGET)}  # fmt: skip
#: The graph of every run here: two sources and a sink of synthetic checksums.
GRAPH = GRAPHS / "diamond.json"
#: The scheduler guide, whose workflow section is run as written.
GUIDE = ROOT / "PLUGIN_SCHEDULER_API.md"


def build(project: Path, lang: str) -> Path:
    """Builds `project` as its README says (debug for Rust); the library's path."""
    name = project.name
    if lang == "c":
        subprocess.run(["make", "--quiet"], cwd=project, check=True, timeout=120)
        return project / f"lib{name}.so"
    subprocess.run(
        ["cargo", "build", "--quiet"], cwd=project, env=CARGO_ENV, check=True, timeout=1800
    )
    return CARGO_TARGET / "debug" / f"lib{name}.so"


@pytest.fixture(scope="module", params=["rust", "c"])
def project(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    lang = str(request.param)
    directory = tmp_path_factory.mktemp(lang) / f"scaffolded_{lang}"
    assert main(["new", "scheduler", directory.name, "--lang", lang, "--dir", str(directory)]) == 0
    return directory


@pytest.fixture(scope="module")
def library(project: Path) -> Path:
    lang = "rust" if (project / "Cargo.toml").is_file() else "c"
    path = build(project, lang)
    assert path.is_file()
    return path


def test_the_project_depends_on_the_installed_sdk_by_absolute_path(project: Path) -> None:
    sdk = sdk_dir()
    assert sdk.is_absolute()
    if (project / "Cargo.toml").is_file():
        manifest = (project / "Cargo.toml").read_text(encoding="utf-8")
        assert f"tomii-types = {{ path = {json.dumps(str(sdk))} }}" in manifest
        assert "\n[workspace]\n" in manifest
    else:
        assert f"SDK_INCLUDE = {sdk / 'include'}\n" in (project / "Makefile").read_text()
    lang = "rust" if (project / "Cargo.toml").is_file() else "c"
    written = [project / path.replace("@LIB@", project.name) for path in PROJECT_FILES[lang]]
    assert not [p for p in written if re.search("@[A-Z_]+@", p.read_text(encoding="utf-8"))]


def test_the_built_scheduler_runs_through_the_tomii_command(project: Path, library: Path) -> None:
    report = project / "report.json"
    command = [sys.executable, "-m", "tomii.cli", "run", str(GRAPH), "--scheduler-plugin"]
    command += [str(library), "--dylib", str(tomii.find_plugin("synthetic")), "--workers", "2"]
    command += ["--slots", "3", "--frames", "20", "--report", str(report)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    written = json.loads(report.read_text(encoding="utf-8"))
    assert (written["scheduler"]["name"], written["frames"]) == (project.name, 20)


def test_the_example_graph_runs(project: Path, library: Path) -> None:
    synthetic = tomii.find_plugin("synthetic")
    result = tomii.run_graph(project / "graph.json", dylibs=[synthetic], scheduler=library,
                             workers=2, slots=4, frames=10)  # fmt: skip
    assert result.report.frames == 10


def test_the_scheduler_passes_the_property_suite(library: Path) -> None:
    card = tomii.check.check(library, max_examples=5)
    assert card.passed, str(card)


def test_the_projects_own_property_test_passes(project: Path, library: Path) -> None:
    env = {**os.environ, "SCHEDULER_LIBRARY": str(library), "TOMII_CHECK_EXAMPLES": "5"}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]
    done = subprocess.run(
        command, cwd=project, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout


def test_a_sweep_against_fifo_gives_valid_rows(project: Path, library: Path) -> None:
    result = sweep(
        schedulers=["fifo", library], graphs=[GRAPH], repeats=1, frames=5, progress=False
    )
    label = project.name.replace("_", "-")
    assert sorted(row["scheduler"] for row in result.rows) == sorted(["fifo", label])
    for row in result.rows:
        assert row["valid"], row["problem"]
        assert (row["graph"], row["frames"]) == ("diamond", 5)
        assert row["throughput_frames_per_s"] > 0


def test_the_projects_sweep_file_names_its_library(project: Path) -> None:
    config = load_config(project / "sweep.toml")
    fifo, own = config["schedulers"]
    assert fifo == "fifo" and own.label == project.name
    assert str(own.spec).endswith(".so")


# The Rust project's sweep file names its release build, which is not built here.
@pytest.mark.parametrize("project", ["c"], indirect=True)
def test_the_c_projects_sweep_file_runs(project: Path, library: Path) -> None:
    command = [sys.executable, "-m", "tomii.cli", "sweep", "sweep.toml", "--frames", "3"]
    command += ["--repeats", "1", "--no-plots", "--out", "results"]
    done = subprocess.run(
        command, cwd=project, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    assert project.name in done.stdout and "fifo" in done.stdout


@pytest.mark.parametrize("project", ["rust"], indirect=True)
def test_the_rust_projects_unit_tests_pass(project: Path, library: Path) -> None:
    done = subprocess.run(["cargo", "test", "--quiet"], cwd=project, env=CARGO_ENV,
                          capture_output=True, text=True, timeout=1800, check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 passed" in done.stdout


@pytest.mark.parametrize("project", ["rust"], indirect=True)
def test_the_rust_project_shares_the_users_build_dir(project: Path) -> None:
    config = (project / ".cargo" / "config.toml").read_text(encoding="utf-8")
    assert f"\nbuild-dir = {json.dumps(str(cargo_build_dir()))}\n" in config
    # As cargo reads it, run in the project without a directory chosen by the environment.
    env = {k: v for k, v in os.environ.items() if k not in CARGO_DIRECTORY_VARIABLES}
    command = ["cargo", "metadata", "--no-deps", "--format-version", "1"]
    done = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True,
                          timeout=120, check=True)  # fmt: skip
    metadata = json.loads(done.stdout)
    assert Path(metadata["build_directory"]) == cargo_build_dir()
    assert Path(metadata["target_directory"]) == project / "target"


def test_the_readme_and_makefile_name_the_python_that_has_tomii(project: Path) -> None:
    readme = (project / "README.md").read_text(encoding="utf-8")
    if sys.prefix != sys.base_prefix:  # the tests run in a virtualenv: activate it
        assert f"\nsource {Path(sys.prefix) / 'bin' / 'activate'}\n" in readme
    else:
        assert f"`tomii new` ran from `{sys.executable}`" in readme
    if (project / "Makefile").is_file():
        makefile = (project / "Makefile").read_text(encoding="utf-8")
        assert f"\nPYTHON ?= {sys.executable}\n" in makefile


def test_outside_a_virtualenv_the_readme_names_the_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "prefix", sys.base_prefix)
    readme = (tomii.new_scheduler("plain", lang="c", directory=tmp_path) / "README.md").read_text()
    assert f"`tomii new` ran from `{sys.executable}`, so use it" in readme
    assert "activate" not in readme


@pytest.mark.parametrize("project", ["c"], indirect=True)
def test_make_test_finds_tomii_with_the_virtualenv_off_path(project: Path, library: Path) -> None:
    path = os.pathsep.join(
        d for d in os.environ["PATH"].split(os.pathsep) if Path(d) != Path(sys.executable).parent
    )
    env = {**os.environ, "PATH": path, "TOMII_CHECK_EXAMPLES": "5"}
    env.pop("PYTHON", None)
    env.pop("VIRTUAL_ENV", None)
    done = subprocess.run(["make", "test"], cwd=project, env=env, capture_output=True,
                          text=True, timeout=300, check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert f'"{sys.executable}" -m pytest tests' in done.stdout
    assert "1 passed" in done.stdout


def documented_workflow() -> list[str]:
    """The code blocks of the guide's "From a new project to figures", in order: Rust's steps,
    C's, the steps both share, the Python version."""
    text = GUIDE.read_text(encoding="utf-8")
    section = text.split("\n## From a new project to figures\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```(?:sh|python)\n(.*?)```", section, re.DOTALL)


def test_the_documented_workflow_runs_as_written(tmp_path: Path) -> None:
    # C's build steps, then the shared ones, then the Python version with C's library (as its
    # comment says). Rust's steps are the fixtures' above, in release mode.
    _rust, c, shared, python = documented_workflow()
    python = python.replace('"target/release/libmy_sched.so"', '"libmy_sched.so"')
    script = f"{c}{shared}python - <<'EOF'\n{python}EOF\n"
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600, check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "my_sched on example: 1000 frames" in done.stdout
    assert "scheduler libmy_sched.so: PASSED" in done.stdout
    figures = {p.name for p in (tmp_path / "my_sched" / "results").glob("*.png")}
    assert {"throughput.png", "latency_p50.png", "gantt_example.png"} <= figures


# ----------------------------------------------------------------------------------------------
# The command's inputs


def test_the_directory_defaults_to_the_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["new", "scheduler", "mine", "--lang", "c"]) == 0
    assert sorted(p.name for p in (tmp_path / "mine").iterdir()) == [
        ".gitignore", "Makefile", "README.md", "graph.json", "mine.c", "sweep.toml", "tests",
    ]  # fmt: skip
    out = capsys.readouterr().out
    assert str(tmp_path / "mine") in out and str(sdk_dir()) in out


def test_an_empty_directory_is_filled(tmp_path: Path) -> None:
    project = tomii.new_scheduler("my-sched", lang="rust", directory=tmp_path)
    assert project == tmp_path
    assert 'name = "my_sched"' in (tmp_path / "Cargo.toml").read_text()
    assert 'c"my-sched"' in (tmp_path / "src" / "lib.rs").read_text()
    assert "pub struct MySched" in (tmp_path / "src" / "lib.rs").read_text()


def error_of(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """The one line on stderr of `tomii new ...`, which must fail with status 1."""
    assert main(["new", *argv]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert captured.err.startswith("error: ")
    return captured.err


def test_a_non_empty_directory_is_never_touched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    error = error_of(capsys, "scheduler", "x", "--lang", "c", "--dir", str(tmp_path))
    assert str(tmp_path) in error and "not an empty directory" in error
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]
    error = error_of(capsys, "scheduler", "x", "--lang", "c", "--dir", str(tmp_path / "notes.txt"))
    assert "notes.txt" in error


def test_an_unknown_language_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    error = error_of(capsys, "scheduler", "x", "--lang", "go", "--dir", str(tmp_path / "x"))
    assert "unknown language 'go'" in error and "rust, c" in error
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("name", ["9lives", "My_Sched", "two words", "../up", "", "a" * 65])
def test_a_bad_name_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    error = error_of(capsys, "scheduler", name, "--lang", "rust", "--dir", str(tmp_path / "p"))
    assert "bad scheduler name" in error
    assert not (tmp_path / "p").exists()


def test_a_usage_error_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_status:
        main(["new", "scheduler", "x"])
    assert exit_status.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "--lang" in err and err.count("\n") == 1


def test_tomii_sdk_prints_the_sdk(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sdk"]) == 0
    assert capsys.readouterr().out == f"{sdk_dir()}\n"
    assert main(["sdk", "extra"]) == 2
