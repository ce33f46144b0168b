"""`tomii migrate`: a checkout laid out as Tomii 1.2's (its runtime crates, its in-tree package, a
plugin crate depending on the checkout's tomii-types and tomii-macro by path) runs on this runtime
after migrating: its plugin built by plain `cargo build`, its `main` built by `cargo build -p
tomii-core --bin main` and called with 1.2's flags, its scripts importing this package; and
`--undo` puts every 1.2 file back."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tomii.cli import main as tomii_main
from tomii.migrate import BACKUP, MigrationError, migrate, undo

WORKSPACE = """[workspace]
members = ["tomii-core", "tomii-types", "tomii-macro", "tomii/_python_bridge", "examples/*"]
resolver = "2"
"""

PLUGIN_MANIFEST = """[package]
name = "doubler"
version = "0.1.0"
edition = "2021"
publish = false

[lib]
name = "doubler"
crate-type = ["dylib", "rlib"]

[dependencies]
tomii-types = { path = "../../tomii-types" }
tomii-macro = { path = "../../tomii-macro" }
"""

PLUGIN_SOURCE = """#![allow(improper_ctypes_definitions)]

use tomii_macro::tomii_export;

#[tomii_export]
pub fn seed(n: usize) -> f64 {
    n as f64
}

#[tomii_export]
pub fn double(x: f64) -> f64 {
    2.0 * x
}
"""

# In 1.2's form: string values, `indexes`, a constant written as `args`.
GRAPH = """{
  "initializations": [{"name": "n", "args": [{"type": "usize", "value": "21"}]}],
  "nodes": [
    {"name": "first", "function": "seed", "args": [{"type": "$ref", "value": "n"}]},
    {"name": "second", "function": "double",
     "args": [{"type": "$res", "predecessor": {"name": "first", "indexes": "0"}}]}
  ]
}
"""


def _crate(directory: Path, name: str, source: str = "") -> None:
    (directory / "src").mkdir(parents=True)
    (directory / "Cargo.toml").write_text(
        f'[package]\nname = "{name}"\nversion = "1.0.0"\nedition = "2021"\n'
    )
    (directory / "src" / "lib.rs").write_text(source)


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A directory laid out as a Tomii 1.2 checkout, with its own files in 1.2's places."""
    root = tmp_path / "tomii-1.2"
    root.mkdir()
    (root / "Cargo.toml").write_text(WORKSPACE)
    for crate in ("tomii-core", "tomii-types", "tomii-macro"):
        _crate(root / crate, crate, 'compile_error!("Tomii 1.2\'s own crate");\n')
    (root / "tomii").mkdir()
    (root / "tomii" / "__init__.py").write_text("raise ImportError('Tomii 1.2 in-tree package')\n")
    (root / "tomii" / "_graph.py").write_text("")
    _crate(root / "tomii" / "_python_bridge", "tomii-python-bridge")
    plugin = root / "examples" / "doubler"
    (plugin / "src").mkdir(parents=True)
    (plugin / "Cargo.toml").write_text(PLUGIN_MANIFEST)
    (plugin / "src" / "lib.rs").write_text(PLUGIN_SOURCE)
    (plugin / "graph.json").write_text(GRAPH)
    return root


def _cargo(root: Path, *args: str) -> None:
    env = {**os.environ, "CARGO_TARGET_DIR": str(root / "target")}
    done = subprocess.run(
        ["cargo", *args], cwd=root, env=env, check=False, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]


def test_a_migrated_checkout_builds_and_runs_on_this_runtime(checkout: Path) -> None:
    lines = migrate(checkout)
    assert any("tomii/" in line for line in lines)
    assert (checkout / "tomii" / "_python_bridge" / "Cargo.toml").is_file()
    assert not (checkout / "tomii" / "__init__.py").exists()

    # The plugin exactly as its author left it, built by plain cargo, and 1.2's `main`.
    _cargo(checkout, "build", "--manifest-path", "examples/doubler/Cargo.toml")
    _cargo(checkout, "build", "-p", "tomii-core", "--bin", "main")
    plugin = checkout / "examples" / "doubler"
    report = checkout / "report.json"
    ran = subprocess.run(
        [
            str(checkout / "target" / "debug" / "main"),
            "--json",
            str(plugin / "graph.json"),
            "--dylib",
            str(checkout / "target" / "debug" / "libdoubler.so"),
            "--max-streams",
            "3",
            "--report",
            str(report),
        ],
        check=False,
        capture_output=True,
        text=True,
    )
    assert ran.returncode == 0, ran.stderr
    assert '"frames": 3' in report.read_text()

    # A script that puts the checkout first on sys.path, as 1.2's do, imports this package.
    script = "import sys; sys.path.insert(0, sys.argv[1]); import tomii; print(tomii.__file__)"
    found = subprocess.run(
        [sys.executable, "-c", script, str(checkout)], check=False, capture_output=True, text=True
    )
    assert found.returncode == 0, found.stderr
    assert str(checkout) not in found.stdout

    undo(checkout)
    assert (checkout / "tomii" / "__init__.py").is_file()
    assert "compile_error" in (checkout / "tomii-types" / "src" / "lib.rs").read_text()
    assert not (checkout / BACKUP).exists()


def test_migrating_twice_or_a_directory_that_is_not_a_checkout_is_refused(
    checkout: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    migrate(checkout)
    with pytest.raises(MigrationError, match="migrated already"):
        migrate(checkout)
    assert tomii_main(["migrate", str(tmp_path)]) == 1
    assert "not a Tomii 1.2 checkout" in capsys.readouterr().err
    with pytest.raises(MigrationError, match="not migrated"):
        undo(tmp_path)
