"""`build()`: compiles a kernel plugin, Rust or C, into a library `run()` loads; never the runtime.

A Rust plugin is a cdylib crate whose functions carry `#[tomii_export]` and whose root calls
`tomii_types::kernel_library!`; `cargo build` compiles it against the plugin SDK (the crates
tomii-types and tomii-macros, shipped with this package, `sdk_dir()`). The crate depends on the
SDK by path, `tomii-types = { path = "<sdk_dir()>" }`; the older `tomii-types = "0.1"` is patched
to the SDK. A Tomii 1.2 crate (one depending on `tomii-macro`, or on 1.2's `tomii-types`: 1.x from
crates.io, where 1.2 published it, or a path to a 1.2 tree) builds unchanged against the compat
SDK (`_v12_crate`); any other `tomii-types` requirement is refused. A C plugin is a header whose
`// @tomii_export` declarations `_cgen` turns into wrappers and a registry, compiled with the C
sources into a shared library; or, for a plain C library its own build makes (Tomii 1.2's flow:
`make`, then `build(func_path=header)`, then `run(dylib=<make's library>)`), linked to that library
as a small glue library (`glue_for`).

Rust crates that are a workspace of their own share one build directory (`cargo_build_dir()`), so
the SDK's dependencies compile once per user, not once per crate; each library still goes to its
crate's `target/`.

The package's `tomii.build` is this module's `build()` (`BuildFunction`), carrying the module's
`build`, `sdk_dir` and `glue_for`: `tomii.build(...)` and `tomii.build.sdk_dir()` both work.
"""

from __future__ import annotations

import ctypes
import functools
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import _cgen
from ._v12_crate import V12Crate, read_v12_crate
from ._warnings import user_stacklevel
from .errors import PluginError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - depends on the interpreter
    import tomli as tomllib

__all__ = [
    "BuildFunction",
    "BuildResult",
    "build",
    "cargo_build_dir",
    "glue_for",
    "main",
    "sdk_dir",
]

#: How many of the compiler's last lines a PluginError quotes.
TAIL_LINES = 25
#: The suffix of a shared library on this platform.
LIBRARY_SUFFIX = {"darwin": ".dylib", "win32": ".dll"}.get(sys.platform, ".so")
#: The crates.io requirements on tomii-types that the SDK (0.1.0) meets, and so patches.
SDK_REQUIREMENT = re.compile(r"[=^~]?\s*0\.1(\.0)?")
#: The manifest tables that may name tomii-types.
DEPENDENCY_TABLES = ("dependencies", "dev-dependencies", "build-dependencies")
#: The environment variables that choose where cargo builds: with one of them set, `build()` keeps
#: the caller's choice rather than sharing `cargo_build_dir()`.
CARGO_DIRECTORY_VARIABLES = ("CARGO_TARGET_DIR", "CARGO_BUILD_TARGET_DIR", "CARGO_BUILD_BUILD_DIR")


@dataclass(frozen=True)
class BuildResult:
    """A built kernel plugin."""

    #: The library, for `run(dylib=...)` / `run_graph(dylibs=[...])`.
    path: Path
    #: "rust" or "c".
    language: str
    #: What it was built from: the crate's Cargo.toml, or the annotated header.
    source: Path
    #: For a C header: the object file of its wrappers and registry, which `glue_for` links to a
    #: plain C library. When the header was built without sources, `path` is this file too, and
    #: the kernels come from the library given to `run(dylib=...)`.
    wrappers: Path | None = None


def sdk_dir() -> Path:
    """The plugin SDK: the tomii-types crate directory (with `macros/` and the C headers in
    `include/`). An installed package carries a copy in `tomii/_sdk/` (put there by
    scripts/wheel_backend.py); in a source checkout it is the repository's own."""
    package = Path(__file__).resolve().parent
    for root in (package / "_sdk", package.parent.parent):
        sdk = root / "tomii-types"
        if (sdk / "Cargo.toml").is_file() and (sdk / "include" / "tomii" / "kernel.h").is_file():
            return sdk
    raise PluginError(
        f"the Tomii plugin SDK (tomii-types) is not in {package / '_sdk'}; reinstall tomii"
    )


def cargo_build_dir() -> Path:
    """The cargo build directory (`build.build-dir`: compiled dependencies, fingerprints and other
    intermediate files; Cargo 1.91 or newer) that the Rust crates `build()` compiles and the
    projects `tomii new` writes share, so that a new crate does not compile the SDK's dependencies
    again: `$XDG_CACHE_HOME/tomii/cargo-build`, by default `~/.cache/tomii/cargo-build`. Each
    crate's library still goes to its own `target/`. Deleting it costs one rebuild."""
    cache = os.environ.get("XDG_CACHE_HOME", "")
    root = Path(cache) if os.path.isabs(cache) else Path.home() / ".cache"
    return root / "tomii" / "cargo-build"


def build(
    *,
    func_path: str | os.PathLike[str] | None = None,
    wrap_path: str | os.PathLike[str] | None = None,
    reg_path: str | os.PathLike[str] | None = None,
    plugin_manifest: str | os.PathLike[str] | None = None,
    release: bool = True,
    clean: bool = False,
    env: Mapping[str, str] | None = None,
    sources: Sequence[str | os.PathLike[str]] | None = None,
    library: str | os.PathLike[str] | None = None,
) -> BuildResult:
    """Compiles the kernel plugin of `func_path` and returns where its library is.

    `func_path` ending in `.rs` builds the Rust crate of `plugin_manifest`, or of the nearest
    Cargo.toml above `func_path`; ending in `.h`, it builds a C plugin from the header's
    `// @tomii_export` declarations and its C sources: `sources`, or else every `.c` file beside
    the header and in `../src`, unless the plugin has a Makefile (its own build makes its library,
    as in Tomii 1.2) or `library` is given. `library` is a plain C library already built (no
    Tomii registry): the result is then a glue library linked to it. Built without sources, the
    result holds only the wrappers, and `run(dylib=<the plain library>)` links them to it. For C,
    `wrap_path` is where the generated wrappers and registry are written (default: beside the
    library, in the plugin's `target/`), and `reg_path` names a hand-written registry to compile
    instead of generating one. `release` optimises; `clean` rebuilds from scratch;
    `env` adds environment variables for the compiler (`CC`, `CFLAGS`, `CARGO_TARGET_DIR`...).
    A Rust crate that is a workspace of its own and builds where cargo does by default (no
    `CARGO_TARGET_DIR`, `CARGO_BUILD_TARGET_DIR` or `CARGO_BUILD_BUILD_DIR`, no directory in a
    cargo config file) compiles its dependencies in the shared `cargo_build_dir()`; its library
    goes to its `target/` all the same. Raises PluginError naming the file, with the compiler's
    last lines when it fails.
    """
    compiler_env = {**os.environ, **(env or {})}
    given = func_path if func_path is not None else plugin_manifest
    if given is None:
        raise ValueError("build() needs func_path (a .rs source or a .h header) or plugin_manifest")
    source = _existing(given)
    if source.suffix == ".h":
        if plugin_manifest is not None:
            # Tomii 1.2's "Build options" swap func_path for a header and keep the manifest line.
            warnings.warn(
                f"build(): plugin_manifest={str(plugin_manifest)!r} is for Rust plugins; the C "
                f"plugin of {source.name} is built from its header and sources, so it is ignored",
                stacklevel=user_stacklevel(),
            )
        if wrap_path is not None and reg_path is not None:
            raise ValueError(
                "wrap_path is where the generated registry is written; with reg_path nothing is generated"
            )
        if sources is not None and library is not None:
            raise ValueError(
                "sources are compiled into the plugin; library is a plain C library already "
                "built from them: give one or the other"
            )
        built = _build_c(
            source,
            sources=[] if library is not None else _given_sources(sources),
            wrap_path=None if wrap_path is None else Path(wrap_path),
            reg_path=None if reg_path is None else _existing(reg_path),
            release=release,
            clean=clean,
            env=compiler_env,
        )
        return built if library is None else _glued(built, _existing(library), compiler_env)
    if library is not None:
        raise ValueError("library is a plain C library for a C header's kernels, not for Rust")
    if source.suffix not in (".rs", ".toml"):
        raise ValueError(f"func_path must be a Rust source (.rs) or a C header (.h), got {source}")
    if wrap_path is not None or reg_path is not None:
        raise ValueError(
            "wrap_path and reg_path are for C plugins: a Rust plugin's wrappers and registry come "
            "from #[tomii_export] and tomii_types::kernel_library!"
        )
    if sources is not None:
        raise ValueError("sources are the C files of a C plugin; cargo finds a Rust crate's own")
    manifest = (
        _existing(plugin_manifest) if plugin_manifest is not None else _manifest_above(source)
    )
    return _build_rust(manifest, named=source, release=release, clean=clean, env=compiler_env)


def main(argv: Sequence[str]) -> int:
    """`tomii build`: builds a plugin and prints its library's path (for `tomii run --dylib`)."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="tomii build",
        description="Compile a kernel plugin: a Rust crate (a Tomii 1.2 crate builds unchanged) "
        "or an annotated C header; prints the library's path.",
    )
    parser.add_argument("source", nargs="?", help="a .rs source or a .h header (func_path)")
    parser.add_argument("--manifest-path", help="the crate's Cargo.toml (plugin_manifest)")
    parser.add_argument("--debug", action="store_true", help="an unoptimised build")
    parser.add_argument("--clean", action="store_true", help="rebuild the plugin from scratch")
    parser.add_argument(
        "--library",
        help="a plain C library its own build made (make): build the glue that loads it through "
        "the header's declarations, and print the glue's path",
    )
    args = parser.parse_args(list(argv))
    if args.source is None and args.manifest_path is None:
        parser.error("give a source file or --manifest-path")
    try:
        built = build(
            func_path=args.source,
            plugin_manifest=args.manifest_path,
            release=not args.debug,
            clean=args.clean,
            library=args.library,
        )
    except (PluginError, ValueError) as error:
        print(f"tomii build: {error}", file=sys.stderr)
        return 1
    print(built.path)
    return 0


def _existing(path: str | os.PathLike[str]) -> Path:
    resolved = Path(path).expanduser().resolve()
    if not resolved.is_file():
        raise PluginError(f"{path}: no such file")
    return resolved


def _manifest_above(source: Path) -> Path:
    for directory in source.parents:
        if (directory / "Cargo.toml").is_file():
            return directory / "Cargo.toml"
    raise PluginError(f"{source}: no Cargo.toml above it; pass plugin_manifest=")


def _tail(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return "\n".join(lines[-TAIL_LINES:])


def _run(command: list[str], *, env: dict[str, str], what: Path, tool: str) -> str:
    """Runs `command`; its stdout, or a PluginError naming `what` with the tool's last lines."""
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise PluginError(f"{what}: {command[0]} is not on PATH; install {tool}") from None
    if done.returncode != 0:
        raise PluginError(
            f"{what}: {tool} failed (exit code {done.returncode}); its last lines:\n"
            f"{_tail(done.stderr or done.stdout)}"
        )
    return done.stdout


# ----------------------------------------------------------------------------------------------
# Rust
# ----------------------------------------------------------------------------------------------


def _build_rust(
    manifest: Path, *, named: Path, release: bool, clean: bool, env: dict[str, str]
) -> BuildResult:
    v12 = read_v12_crate(manifest)
    if v12 is not None:
        return _build_v12(v12, named=named, release=release, clean=clean, env=env)
    cargo = env.get("CARGO", "cargo")
    patch = _sdk_patch(manifest)
    metadata = _metadata(cargo, manifest, env)
    env = _with_shared_build_dir(env, manifest, metadata)
    where = ["--manifest-path", str(manifest)]
    profile = ["--release"] if release else []
    if clean:
        package = _package_name(metadata, manifest)
        _run(
            [cargo, "clean", *where, *patch, *profile, "-p", package],
            env=env,
            what=named,
            tool="cargo",
        )
    command = [cargo, "build", "--lib", *where, *patch, *profile]
    output = _run(
        [*command, "--message-format", "json-render-diagnostics"], env=env, what=named, tool="cargo"
    )
    library = _cdylib_of(output, manifest)
    if library is None:
        raise PluginError(
            f'{manifest}: the crate builds no shared library; add `crate-type = ["cdylib"]` to its [lib]'
        )
    return BuildResult(path=library, language="rust", source=manifest)


def _build_v12(
    crate: V12Crate, *, named: Path, release: bool, clean: bool, env: dict[str, str]
) -> BuildResult:
    """Builds a Tomii 1.2 plugin crate unchanged, against the compat SDK (`_v12_crate`)."""
    cargo = env.get("CARGO", "cargo")
    target = crate.target_dir(env)
    generated, bridges = crate.write_build(sdk_dir(), target)
    build_env = {**env, "TOMII12_LIBRARY": crate.package}
    build_env.pop("CARGO_TARGET_DIR", None)
    if bridges is not None:
        build_env["TOMII12_BRIDGES"] = str(bridges)
    else:
        build_env.pop("TOMII12_BRIDGES", None)
    where = ["--manifest-path", str(generated), "--target-dir", str(target)]
    profile = ["--release"] if release else []
    if clean:
        _run(
            [cargo, "clean", *where, *profile, "-p", crate.package],
            env=build_env,
            what=named,
            tool="cargo",
        )
    output = _run(
        [cargo, "build", "--lib", *where, *profile, "--message-format", "json-render-diagnostics"],
        env=build_env,
        what=crate.manifest,
        tool="cargo (building the Tomii 1.2 crate against the compat SDK)",
    )
    library = _cdylib_of(output, generated.resolve())
    if library is None:
        raise PluginError(f"{crate.manifest}: cargo reported no library for the 1.2 crate")
    return BuildResult(path=library, language="rust", source=crate.manifest)


def _sdk_patch(manifest: Path) -> list[str]:
    """The cargo options that point the crate's `tomii-types = "0.1"` at the SDK: none for a
    crate that depends on it by path (or through Tomii's own workspace). A crates.io requirement
    that the SDK does not meet names the unrelated crate of that name: a PluginError."""
    requirement = _registry_requirement(manifest)
    if requirement is None:
        return []
    sdk = json.dumps(str(sdk_dir()))
    if SDK_REQUIREMENT.fullmatch(requirement.strip()) is None:
        raise PluginError(
            f"{manifest}: tomii-types = {json.dumps(requirement)} is neither this runtime's plugin "
            f"SDK (0.1) nor Tomii 1.2's (1.x, built against the compat SDK); depend on the plugin "
            f"SDK by path instead: tomii-types = {{ path = {sdk} }} (`tomii sdk` prints where it is)"
        )
    return ["--config", f"patch.crates-io.tomii-types.path={sdk}"]


def _registry_requirement(manifest: Path) -> str | None:
    """The crates.io version requirement of the manifest's tomii-types dependency, if it has one
    (rather than a path, git or workspace dependency)."""
    try:
        document = tomllib.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise PluginError(f"{manifest}: cannot read the manifest: {error}") from None
    for table in DEPENDENCY_TABLES:
        entry = document.get(table, {}).get("tomii-types")
        if isinstance(entry, str):
            return entry
        if isinstance(entry, dict) and not {"path", "git", "workspace"} & entry.keys():
            return str(entry.get("version", "*"))
    return None


def _metadata(cargo: str, manifest: Path, env: dict[str, str]) -> dict[str, Any]:
    """`cargo metadata --no-deps` of the crate: its workspace's packages and directories."""
    command = [cargo, "metadata", "--no-deps", "--format-version", "1", "--manifest-path"]
    metadata: dict[str, Any] = json.loads(
        _run([*command, str(manifest)], env=env, what=manifest, tool="cargo")
    )
    return metadata


def _with_shared_build_dir(
    env: dict[str, str], manifest: Path, metadata: Mapping[str, Any]
) -> dict[str, str]:
    """`env`, with cargo's build directory set to the shared `cargo_build_dir()` when the crate of
    `manifest` is a workspace of its own and builds where cargo does by default (its `target/`):
    neither an environment variable nor a cargo config file chose a directory. A crate in a larger
    workspace builds in that workspace's `target/`, which holds what the workspace compiled."""
    if any(env.get(name) for name in CARGO_DIRECTORY_VARIABLES):
        return env
    root = Path(metadata["workspace_root"])
    default = root / "target"
    # Cargo before 1.91 reports no build directory, and ignores the setting.
    chosen = {metadata["target_directory"], metadata.get("build_directory", default)}
    if root != manifest.parent or {Path(directory) for directory in chosen} != {default}:
        return env
    return {**env, "CARGO_BUILD_BUILD_DIR": str(cargo_build_dir())}


def _package_name(metadata: Mapping[str, Any], manifest: Path) -> str:
    """The name of the package of `manifest`, from its workspace's `metadata`."""
    for package in metadata["packages"]:
        if Path(package["manifest_path"]).resolve() == manifest:
            return str(package["name"])
    raise PluginError(f"{manifest}: cargo metadata does not list this package")


def _cdylib_of(messages: str, manifest: Path) -> Path | None:
    """The shared library that cargo's JSON `messages` report for the crate of `manifest`."""
    for line in messages.splitlines():
        if not line.startswith("{"):
            continue
        message = json.loads(line)
        if message.get("reason") != "compiler-artifact":
            continue
        if Path(message["manifest_path"]).resolve() != manifest:
            continue
        if "cdylib" not in message["target"]["crate_types"]:
            continue
        for file in message["filenames"]:
            if file.endswith(LIBRARY_SUFFIX):
                return Path(file)
    return None


# ----------------------------------------------------------------------------------------------
# C
# ----------------------------------------------------------------------------------------------

#: The names make looks for: a plugin directory with one builds its own library.
MAKEFILES = ("GNUmakefile", "makefile", "Makefile")


def _given_sources(sources: Sequence[str | os.PathLike[str]] | None) -> list[Path] | None:
    return None if sources is None else [_existing(s) for s in sources]


def _plugin_root(header: Path) -> Path:
    """The plugin's directory: the header's, or its parent when the header is in `include/`."""
    return header.parent.parent if header.parent.name == "include" else header.parent


def _c_sources(header: Path) -> list[Path]:
    """The sources build() compiles when none are given: none when a Makefile builds the
    library, else the `.c` files beside the header and in `../src`."""
    root = _plugin_root(header)
    if any((root / name).is_file() for name in MAKEFILES):
        return []
    directories = [header.parent, root / "src"]
    return sorted({p for d in directories if d.is_dir() for p in d.glob("*.c")})


def _compiler(env: Mapping[str, str], header: Path, release: bool) -> list[str]:
    optimise = ["-O2"] if release else ["-O0", "-g"]
    return [
        *shlex.split(env.get("CC", "cc")),
        "-fPIC",
        *optimise,
        "-Wall",
        "-Werror=implicit-function-declaration",
        "-I",
        str(sdk_dir() / "include"),
        "-I",
        str(header.parent),
        *shlex.split(env.get("CFLAGS", "")),
    ]


def _build_c(
    header: Path,
    *,
    sources: list[Path] | None,
    wrap_path: Path | None,
    reg_path: Path | None,
    release: bool,
    clean: bool,
    env: dict[str, str],
) -> BuildResult:
    out_dir = _plugin_root(header) / "target" / ("release" if release else "debug")
    if clean:
        shutil.rmtree(out_dir, ignore_errors=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    c_files = sources if sources is not None else _c_sources(header)
    if reg_path is not None:
        registry = reg_path
    else:
        kernels = _cgen.parse_header(header)
        registry = (
            wrap_path.resolve() if wrap_path is not None else out_dir / f"{header.stem}_registry.c"
        )
        registry.parent.mkdir(parents=True, exist_ok=True)
        registry.write_text(_cgen.generate(header, kernels, header.stem), encoding="utf-8")
    wrappers = out_dir / f"{header.stem}_registry.o"
    compiler = _compiler(env, header, release)
    _run(
        [*compiler, "-c", str(registry), "-o", str(wrappers)],
        env=env,
        what=header,
        tool="the C compiler",
    )
    if not c_files:
        return BuildResult(path=wrappers, language="c", source=header, wrappers=wrappers)
    library = out_dir / f"lib{header.stem}{LIBRARY_SUFFIX}"
    command = [
        *compiler,
        "-shared",
        str(wrappers),
        *(str(f) for f in c_files),
        "-o",
        str(library),
        *shlex.split(env.get("LDFLAGS", "")),
        "-lm",
        "-pthread",
    ]
    _run(command, env=env, what=header, tool="the C compiler")
    return BuildResult(path=library, language="c", source=header, wrappers=wrappers)


def glue_for(built: BuildResult, library: str | os.PathLike[str]) -> Path:
    """The library to load for `library`, given the C plugin `built`: `library` itself when it
    has a Tomii registry; for a plain C library (one `make` built), the glue library that links
    `built`'s wrappers to it, made (or remade, when either is newer) beside the wrappers.
    Raises PluginError when the plain library lacks a function of the header."""
    path = _existing(library)
    if built.language != "c" or built.wrappers is None or _has_registry(path):
        return path
    return _glued(built, path, dict(os.environ)).path


def _glued(built: BuildResult, library: Path, env: Mapping[str, str]) -> BuildResult:
    """`built` with its wrappers linked to the plain C library `library`."""
    assert built.wrappers is not None
    glue = (
        built.wrappers.parent / f"{library.name.removesuffix(LIBRARY_SUFFIX)}.tomii{LIBRARY_SUFFIX}"
    )
    newest = max(library.stat().st_mtime_ns, built.wrappers.stat().st_mtime_ns)
    if not glue.is_file() or glue.stat().st_mtime_ns < newest:
        strict = ["-Wl,--no-undefined"] if sys.platform.startswith("linux") else []
        command = [
            *shlex.split(env.get("CC", "cc")),
            "-shared",
            str(built.wrappers),
            str(library),
            f"-Wl,-rpath,{library.parent}",
            "-o",
            str(glue),
            *strict,
            *shlex.split(env.get("LDFLAGS", "")),
            "-lm",
            "-pthread",
        ]
        tool = f"linking it to the kernels of {built.source.name} (does it define them all?)"
        _run(command, env=dict(env), what=library, tool=tool)
    return BuildResult(path=glue, language="c", source=built.source, wrappers=built.wrappers)


def _has_registry(library: Path) -> bool:
    """Whether `library` exports the kernel registry (`tomii_kernels_v1`)."""
    try:
        return hasattr(ctypes.CDLL(str(library)), "tomii_kernels_v1")
    except OSError as error:
        raise PluginError(f"{library}: cannot load library: {error}") from None


class BuildFunction:
    """What the package's name `tomii.build` is: calling it is `build()`, and it carries this
    module's functions, so that `tomii.build(func_path=...)`, `tomii.build.build(...)`,
    `tomii.build.sdk_dir()` and `tomii.build.glue_for(...)` all work (a plain function of that
    name would hide the module). Its signature and docstring are `build()`'s."""

    __call__ = staticmethod(build)
    build = staticmethod(build)
    sdk_dir = staticmethod(sdk_dir)
    glue_for = staticmethod(glue_for)

    def __init__(self) -> None:
        functools.update_wrapper(self, build)
