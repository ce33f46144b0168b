"""The `--synthetic` option the Python benchmarks of bench/ share: which libtomii_synthetic.so
their graphs' `noop` kernels come from."""

from __future__ import annotations

import argparse
from pathlib import Path

import tomii


def add_synthetic_option(parser: argparse.ArgumentParser) -> None:
    """Adds `--synthetic PATH` to `parser`; `synthetic_plugin` reads it."""
    parser.add_argument(
        "--synthetic",
        type=Path,
        default=None,
        help="libtomii_synthetic.so (default: the package's, else target/release or target/debug)",
    )


def synthetic_plugin(args: argparse.Namespace) -> Path:
    """The library `--synthetic` names, else the one `tomii.find_plugin` finds."""
    path: Path = args.synthetic or tomii.find_plugin("synthetic")
    return path
