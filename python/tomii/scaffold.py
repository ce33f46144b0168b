"""`tomii new scheduler NAME --lang rust|c`: writes a ready scheduler project, anywhere, from the
templates in `_templates/` (shipped in the wheel with the package).

A project builds against the plugin SDK installed with this package (`tomii.build.sdk_dir()`), by
an absolute path written into its Cargo.toml or Makefile: never the crates.io crate that happens
to be named tomii-types. A Rust project compiles its dependencies in the build directory that all
of them share (`tomii.build.cargo_build_dir()`, written into its `.cargo/config.toml`). Its README
and Makefile name the Python that wrote it, which has tomii. It never overwrites a file: the
directory must be new or empty.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from .build import cargo_build_dir, sdk_dir
from .errors import TomiiError

__all__ = ["PROJECT_FILES", "main", "new_scheduler", "sdk_main"]

TEMPLATES = Path(__file__).resolve().parent / "_templates"
#: A name: lowercase letters, digits, `_` and `-`, starting with a letter (a crate and file name).
NAME = re.compile(r"[a-z][a-z0-9_-]{0,63}")
#: Per language, the files of a project (their paths, `@LIB@` standing for the library's name)
#: and the template each is made from.
PROJECT_FILES: dict[str, dict[str, str]] = {
    "rust": {
        "Cargo.toml": "rust/Cargo.toml.tmpl",
        "src/lib.rs": "rust/lib.rs.tmpl",
        "README.md": "rust/README.md.tmpl",
        ".gitignore": "rust/gitignore.tmpl",
        ".cargo/config.toml": "rust/cargo-config.toml.tmpl",
        "graph.json": "common/graph.json",
        "sweep.toml": "common/sweep.toml.tmpl",
        "tests/test_properties.py": "common/test_properties.py.tmpl",
    },
    "c": {
        "Makefile": "c/Makefile.tmpl",
        "@LIB@.c": "c/scheduler.c.tmpl",
        "README.md": "c/README.md.tmpl",
        ".gitignore": "c/gitignore.tmpl",
        "graph.json": "common/graph.json",
        "sweep.toml": "common/sweep.toml.tmpl",
        "tests/test_properties.py": "common/test_properties.py.tmpl",
    },
}


def new_scheduler(name: str, *, lang: str, directory: str | os.PathLike[str] | None = None) -> Path:
    """Writes a scheduler project `name` in `lang` ("rust" or "c") into `directory` (default:
    `./name`) and returns the directory. The scheduler is a simple, correct FIFO to edit; the
    project's README.md says how to build, run, check and compare it.

    Raises ValueError for a bad name or language, FileExistsError when `directory` is a file or
    a directory that is not empty, and tomii.PluginError when the SDK is missing.
    """
    if not isinstance(name, str) or NAME.fullmatch(name) is None:
        raise ValueError(
            f"bad scheduler name {name!r}: use 1 to 64 lowercase letters, digits, '_' and '-', "
            "starting with a letter"
        )
    if lang not in PROJECT_FILES:
        raise ValueError(f"unknown language {lang!r}: use one of {', '.join(PROJECT_FILES)}")
    target = Path(name if directory is None else directory).resolve()
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise FileExistsError(f"{target} exists and is not an empty directory; choose another")
    values = _values(name, lang)
    for path, template in PROJECT_FILES[lang].items():
        text = _render((TEMPLATES / template).read_text(encoding="utf-8"), values)
        file = target / _render(path, values)
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(text, encoding="utf-8")
    return target


def _values(name: str, lang: str) -> dict[str, str]:
    """What each placeholder `@KEY@` of the templates stands for."""
    lib = name.replace("-", "_")
    sdk = sdk_dir()
    return {
        "NAME": name,
        "LIB": lib,
        # The Rust type: my_sched → MySched.
        "TYPE": "".join(part.capitalize() for part in lib.split("_")),
        # TOML strings (JSON's escapes are TOML's).
        "SDK": json.dumps(str(sdk)),
        "BUILD_DIR": json.dumps(str(cargo_build_dir())),
        "SDK_INCLUDE": str(sdk / "include"),
        "LIBRARY": f"target/release/lib{lib}.so" if lang == "rust" else f"lib{lib}.so",
        "PYTHON": _python(),
        "ENVIRONMENT": _environment(),
    }


def _python() -> str:
    """The Python that has tomii: this one (unresolved, so that a virtualenv's stays its own)."""
    return sys.executable or "python3"


def _environment() -> str:
    """The README's words on where its `tomii` and `python` come from: the virtualenv to activate
    when this Python is one, else this Python's path."""
    if sys.prefix != sys.base_prefix:
        activate = Path(sys.prefix) / "bin" / "activate"
        return (
            "those of the virtualenv that `tomii new` ran from, so activate it first, in each new "
            f"shell:\n\n```sh\nsource {activate}\n```"
        )
    return (
        f"`tomii new` ran from `{_python()}`, so use it where the commands say `python`,\nand put "
        "the directory of its `tomii` command on PATH (`~/.local/bin` after `pip install --user`)."
    )


def _render(text: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        text = text.replace(f"@{key}@", value)
    return text


# ----------------------------------------------------------------------------------------------
# The command line


class _Parser(argparse.ArgumentParser):
    """Usage errors are one `error:` line, as every tomii command's are."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {message} (`{self.prog} --help` lists the options)\n")


def _parser() -> _Parser:
    parser = _Parser(prog="tomii new", description="Write a new project, ready to build.")
    kinds = parser.add_subparsers(dest="kind", required=True, metavar="KIND", parser_class=_Parser)
    scheduler = kinds.add_parser(
        "scheduler", help="a scheduler plugin: a FIFO to edit, with tests and a sweep"
    )
    scheduler.add_argument("name", metavar="NAME", help="the scheduler's name, e.g. my_sched")
    scheduler.add_argument("--lang", required=True, help="rust or c")
    scheduler.add_argument("--dir", type=Path, help="where to write it (default: ./NAME)")
    return parser


def main(argv: Sequence[str]) -> int:
    """`tomii new scheduler NAME --lang rust|c [--dir PATH]`; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        project = new_scheduler(args.name, lang=args.lang, directory=args.dir)
    except (ValueError, OSError, TomiiError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"wrote {project} (a {args.lang} scheduler {args.name!r}); its README.md says what next")
    print(f"built against the Tomii plugin SDK in {sdk_dir()}")
    return 0


def sdk_main(argv: Sequence[str]) -> int:
    """`tomii sdk`: prints the plugin SDK's directory (`tomii.build.sdk_dir()`)."""
    if argv:
        print(f"error: tomii sdk takes no arguments, got {' '.join(argv)}", file=sys.stderr)
        return 2
    try:
        print(sdk_dir())
    except TomiiError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0
