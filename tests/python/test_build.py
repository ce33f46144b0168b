"""`tomii.build.build()`: Rust and C kernel plugins compiled from Python and run, a Rust crate
outside the repository, the C conventions value by value, and every error as a PluginError naming
the file; where a crate's dependencies compile (`cargo_build_dir()`), and `tomii.build` both called
and read as the module. Rust builds use a shared target directory under target/ so reruns reuse
dependencies."""

from __future__ import annotations

import inspect
import json
import math
import os
import re
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matrix_reference import ATOL, C_HEADER, RTOL, RUST_SOURCE, checksum, expected, graph, written
from reference import ROOT

import tomii
from tomii.build import (
    CARGO_DIRECTORY_VARIABLES,
    BuildResult,
    _metadata,
    _with_shared_build_dir,
    build,
    cargo_build_dir,
    glue_for,
    sdk_dir,
)

#: Where the crates of these tests build, shared across runs (target/ is never committed).
CARGO_TARGET = ROOT / "target" / "plugin-tests"
CARGO_ENV = {"CARGO_TARGET_DIR": str(CARGO_TARGET)}


def run_example(library: BuildResult, out: Path) -> float:
    """Runs the matrix-compute graph with `library`; checks the file; returns the checksum."""
    result = tomii.run_graph(
        graph(out), dylibs=[library.path], workers=2, slots=2, frames=4, collect_outputs=False
    )
    [(name, instance, total)] = result.post_outputs
    assert (name, instance) == ("write_to_file", 0)
    values = written(out)
    np.testing.assert_allclose(values, expected(), rtol=RTOL, atol=ATOL)
    assert math.isclose(total, checksum(values), rel_tol=1e-6)
    return float(total)


def test_the_rust_example_builds_and_matches_numpy(tmp_path: Path) -> None:
    library = build(func_path=RUST_SOURCE, release=False)
    assert library.language == "rust"
    assert library.source == RUST_SOURCE.parent.parent / "Cargo.toml"
    assert library.path.name == "libtomii_matrix_compute.so" and library.path.is_file()
    run_example(library, tmp_path / "rust.c64")


def test_the_c_example_builds_and_matches_numpy(tmp_path: Path) -> None:
    library = build(func_path=C_HEADER, release=False, clean=True)
    assert (library.language, library.source) == ("c", C_HEADER)
    assert library.path.name == "libmatcomp.so" and library.path.is_file()
    run_example(library, tmp_path / "c.c64")


def test_the_sdk_has_the_crates_and_the_c_header() -> None:
    sdk = sdk_dir()
    assert (sdk / "Cargo.toml").is_file()
    assert (sdk / "macros" / "Cargo.toml").is_file()
    assert (sdk / "include" / "tomii" / "kernel.h").is_file()
    # The Tomii 1.2 compat SDK, which 1.2 plugin crates build against (test_v12_plugins.py).
    assert (sdk / "v12" / "types" / "Cargo.toml").is_file()
    assert (sdk / "v12" / "types" / "build.rs").is_file()
    assert (sdk / "v12" / "macro" / "Cargo.toml").is_file()


def write_crate(root: Path, body: str, *, dependency: str | None = None) -> Path:
    """A cdylib crate outside the repository depending on the SDK by path (or by `dependency`,
    the value of its `tomii-types` line); its lib.rs."""
    (root / "src").mkdir(parents=True)
    if dependency is None:
        dependency = f"{{ path = {json.dumps(str(sdk_dir()))} }}"
    (root / "Cargo.toml").write_text(
        textwrap.dedent(
            """\
            [package]
            name = "user-kernels"
            version = "0.1.0"
            edition = "2021"

            [lib]
            crate-type = ["cdylib"]

            [dependencies]
            """
        )
        + f"tomii-types = {dependency}\n",
        encoding="utf-8",
    )
    source = root / "src" / "lib.rs"
    source.write_text(textwrap.dedent(body), encoding="utf-8")
    return source


USER_CRATE = """\
    use tomii_types::tomii_export;

    pub struct Scale(f64);

    #[tomii_export]
    pub fn scale(factor: f64) -> Scale {
        Scale(factor)
    }

    #[tomii_export(variadic)]
    pub fn scaled_total(scale: &Scale, values: Vec<u64>) -> f64 {
        scale.0 * values.iter().sum::<u64>() as f64
    }

    #[tomii_export(name = "checked")]
    pub fn check(value: i32) -> Result<i32, String> {
        if value < 0 { Err(format!("negative: {value}")) } else { Ok(value) }
    }

    tomii_types::kernel_library!();
"""


def test_a_rust_crate_outside_the_repository_builds_and_runs(tmp_path: Path) -> None:
    source = write_crate(tmp_path / "user", USER_CRATE)
    library = build(func_path=source, release=False, env=CARGO_ENV)
    assert library.source == tmp_path / "user" / "Cargo.toml"
    spec: dict[str, Any] = {
        "initializations": [{"name": "s", "function": "scale", "args": [0.5]}],
        "nodes": [
            {"name": "n", "function": "checked", "factor": 3, "args": [{"type": "$index"}]},
            {
                "name": "total",
                "function": "scaled_total",
                "args": [
                    {"type": "$ref", "name": "s"},
                    {"type": "$res", "predecessor": {"name": "n", "index": "all"}},
                ],
            },
        ],
    }
    result = tomii.run_graph(spec, dylibs=[library.path], frames=2)
    assert result.outputs == [[("total", 0, 1.5)]] * 2  # 0.5 * (0 + 1 + 2)
    spec["nodes"][0]["args"] = [{"type": "i32", "value": -1}]
    with pytest.raises(tomii.KernelError, match="negative: -1"):
        tomii.run_graph(spec, dylibs=[library.path])
    spec["nodes"][0]["args"] = ["x"]
    wrong = r'kernel checked, argument 0 \(value\): expected an i32, found a string \("x"\)'
    with pytest.raises(tomii.KernelError, match=wrong):
        tomii.run_graph(spec, dylibs=[library.path])


def test_a_tomii_types_of_no_known_version_is_refused(tmp_path: Path) -> None:
    # Neither this SDK (0.1) nor Tomii 1.2's (1.x, tests/python/test_v12_plugins.py): refused
    # before cargo.
    source = write_crate(tmp_path / "user", USER_CRATE, dependency='"2.0"')
    with pytest.raises(tomii.PluginError, match=r'tomii-types = "2.0" is neither .* nor Tomii 1.2'):
        build(func_path=source, release=False, env=CARGO_ENV)


def test_a_crate_given_a_build_dir_compiles_there_and_its_library_goes_to_its_target(
    tmp_path: Path,
) -> None:
    # The tests' own build directory, where the crate above compiled the SDK's dependencies.
    source = write_crate(tmp_path / "user", USER_CRATE)
    library = build(
        func_path=source, release=False, env={"CARGO_BUILD_BUILD_DIR": str(CARGO_TARGET)}
    )
    assert library.path == tmp_path / "user" / "target" / "debug" / "libuser_kernels.so"
    assert library.path.is_file()
    assert not (tmp_path / "user" / "target" / "debug" / "deps").exists()
    spec = {"nodes": [{"name": "n", "function": "checked", "args": [{"type": "i32", "value": 4}]}]}
    assert tomii.run_graph(spec, dylibs=[library.path]).outputs == [[("n", 0, 4)]]


def shared_build_dir_for(manifest: Path, **variables: str) -> str | None:
    """The build directory `build()` gives cargo for the crate of `manifest`, in this process's
    environment without the variables that choose one, plus `variables`; None: cargo's default."""
    env = {k: v for k, v in os.environ.items() if k not in CARGO_DIRECTORY_VARIABLES}
    env.update(variables)
    chosen = _with_shared_build_dir(env, manifest, _metadata("cargo", manifest, env))
    return chosen.get("CARGO_BUILD_BUILD_DIR")


def test_a_crate_of_its_own_shares_the_users_build_dir_unless_one_is_chosen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manifest = write_crate(tmp_path / "own", USER_CRATE).parents[1] / "Cargo.toml"
    assert shared_build_dir_for(manifest) == str(cargo_build_dir())
    assert shared_build_dir_for(manifest, CARGO_TARGET_DIR=str(tmp_path / "t")) is None
    assert shared_build_dir_for(manifest, CARGO_BUILD_TARGET_DIR=str(tmp_path / "t")) is None
    assert shared_build_dir_for(manifest, CARGO_BUILD_BUILD_DIR="mine") == "mine"
    # A crate of a larger workspace builds in that workspace's target/ (here the repository's).
    assert shared_build_dir_for(RUST_SOURCE.parents[1] / "Cargo.toml") is None
    # A directory chosen in a cargo config file (cargo reads those above its working directory).
    (manifest.parent / ".cargo").mkdir()
    (manifest.parent / ".cargo" / "config.toml").write_text('[build]\ntarget-dir = "elsewhere"\n')
    monkeypatch.chdir(manifest.parent)
    assert shared_build_dir_for(manifest) is None


def test_the_shared_build_dir_is_in_the_users_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cargo_build_dir() == tmp_path / "tomii" / "cargo-build"
    default = Path.home() / ".cache" / "tomii" / "cargo-build"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative")  # ignored, as the XDG specification says
    assert cargo_build_dir() == default
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cargo_build_dir() == default


def test_tomii_build_builds_and_carries_the_modules_functions(tmp_path: Path) -> None:
    # The documented forms: tomii.build(...), tomii.build.build(...), tomii.build.sdk_dir().
    assert tomii.build.sdk_dir() == sdk_dir()
    assert (tomii.build.build, tomii.build.glue_for) == (build, glue_for)
    assert inspect.signature(tomii.build) == inspect.signature(build)
    assert tomii.build.__doc__ == build.__doc__
    header = c_plugin(
        tmp_path / "kinds",
        "// @tomii_export\nint negate(int x);\n",
        '#include "kinds.h"\nint negate(int x) { return -x; }\n',
    )
    library = tomii.build(func_path=header, release=False)
    assert library.path == tmp_path / "kinds" / "target" / "debug" / "libkinds.so"
    spec = {"nodes": [{"name": "n", "function": "negate", "args": [{"type": "i32", "value": 3}]}]}
    assert tomii.run_graph(spec, dylibs=[library.path]).outputs == [[("n", 0, -3)]]


C_HEADER_OF_EVERY_KIND = """\
    #include <complex.h>
    #include <stdbool.h>
    #include <stddef.h>
    #include <stdint.h>
    #include "tomii/kernel.h"

    typedef struct counter counter;

    // @tomii_export
    int64_t add(int64_t a, int64_t b);
    // @tomii_export(name="narrow")
    uint8_t narrow_u8(uint8_t x);
    // @tomii_export
    int negate(int x);
    // @tomii_export
    bool both(bool a, bool b);
    // @tomii_export
    float half(float x);
    // @tomii_export
    double complex twice(double complex z);
    // @tomii_export
    double mean(const double *values, size_t len);
    // @tomii_export(out_len=len)
    int32_t *doubled(const int32_t *xs, size_t len);
    // @tomii_export
    int64_t total(const int32_t *xs, size_t len);
    // @tomii_export
    char *greet(const char *name);
    // @tomii_export(free=counter_destroy)
    counter *counter_new(uint32_t start);
    void counter_destroy(counter *c);
    // @tomii_export
    uint32_t counter_peek(const counter *c);
    // @tomii_export
    int64_t refuse(const TomiiCallCtx *ctx, int64_t x);
    // @tomii_export(variadic)
    size_t count_items(const TomiiValue *items, size_t count);
"""

C_SOURCE_OF_EVERY_KIND = """\
    #include <stdio.h>
    #include <stdlib.h>
    #include <string.h>
    #include "kinds.h"

    struct counter { uint32_t value; };

    int64_t add(int64_t a, int64_t b) { return a + b; }
    uint8_t narrow_u8(uint8_t x) { return (uint8_t)(x + 1); }
    int negate(int x) { return -x; }
    bool both(bool a, bool b) { return a && b; }
    float half(float x) { return x / 2; }
    double complex twice(double complex z) { return 2 * z; }
    double mean(const double *values, size_t len) {
        double sum = 0;
        for (size_t i = 0; i < len; i++) sum += values[i];
        return len ? sum / (double)len : 0;
    }
    int32_t *doubled(const int32_t *xs, size_t len) {
        int32_t *out = malloc(len * sizeof *out + 1);
        for (size_t i = 0; out != NULL && i < len; i++) out[i] = 2 * xs[i];
        return out;
    }
    int64_t total(const int32_t *xs, size_t len) {
        int64_t sum = 0;
        for (size_t i = 0; i < len; i++) sum += xs[i];
        return sum;
    }
    char *greet(const char *name) {
        char *text = malloc(strlen(name) + 7);
        if (text != NULL) sprintf(text, "hello %s", name);
        return text;
    }
    counter *counter_new(uint32_t start) {
        counter *c = malloc(sizeof *c);
        if (c != NULL) c->value = start;
        return c;
    }
    void counter_destroy(counter *c) { free(c); }
    uint32_t counter_peek(const counter *c) { return c->value; }
    int64_t refuse(const TomiiCallCtx *ctx, int64_t x) {
        if (x < 0) snprintf(ctx->err.ptr, ctx->err.cap, "refuse: %lld is negative", (long long)x);
        return x;
    }
    size_t count_items(const TomiiValue *items, size_t count) { (void)items; return count; }
"""


def c_plugin(root: Path, header: str, source: str = "") -> Path:
    """A C plugin in `root`: include/kinds.h and src/kinds.c; the header's path."""
    (root / "include").mkdir(parents=True)
    (root / "src").mkdir()
    (root / "include" / "kinds.h").write_text(textwrap.dedent(header), encoding="utf-8")
    (root / "src" / "kinds.c").write_text(textwrap.dedent(source), encoding="utf-8")
    return root / "include" / "kinds.h"


def build_error(tmp_path: Path, header: str) -> tuple[Path, str]:
    """The header's path and the PluginError's message when `build` reads the header `header`
    of a plugin in tmp_path/bad."""
    path = c_plugin(tmp_path / "bad", header)
    with pytest.raises(tomii.PluginError) as raised:
        build(func_path=path, sources=[])
    return path, str(raised.value)


def node(name: str, function: str, *args: object) -> dict[str, object]:
    return {"name": name, "function": function, "args": list(args)}


def typed(kind: str, value: object) -> dict[str, object]:
    return {"type": kind, "value": value}


def result_of(name: str) -> dict[str, object]:
    return {"type": "$res", "predecessor": {"name": name}}


def test_every_c_convention_converts_arguments_and_results(tmp_path: Path) -> None:
    header = c_plugin(tmp_path / "kinds", C_HEADER_OF_EVERY_KIND, C_SOURCE_OF_EVERY_KIND)
    library = build(func_path=header, release=False)
    assert library.path == tmp_path / "kinds" / "target" / "debug" / "libkinds.so"
    spec = {
        "initializations": [{"name": "c", "function": "counter_new", "args": [typed("u32", 41)]}],
        "nodes": [
            node("add", "add", typed("i64", -5), 7),
            node("narrow", "narrow", typed("u8", 254)),
            node("negate", "negate", typed("i32", 9)),
            node("both", "both", True, False),
            node("half", "half", typed("f32", 3.0)),
            node("mean", "mean", typed("Vec<f64>", [1.0, 2.0, 6.0])),
            node("doubled", "doubled", typed("Vec<i32>", [1, -2, 30])),
            node("total", "total", result_of("doubled")),
            node("greet", "greet", "C"),
            node("peek", "counter_peek", {"type": "$ref", "name": "c"}),
            node("count", "count_items", result_of("add"), result_of("negate")),
        ],
    }
    [outputs] = tomii.run_graph(spec, dylibs=[library.path]).outputs
    assert {name: value for name, _, value in outputs} == {
        "narrow": 255,
        "both": False,
        "half": 1.5,
        "mean": 3.0,
        "total": 58,
        "greet": "hello C",
        "peek": 41,
        "count": 2,
    }
    refused = {"nodes": [node("r", "refuse", typed("i64", -3))]}
    with pytest.raises(tomii.KernelError, match="refuse: -3 is negative"):
        tomii.run_graph(refused, dylibs=[library.path])
    wrong = {"nodes": [node("n", "narrow", typed("u16", 256))]}
    message = (
        r"kernel narrow, argument 0 \(x\): expected a uint8_t, found an unsigned integer \(256\)"
    )
    with pytest.raises(tomii.KernelError, match=message):
        tomii.run_graph(wrong, dylibs=[library.path])
    not_a_counter = {"nodes": [node("p", "counter_peek", 3)]}
    with pytest.raises(tomii.KernelError, match=r"expected a counter handle \(type id 0x"):
        tomii.run_graph(not_a_counter, dylibs=[library.path])
    with pytest.raises(
        tomii.KernelError, match=r"kernel add takes 2 argument\(s\) \(a, b\), got 1"
    ):
        tomii.run_graph({"nodes": [node("a", "add", 1)]}, dylibs=[library.path])


def test_a_missing_file_is_a_plugin_error(tmp_path: Path) -> None:
    for missing in ("nope.rs", "nope.h"):
        with pytest.raises(tomii.PluginError, match=f"{missing}: no such file"):
            build(func_path=tmp_path / missing)
    with pytest.raises(tomii.PluginError, match="no Cargo.toml above it"):
        (tmp_path / "lone.rs").write_text("", encoding="utf-8")
        build(func_path=tmp_path / "lone.rs")


def test_a_c_compile_error_names_the_header_and_quotes_the_compiler(tmp_path: Path) -> None:
    header = c_plugin(
        tmp_path / "broken",
        "// @tomii_export\nint one(void);\n",
        '#include "kinds.h"\nint one(void) { return undefined_name; }\n',
    )
    with pytest.raises(tomii.PluginError) as raised:
        build(func_path=header, release=False)
    first, *rest = str(raised.value).splitlines()
    assert first.startswith(f"{header}: the C compiler failed (exit code 1)")
    assert any("undefined_name" in line for line in rest), raised.value


def test_a_rust_compile_error_names_the_source_and_quotes_cargo(tmp_path: Path) -> None:
    source = write_crate(tmp_path / "broken", 'pub fn broken() -> u32 { "text" }\n')
    with pytest.raises(tomii.PluginError) as raised:
        build(func_path=source, release=False, env=CARGO_ENV)
    first, *rest = str(raised.value).splitlines()
    assert first.startswith(f"{source}: cargo failed (exit code 101)")
    assert any("mismatched types" in line for line in rest), raised.value


@pytest.mark.parametrize(
    ("declaration", "problem"),
    [
        ("long double f(void);", "unsupported result type `long double`"),
        ("int f(long double x);", "unsupported C type `long double`"),
        ("int f(const int **p, size_t n);", "ends a `// @tomii_export(variadic)` declaration"),
        ("int f(void ***p);", "a pointer to a pointer to a pointer"),
        ("int f(int);", "has no name"),
        ("int f(unsigned int);", "has no name"),
        ("int f(size_t n) { return 0; }", "prototype ending in `;`"),
    ],
)
def test_an_unsupported_declaration_names_the_header_and_line(
    tmp_path: Path, declaration: str, problem: str
) -> None:
    header, message = build_error(
        tmp_path, f"#include <stddef.h>\n\n// @tomii_export\n{declaration}\n"
    )
    assert message.startswith(f"{header}:3: "), message
    assert problem in message


@pytest.mark.parametrize(
    ("annotation", "problem"),
    [
        ("// @tomii_export(name=plain)", 'write it as name="text"'),
        ("// @tomii_export(variadic)", "a variadic kernel ends with"),
        ("// @tomii_export(free=release)", "free=release is not declared in the header"),
        ("// @tomii_export(out_len=count)", "out_len= is for a kernel that returns an array"),
    ],
)
def test_a_bad_annotation_names_the_header_and_line(
    tmp_path: Path, annotation: str, problem: str
) -> None:
    _, message = build_error(tmp_path, f"#include <stddef.h>\n{annotation}\nchar *f(size_t n);\n")
    assert re.search(r"kinds\.h:2: ", message), message
    assert problem in message


def test_arguments_that_cannot_go_together_are_value_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="needs func_path"):
        build()
    (tmp_path / "notes.txt").write_text("", encoding="utf-8")
    with pytest.raises(ValueError, match=r"a Rust source \(\.rs\) or a C header \(\.h\)"):
        build(func_path=tmp_path / "notes.txt")
    with pytest.raises(ValueError, match="wrap_path and reg_path are for C plugins"):
        build(func_path=RUST_SOURCE, wrap_path=tmp_path / "w.rs")
    # Tomii 1.2's "Build options" keep the manifest when the header replaces the Rust source.
    with pytest.warns(
        UserWarning, match="plugin_manifest=.* is for Rust plugins.*so it is ignored"
    ):
        built = build(func_path=C_HEADER, plugin_manifest=RUST_SOURCE.parent.parent / "Cargo.toml")
    assert built.language == "c"
