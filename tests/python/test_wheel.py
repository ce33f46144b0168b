"""`pip install .` gives a package that works on its own: shipped schedulers and kernels found by
name, a `tomii` console command that is the runtime's command line, Python kernels included, and
`tomii new` projects that build against the SDK inside the package.

Builds a real wheel (release mode, through scripts/wheel_backend.py) into a fresh virtualenv."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from reference import ROOT


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", str(home)], check=True)
    pip = [str(home / "bin" / "python"), "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "install", "maturin>=1.5,<2", "numpy"], check=True)
    subprocess.run([*pip, "install", "--no-build-isolation", str(ROOT)], check=True)
    return home


def _run(venv: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(venv)}
    return subprocess.run(
        args, check=False, capture_output=True, text=True, env=env, cwd=cwd, timeout=300
    )


def test_shipped_schedulers_load_by_name_from_python(venv: Path, tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import tomii
        names = sorted(tomii.installed_schedulers())
        synthetic = tomii.find_plugin("synthetic")
        graph = {"nodes": [{"name": "x", "function": "checksum", "factor": 4}]}
        for name in names:
            result = tomii.run_graph(graph, dylibs=[synthetic], scheduler=name, workers=2, frames=3)
            assert result.report.frames == 3, name
        print(" ".join(names))
        """
    )
    done = _run(venv, str(venv / "bin" / "python"), "-c", script, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    # The policies: every crate of schedulers/ whose library is a libtomii_sched_* (replay's is
    # not: it is tomii replay's, loaded by its own name).
    shipped = {
        p.name
        for p in (ROOT / "schedulers").iterdir()
        if 'name = "tomii_sched_'
        in ((p / "Cargo.toml").read_text() if (p / "Cargo.toml").is_file() else "")
    }
    assert set(done.stdout.split()) == shipped


def test_the_console_command_is_the_cli_and_imports_python_kernels(
    venv: Path, tmp_path: Path
) -> None:
    (tmp_path / "mykernels.py").write_text(
        "import tomii\n\n@tomii.export\ndef plus_one(x):\n    return x + 1\n"
    )
    graph = tmp_path / "graph.json"
    graph.write_text(
        json.dumps(
            {
                "nodes": [
                    {"name": "a", "function": "mykernels.plus_one", "args": [1]},
                    {
                        "name": "b",
                        "function": "checksum",
                        "args": [{"type": "$res", "predecessor": {"name": "a"}}],
                    },
                ]
            }
        )
    )
    listed = _run(venv, str(venv / "bin" / "tomii"), "schedulers", "--json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "fifo" in {entry["name"] for entry in json.loads(listed.stdout)}
    synthetic = _installed_synthetic(venv)
    env_path = f"PYTHONPATH={tmp_path}"
    ran = _run(
        venv, "/usr/bin/env", env_path, str(venv / "bin" / "tomii"), "run", str(graph),
        "--dylib", synthetic, "--frames", "4", "--scheduler", "work-stealing",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert "4 frames" in ran.stdout
    # Without PYTHONPATH, from elsewhere: the module beside the graph is found all the same.
    beside = _run(
        venv, str(venv / "bin" / "tomii"), "run", str(graph), "--dylib", synthetic, cwd=ROOT
    )
    assert beside.returncode == 0, beside.stderr
    graph.write_text(graph.read_text().replace("mykernels.", "nowhere_kernels."))
    missing = _run(
        venv, str(venv / "bin" / "tomii"), "run", str(graph), "--dylib", synthetic, cwd=ROOT
    )
    assert missing.returncode == 1
    assert missing.stderr.count("\n") == 1
    assert "cannot import module 'nowhere_kernels'" in missing.stderr


def test_the_installed_package_records_replays_simulates_and_draws(
    venv: Path, tmp_path: Path
) -> None:
    """What the installed package alone does: a run recorded and replayed with the packaged
    replay scheduler, a simulation, and the graph and trace pages written offline."""
    tomii = str(venv / "bin" / "tomii")
    synthetic = _installed_synthetic(venv)
    graph = str(ROOT / "tomii-core" / "tests" / "graphs" / "diamond.json")
    decisions, trace = tmp_path / "run.decisions", tmp_path / "trace.json"
    ran = _run(
        venv, tomii, "run", graph, "--dylib", synthetic, "--workers", "2", "--frames", "6",
        "--scheduler", "work-stealing", "--record-decisions", str(decisions),
        "--trace", str(trace), "--trace-format", "chrome", "--quiet",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    replayed = _run(venv, tomii, "replay", str(decisions))
    assert replayed.returncode == 0, replayed.stderr
    assert "in the recorded order" in replayed.stdout
    simulated = _run(venv, tomii, "simulate", str(ROOT / "examples" / "graphs" / "pipeline.json"),
                     "--workers", "64", "--frames", "5", "--scheduler", "c-fifo")  # fmt: skip
    assert simulated.returncode == 0, simulated.stderr
    python = str(venv / "bin" / "python")
    for flag, source, page in (
        ("--visualize", graph, tmp_path / "graph.html"),
        ("--view-trace", str(trace), tmp_path / "trace.html"),
    ):
        drawn = _run(venv, python, "-m", "tomii", flag, source, "--save", str(page))
        assert drawn.returncode == 0, drawn.stderr
        assert "://" not in page.read_text(encoding="utf-8").split("tomii-payload")[0]


def test_tomii_new_writes_projects_that_build_against_the_installed_sdk(
    venv: Path, tmp_path: Path
) -> None:
    sdk = _run(venv, str(venv / "bin" / "tomii"), "sdk")
    assert sdk.returncode == 0, sdk.stderr
    assert Path(sdk.stdout.strip()).is_relative_to(venv), sdk.stdout
    synthetic = _installed_synthetic(venv)
    # Outside any repository; cargo with the caller's environment (its home and registry cache).
    plugin_tests = ROOT / "target" / "plugin-tests"
    # Both directories in the repository's target/, not the user's shared build cache that the
    # project's .cargo/config.toml names.
    cargo_env = {
        **os.environ,
        "CARGO_TARGET_DIR": str(plugin_tests),
        "CARGO_BUILD_BUILD_DIR": str(plugin_tests),
    }
    for lang in ("c", "rust"):
        project = tmp_path / f"wheel_{lang}"
        made = _run(venv, str(venv / "bin" / "tomii"), "new", "scheduler", project.name,
                    "--lang", lang, "--dir", str(project))  # fmt: skip
        assert made.returncode == 0, made.stderr
        if lang == "c":
            subprocess.run(["make", "--quiet"], cwd=project, check=True, timeout=120)
            plugin = project / "libwheel_c.so"
        else:
            build = ["cargo", "build", "--quiet"]
            subprocess.run(build, cwd=project, env=cargo_env, check=True, timeout=1800)
            plugin = plugin_tests / "debug" / "libwheel_rust.so"
        ran = _run(venv, str(venv / "bin" / "tomii"), "run", "graph.json", "--dylib", synthetic,
                   "--scheduler-plugin", str(plugin), "--frames", "5", cwd=project)  # fmt: skip
        assert ran.returncode == 0, ran.stderr
        assert f"{project.name} on example: 5 frames" in ran.stdout


def _installed_synthetic(venv: Path) -> str:
    """The synthetic kernels' library shipped in the package installed in `venv`."""
    code = "import tomii; print(tomii.find_plugin('synthetic'))"
    return _run(venv, str(venv / "bin" / "python"), "-c", code).stdout.strip()
