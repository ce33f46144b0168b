"""`tomii migrate CHECKOUT`: points a Tomii 1.2 checkout at this installation, so that its scripts,
plugin crates and benchmarks run unchanged on this runtime.

A 1.2 checkout carries 1.2's own runtime, and its scripts reach it three ways: `import tomii` finds
the checkout's in-tree package (the scripts put the checkout's root first on `sys.path`), plugin
crates depend on the checkout's `tomii-types` and `tomii-macro` by path, and benchmark scripts
build and call `target/release/main` (`cargo build -p tomii-core --bin main`). Migrating replaces
those three, and nothing of the user's:

- the in-tree Python package `tomii/` moves aside (its `_python_bridge/` crate stays, as a member
  of the checkout's Cargo workspace; a directory without `__init__.py` never shadows this package);
- `tomii-types/` and `tomii-macro/` become two small crates that re-export this runtime's Tomii 1.2
  kernel SDK (`tomii12-types`, `tomii12-macro`), so a plugin crate built by plain `cargo build`
  is a library this runtime loads;
- `tomii-core/` becomes a crate whose `main` binary runs this installation's `tomii` command with
  the same arguments (1.2's flags, without a subcommand).

What moves aside goes to `.tomii-1.2/` in the checkout, and `tomii migrate --undo CHECKOUT` puts it
back. Migrating twice is refused; so is a directory that is not a 1.2 checkout.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from .build import sdk_dir
from .errors import TomiiError

__all__ = ["BACKUP", "MigrationError", "migrate", "undo"]

#: Where a migrated checkout keeps what it moved aside.
BACKUP = ".tomii-1.2"
#: The 1.2 crates a migration replaces.
CRATES = ("tomii-core", "tomii-types", "tomii-macro")
#: What stays of the in-tree package: the Cargo workspace names it as a member.
BRIDGE = "_python_bridge"
#: The record of what a migration did, read by `undo`.
RECORD = "migration.json"


class MigrationError(TomiiError):
    """A checkout that cannot be migrated (or restored), with what to do."""


def migrate(checkout: str | Path, *, tomii_command: Sequence[str] | None = None) -> list[str]:
    """Migrates the 1.2 checkout at `checkout`; returns one line per change made.

    `tomii_command` is the command the checkout's `main` runs (default: this interpreter running
    `tomii.cli`, so that `main` uses this very installation)."""
    root = Path(checkout).resolve()
    _check_checkout(root)
    backup = root / BACKUP
    if backup.exists():
        raise MigrationError(
            f"{root} is migrated already ({backup} exists); `tomii migrate --undo {root}` restores it"
        )
    command = list(tomii_command or [sys.executable, "-m", "tomii.cli"])
    sdk = sdk_dir()
    compat = {name: sdk / "v12" / part for name, part in (("types", "types"), ("macro", "macro"))}
    for name, path in compat.items():
        if not (path / "Cargo.toml").is_file():
            raise MigrationError(
                f"this installation has no Tomii 1.2 kernel SDK ({name}: {path}); reinstall tomii"
            )

    backup.mkdir()
    moved: list[str] = []
    changes: list[str] = []
    package = root / "tomii"
    if package.is_dir():
        (backup / "tomii").mkdir()
        for entry in sorted(package.iterdir()):
            if entry.name == BRIDGE:
                continue
            shutil.move(str(entry), backup / "tomii" / entry.name)
            moved.append(f"tomii/{entry.name}")
        changes.append(
            f"moved the in-tree package tomii/ to {BACKUP}/tomii/ (kept tomii/{BRIDGE}/, a workspace member)"
        )
    for crate in CRATES:
        if (root / crate).exists():
            shutil.move(str(root / crate), backup / crate)
            moved.append(crate)
    _write_types(root / "tomii-types", compat["types"])
    _write_macro(root / "tomii-macro", compat["macro"])
    _write_core(root / "tomii-core", command)
    changes.append(
        f"tomii-types/ and tomii-macro/ now re-export this runtime's Tomii 1.2 kernel SDK ({sdk / 'v12'})"
    )
    changes.append(f"tomii-core/'s `main` now runs: {' '.join(command)} ARGS...")
    (backup / RECORD).write_text(json.dumps({"moved": moved, "written": list(CRATES)}, indent=2))
    changes.append(f"the 1.2 files are in {backup}; `tomii migrate --undo {root}` puts them back")
    return changes


def undo(checkout: str | Path) -> list[str]:
    """Restores a migrated checkout as it was; returns one line per change made."""
    root = Path(checkout).resolve()
    backup = root / BACKUP
    record_file = backup / RECORD
    if not record_file.is_file():
        raise MigrationError(f"{root} is not migrated: {record_file} does not exist")
    record = json.loads(record_file.read_text())
    for crate in record["written"]:
        shutil.rmtree(root / crate, ignore_errors=True)
    for name in record["moved"]:
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(backup / name), target)
    shutil.rmtree(backup)
    return [f"restored {', '.join(record['moved'])} in {root}"]


def _check_checkout(root: Path) -> None:
    manifest = root / "Cargo.toml"
    missing = [c for c in CRATES if not (root / c / "Cargo.toml").is_file()]
    if not manifest.is_file() or "[workspace]" not in manifest.read_text():
        raise MigrationError(f"{root} is not a Tomii 1.2 checkout: it has no Cargo workspace")
    if missing and not (root / BACKUP).exists():
        raise MigrationError(
            f"{root} is not a Tomii 1.2 checkout: it lacks {', '.join(missing)} "
            f"(a 1.2 checkout has {', '.join(CRATES)} and the tomii/ package)"
        )


def _manifest(name: str, body: str) -> str:
    return (
        "# Written by `tomii migrate`: this crate stands for Tomii 1.2's own and forwards to the\n"
        "# installed runtime. `tomii migrate --undo ..` restores 1.2's.\n"
        f'[package]\nname = "{name}"\nversion = "1.0.0"\nedition = "2021"\npublish = false\n\n{body}'
    )


def _write_types(directory: Path, compat: Path) -> None:
    (directory / "src").mkdir(parents=True)
    (directory / "Cargo.toml").write_text(
        _manifest("tomii-types", f'[dependencies]\ntomii12-types = {{ path = "{compat}" }}\n')
    )
    (directory / "src" / "lib.rs").write_text(
        "//! Tomii 1.2's `tomii_types`, as this runtime's Tomii 1.2 kernel SDK provides it.\n"
        "pub use tomii12_types::*;\n"
    )


def _write_macro(directory: Path, compat: Path) -> None:
    (directory / "src").mkdir(parents=True)
    (directory / "Cargo.toml").write_text(
        _manifest("tomii-macro", f'[dependencies]\ntomii12-macro = {{ path = "{compat}" }}\n')
    )
    (directory / "src" / "lib.rs").write_text(
        "//! Tomii 1.2's `#[tomii_export]`, as this runtime's Tomii 1.2 kernel SDK provides it.\n"
        "pub use tomii12_macro::*;\n"
    )


def _write_core(directory: Path, command: Sequence[str]) -> None:
    (directory / "src" / "bin").mkdir(parents=True)
    (directory / "Cargo.toml").write_text(
        _manifest("tomii-core", '[[bin]]\nname = "main"\npath = "src/bin/main.rs"\n')
    )
    (directory / "src" / "lib.rs").write_text(
        "//! Tomii 1.2's runtime crate is replaced by the installed runtime: only `main` is here.\n"
    )
    program, *leading = command
    source = MAIN_RS.replace("PROGRAM", json.dumps(program)).replace("LEADING", json.dumps(leading))
    (directory / "src" / "bin" / "main.rs").write_text(source)


#: The checkout's `main`: the installed `tomii` with the same arguments and exit status.
MAIN_RS = """//! Tomii 1.2's `main`: runs the installed `tomii` with the same arguments and exit status.
use std::process::{exit, Command};

fn main() {
    let program = PROGRAM;
    let leading: &[&str] = &LEADING;
    let status = Command::new(program).args(leading).args(std::env::args_os().skip(1)).status();
    match status {
        Ok(status) => exit(status.code().unwrap_or(1)),
        Err(error) => {
            eprintln!("error: cannot start {program}: {error}; run `tomii migrate` again from the installation to use");
            exit(127)
        }
    }
}
"""


def main(argv: Sequence[str]) -> int:
    """`tomii migrate [--undo] CHECKOUT`."""
    parser = argparse.ArgumentParser(
        prog="tomii migrate",
        description="Point a Tomii 1.2 checkout at this installation (its in-tree package, "
        "tomii-types, tomii-macro and main), or with --undo restore it.",
    )
    parser.add_argument("checkout", help="the Tomii 1.2 checkout (its root, with Cargo.toml)")
    parser.add_argument("--undo", action="store_true", help="restore what a migration moved aside")
    args = parser.parse_args(list(argv))
    try:
        lines = undo(args.checkout) if args.undo else migrate(args.checkout)
    except (TomiiError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    for line in lines:
        print(line)
    return 0
