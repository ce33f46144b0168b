"""The PEP 517 build backend of the `tomii` package: maturin, plus what a wheel ships beside the
compiled module.

`pip install .` builds the compiled module with maturin; before that, this backend
- builds every scheduler of schedulers/ and the synthetic kernels of plugins/synthetic in release
  mode and copies their libraries into python/tomii/_plugins/, so that an installed package finds
  its schedulers by name;
- copies the plugin SDK (the tomii-types crate with its macros and C headers, as source) into
  python/tomii/_sdk/, so that `tomii.build` compiles kernel plugins against it after installation.
Both directories are gitignored; pyproject.toml includes them. Everything else is maturin's.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import maturin  # type: ignore[import-untyped]
from maturin import (
    build_sdist,
    get_requires_for_build_editable,
    get_requires_for_build_sdist,
    get_requires_for_build_wheel,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)

__all__ = [
    "build_editable",
    "build_sdist",
    "build_wheel",
    "bundle_plugins",
    "bundle_sdk",
    "get_requires_for_build_editable",
    "get_requires_for_build_sdist",
    "get_requires_for_build_wheel",
    "prepare_metadata_for_build_editable",
    "prepare_metadata_for_build_wheel",
]

ROOT = Path(__file__).resolve().parents[1]
DESTINATION = ROOT / "python" / "tomii" / "_plugins"
SDK_DESTINATION = ROOT / "python" / "tomii" / "_sdk"
#: The files of the plugin SDK, relative to the repository.
SDK_FILES = (
    "tomii-types/Cargo.toml",
    "tomii-types/src/**/*.rs",
    "tomii-types/include/tomii/*.h",
    "tomii-types/macros/Cargo.toml",
    "tomii-types/macros/src/**/*.rs",
    # The Tomii 1.2 compat SDK: 1.2 plugin crates build against it unchanged.
    "tomii-types/v12/*/Cargo.toml",
    "tomii-types/v12/*/build.rs",
    "tomii-types/v12/*/src/**/*.rs",
)


def plugin_crates() -> list[str]:
    """The package names of the crates whose libraries the wheel ships."""
    manifests = sorted(ROOT.glob("schedulers/*/Cargo.toml")) + [
        ROOT / "plugins" / "synthetic" / "Cargo.toml"
    ]
    names = []
    for manifest in manifests:
        found = re.search(
            r'^name\s*=\s*"([^"]+)"', manifest.read_text(encoding="utf-8"), re.MULTILINE
        )
        if found is None:
            raise RuntimeError(f"{manifest}: no package name")
        names.append(found.group(1))
    return names


def bundle_plugins() -> list[Path]:
    """Builds the shipped plugins in release mode and copies them into the package."""
    command = ["cargo", "build", "--release", "--locked"]
    for crate in plugin_crates():
        command += ["-p", crate]
    subprocess.run(command, cwd=ROOT, check=True)
    release = ROOT / "target" / "release"
    libraries = sorted(release.glob("libtomii_sched_*.so")) + [
        release / "libtomii_synthetic.so",
        release / "libtomii_replay.so",  # tomii replay's scheduler
    ]
    if DESTINATION.exists():
        shutil.rmtree(DESTINATION)
    DESTINATION.mkdir(parents=True)
    for library in libraries:
        shutil.copy2(library, DESTINATION / library.name)
    return [DESTINATION / library.name for library in libraries]


def bundle_sdk() -> None:
    """Copies the plugin SDK into the package."""
    if SDK_DESTINATION.exists():
        shutil.rmtree(SDK_DESTINATION)
    for pattern in SDK_FILES:
        for file in sorted(ROOT.glob(pattern)):
            target = SDK_DESTINATION / file.relative_to(ROOT)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(file, target)


def _bundled(build: Callable[..., Any]) -> Callable[..., str]:
    """The maturin hook `build`, run once the plugins and the SDK are bundled into the package."""

    def hook(
        wheel_directory: str,
        config_settings: Mapping[str, Any] | None = None,
        metadata_directory: str | None = None,
    ) -> str:
        bundle_plugins()
        bundle_sdk()
        return str(build(wheel_directory, config_settings, metadata_directory))

    hook.__name__ = build.__name__
    return hook


build_wheel = _bundled(maturin.build_wheel)
build_editable = _bundled(maturin.build_editable)
