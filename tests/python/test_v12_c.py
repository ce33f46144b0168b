"""Tomii 1.2's C plugin flow, in its forms: a plain C library built by its own Makefile, then
`Graph.build(func_path=<header>)` and `Graph.run(dylib=<the Makefile's library>)`. The fixtures
(tests/python/fixtures/v12_c/) have the shapes of 1.2's mapreduce, matrix-compute-C and
gpu-vectoradd headers; the numbers are computed here independently.
"""

from __future__ import annotations

import shutil
import subprocess
import warnings
from pathlib import Path

import pytest

import tomii
from tomii import _cgen
from tomii.build import build

FIXTURES = Path(__file__).parent / "fixtures" / "v12_c"


def made(tmp_path: Path, name: str) -> Path:
    """A copy of fixture `name` in tmp_path, built by its own Makefile, as 1.2's scripts do."""
    root = tmp_path / name
    shutil.copytree(FIXTURES / name, root)
    subprocess.run(["make", "-s", "-C", str(root)], check=True)
    return root


def draws(seed: int, count: int, words: int) -> list[int]:
    """The word numbers tally_draw draws (its 64-bit LCG)."""
    state, out = seed, []
    for _ in range(count):
        state = (state * 6364136223846793005 + 1442695040888963407) % 2**64
        out.append((state >> 33) % words)
    return out


def test_a_mapreduce_shaped_plugin_runs_from_its_header_and_make_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = made(tmp_path, "tally")
    app = tomii.Graph()
    num = app.var("num_draws", 6)
    per = app.var("per_draw", 40)
    num_words = app.var("num_words", 5)
    words = app.var("words", func="tally_words", args=[])
    out = app.var(
        "out", func="tally_path", args=[tomii.String("TALLY_DIR"), tomii.String("tally.txt")]
    )
    seed = 0xDEADBEEFCAFEBABE
    draw = app.node("draw", func="tally_draw", factor=num, args=[words, tomii.u64(seed), per])
    counted = app.node("count", func="tally_count", factor=num, args=[draw.out(), num_words])
    app.node("reduce", func="tally_reduce", args=[out, words, counted.out(0, num)])
    app.node("first", func="tally_first", args=[words])
    env = {"TALLY_DIR": str(root)}
    built = app.build(func_path=str(root / "include" / "tally.h"), release=True, env=env)
    assert built is not None and built.path == built.wrappers  # the Makefile builds the library
    assert not (root / "target" / "release" / "libtally.so").exists()
    result = app.run(dylib=str(root / "libtally_c.so"), env=env, workers=2)
    assert (root / "target" / "release" / "libtally_c.tomii.so").is_file()
    one = draws(seed, 40, 5)
    names = ["ant", "bee", "cat", "dog", "eel"]
    expected = "".join(f"{w} {6 * one.count(i)}\n" for i, w in enumerate(names))
    assert (root / "tally.txt").read_text() == expected
    assert sum(6 * one.count(i) for i in range(5)) == 240
    [outputs] = result.outputs
    assert ("first", 0, "ant") in outputs


def test_a_matrix_compute_shaped_plugin_changes_an_array_in_place(tmp_path: Path) -> None:
    root = made(tmp_path, "spectra")
    n = 6
    app = tomii.Graph()
    size = app.var("size", n)
    vector = app.node("vector", func="spectra_vector", factor=3, args=[size])
    scaled = app.node("scale", func="spectra_scale", factor=3, args=[vector.out(), 2.5])
    app.node("sum", func="spectra_sum", factor=3, args=[vector.out(), scaled.wait()])
    power = app.node("power", func="spectra_power", factor=3, args=[vector.out(), scaled.wait()])
    app.node("read", func="spectra_read", factor=3, args=[power.out(), 4])
    app.build(func_path=root / "include" / "spectra.h", clean=True)
    [outputs] = app.run(dylib=root / "libspectra_c.so", workers=2).outputs
    got = {(node, instance): value for node, instance, value in outputs}
    elements = [complex(2.5 * (k + 1), 2.5 * k / 2) for k in range(n)]
    for instance in range(3):
        # The sum and the power read the vector after spectra_scale changed it in place.
        assert got[("sum", instance)] == pytest.approx(sum(z.real + z.imag for z in elements))
        assert list(got[("read", instance)]) == pytest.approx([abs(z) ** 2 for z in elements[:4]])
        # A mut_array kernel returns nothing, whatever C returned (spectra_scale returns 7).
        assert got.get(("scale", instance)) is None


def test_a_gpu_shaped_header_is_read_and_its_wrappers_compile(tmp_path: Path) -> None:
    header = FIXTURES / "devsum" / "include" / "devsum.h"
    kinds = {
        k.name: [(p.kind, p.elem, p.lock) for p in k.arguments] for k in _cgen.parse_header(header)
    }
    assert kinds == {
        "devsum_host": [("scalar", "", ""), ("scalar", "", "")],
        "devsum_upload": [("array", "TOMII_TAG_F32", "read")],
        "devsum_add": [("object", "", ""), ("object", "", "")],
        "devsum_download": [("object", "", ""), ("scalar", "", "")],
        "devsum_check": [("array", "TOMII_TAG_F32", "read")] * 3,
    }
    root = tmp_path / "devsum"
    shutil.copytree(FIXTURES / "devsum", root)
    built = build(func_path=root / "include" / "devsum.h")
    assert built.wrappers is not None and built.wrappers.is_file()


def write_header(tmp_path: Path, body: str) -> Path:
    header = tmp_path / "h" / "one.h"
    header.parent.mkdir(parents=True)
    header.write_text("#include <stddef.h>\n" + body, encoding="utf-8")
    return header


def test_an_unknown_option_is_one_warning_naming_the_token_and_line(tmp_path: Path) -> None:
    header = write_header(
        tmp_path, "// @tomii_export(host:array, fast)\nvoid* up(const float* host, size_t n);\n"
    )
    with pytest.warns(_cgen.HeaderWarning) as caught:
        _cgen.parse_header(header)
    messages = [str(w.message) for w in caught]
    assert len(messages) == 2, messages
    assert messages[0].startswith(f"{header}:2: unknown option 'host:array'")
    assert "did you mean `host: array`?" in messages[0]
    assert "'fast'" in messages[1]


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (
            (
                "typedef struct { float a, b, c; } triple;\n"
                "// @tomii_export(v: array)\nvoid f(const triple* v, size_t v_len);\n"
            ),
            (
                "an array of `triple` is read as (re, im) pairs of float or of double, but "
                "struct triple has 3 float"
            ),
        ),
        ("// @tomii_export(v: mut_array)\nvoid f(const float* v, size_t n);\n", "drop the `const`"),
        ("// @tomii_export(v: array)\nvoid f(float* v);\n", "followed by `size_t v_len`"),
        ("// @tomii_export\nvoid f(void** parts, size_t n);\n", "@tomii_export(variadic)"),
        ("// @tomii_export(free=free)\nconst char* f(void);\n", "which the library keeps"),
    ],
)
def test_a_v12_form_that_would_break_is_refused_naming_the_line(
    tmp_path: Path, body: str, problem: str
) -> None:
    header = write_header(tmp_path, body)
    with pytest.raises(tomii.PluginError) as raised:
        _cgen.parse_header(header)
    assert str(raised.value).startswith(f"{header}:"), raised.value
    assert problem in str(raised.value)


def test_v12_handles_strings_and_scalars_are_read_with_their_meanings(tmp_path: Path) -> None:
    header = write_header(
        tmp_path,
        "typedef struct { double re, im; } c64;\n"
        "// @tomii_export(out_len=n)\nc64* f(size_t n, long a, unsigned char b, short c);\n"
        "// @tomii_export\nvoid* g(char* name, void* any, float* raw);\n",
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        f, g = _cgen.parse_header(header)
    assert f.result_elem == "TOMII_TAG_C64"
    assert [_cgen.SCALARS[p.ctype.base].tag for p in f.arguments[1:]] == [
        "TOMII_TAG_I64",
        "TOMII_TAG_U8",
        "TOMII_TAG_I16",
    ]
    assert [(p.kind, p.elem) for p in g.arguments] == [
        ("string", ""),
        ("object", ""),
        ("object", "float"),
    ]
    # A pointer to a number read as a handle (as 1.2 did) is said once, with the array forms.
    [warned] = [str(w.message) for w in caught]
    assert "parameter raw: `float*` is read as an opaque handle" in warned
    assert g.result == "object" and g.release == ""  # never freed without free=, as in 1.2


def test_a_plain_c_library_without_its_header_is_a_clear_error(tmp_path: Path) -> None:
    root = made(tmp_path, "spectra")
    spec = {"nodes": [{"name": "v", "function": "spectra_vector", "args": [3]}]}
    with pytest.raises(tomii.PluginError, match=r"func_path=HEADER, library=THIS_FILE"):
        tomii.run_graph(spec, dylibs=[root / "libspectra_c.so"])
    glue = build(func_path=root / "include" / "spectra.h", library=root / "libspectra_c.so")
    [outputs] = tomii.run_graph(spec, dylibs=[glue.path]).outputs
    [(_, _, values)] = outputs
    assert list(values) == [complex(1, 0), complex(2, 0.5), complex(3, 1)]


def test_a_plain_library_lacking_a_function_of_the_header_names_both(tmp_path: Path) -> None:
    root = made(tmp_path, "spectra")
    header = root / "include" / "spectra.h"
    header.write_text(
        header.read_text() + "// @tomii_export\nint spectra_missing(int x);\n", encoding="utf-8"
    )
    with pytest.raises(tomii.PluginError) as raised:
        build(func_path=header, library=root / "libspectra_c.so")
    assert str(raised.value).startswith(f"{root / 'libspectra_c.so'}: linking it to the kernels")
    assert "spectra_missing" in str(raised.value)
