"""C kernels from an annotated header: reads the declarations marked `// @tomii_export` and writes
the C file that wraps each one as a kernel (its arguments converted from `TomiiValue`s, its
result converted back) and defines the registry symbol `tomii_kernels_v1`.

The conventions (plugins/matrix-compute-c/README.md has the full table): scalars by value;
`const char *` for a string; `const T *data, size_t len` for an array of scalars; `const T *` of
any other type for an opaque handle made by another kernel; a first `const TomiiCallCtx *` for the
call's context, through which a kernel fails by writing a message; a variadic kernel ends with
`const TomiiValue *items, size_t count`; a kernel whose only parameters (besides the context) are
`const TomiiValue *args, size_t nargs` takes every argument as it comes, however many. Standard
library only; it never runs the compiler.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .errors import PluginError

__all__ = ["Kernel", "generate", "parse_header"]


@dataclass(frozen=True)
class Scalar:
    """A C scalar type and how it crosses: its tag, its conversion and its range."""

    tag: str
    #: "signed", "unsigned", "real", "bool" or "complex".
    kind: str
    #: The C bounds of an integer type, or "" for the others.
    low: str = ""
    high: str = ""


def _signed(tag: str, low: str, high: str) -> Scalar:
    return Scalar(f"TOMII_TAG_{tag}", "signed", low, high)


def _unsigned(tag: str, high: str) -> Scalar:
    return Scalar(f"TOMII_TAG_{tag}", "unsigned", "0", high)


_COMPLEX_FLOAT = Scalar("TOMII_TAG_C32", "complex")
_COMPLEX_DOUBLE = Scalar("TOMII_TAG_C64", "complex")

#: Every scalar spelling a declaration may use.
SCALARS: dict[str, Scalar] = {
    "int8_t": _signed("I8", "INT8_MIN", "INT8_MAX"),
    "int16_t": _signed("I16", "INT16_MIN", "INT16_MAX"),
    "int32_t": _signed("I32", "INT32_MIN", "INT32_MAX"),
    "int64_t": _signed("I64", "INT64_MIN", "INT64_MAX"),
    "int": _signed("I32", "INT_MIN", "INT_MAX"),
    "ptrdiff_t": _signed("ISIZE", "PTRDIFF_MIN", "PTRDIFF_MAX"),
    "uint8_t": _unsigned("U8", "UINT8_MAX"),
    "uint16_t": _unsigned("U16", "UINT16_MAX"),
    "uint32_t": _unsigned("U32", "UINT32_MAX"),
    "uint64_t": _unsigned("U64", "UINT64_MAX"),
    "unsigned": _unsigned("U32", "UINT_MAX"),
    "unsigned int": _unsigned("U32", "UINT_MAX"),
    "size_t": _unsigned("USIZE", "SIZE_MAX"),
    "float": Scalar("TOMII_TAG_F32", "real"),
    "double": Scalar("TOMII_TAG_F64", "real"),
    "bool": Scalar("TOMII_TAG_BOOL", "bool"),
    "_Bool": Scalar("TOMII_TAG_BOOL", "bool"),
    "float _Complex": _COMPLEX_FLOAT,
    "_Complex float": _COMPLEX_FLOAT,
    "float complex": _COMPLEX_FLOAT,
    "complex float": _COMPLEX_FLOAT,
    "double _Complex": _COMPLEX_DOUBLE,
    "_Complex double": _COMPLEX_DOUBLE,
    "double complex": _COMPLEX_DOUBLE,
    "complex double": _COMPLEX_DOUBLE,
}

_SUPPORTED = (
    "supported: integers (int8_t ... uint64_t, int, unsigned, size_t, ptrdiff_t), float, double, "
    "bool, float/double _Complex; `const char *` strings; `const T *data, size_t len` arrays; "
    "`const T *` opaque handles; a first `const TomiiCallCtx *ctx`"
)

_QUALIFIERS = {"const", "volatile", "restrict", "__restrict", "__restrict__"}
#: Words of type names: a parameter's last word is its name only when it is none of these.
_OTHER_TYPE_WORDS = {"char", "void", "struct", "signed", "short", "long"}
_TYPE_WORDS = {w for s in SCALARS for w in s.split()} | _QUALIFIERS | _OTHER_TYPE_WORDS
_ANNOTATION = re.compile(r"^\s*//\s*@tomii_export\b\s*(?:\((?P<options>.*)\))?\s*$")
_DECLARATION = re.compile(r"^(?P<ret>.*?)(?P<name>[A-Za-z_]\w*)\s*\((?P<params>.*)\)$", re.DOTALL)
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


@dataclass(frozen=True)
class CType:
    """A parsed C type: its base type (without qualifiers or `struct`), pointer and constness."""

    base: str
    pointer: bool
    const: bool
    text: str


@dataclass(frozen=True)
class Param:
    """What one C parameter receives. `kind` is "context", "scalar", "string", "array",
    "object", "list" (a variadic kernel's trailing results) or "raw" (every argument); arrays,
    lists and raw arguments consume the `size_t` parameter named by `length`."""

    name: str
    kind: str
    ctype: CType
    length: str = ""


@dataclass(frozen=True)
class Kernel:
    """One annotated declaration."""

    name: str
    function: str
    params: tuple[Param, ...]
    #: "none", "scalar", "string", "array" or "object".
    result: str
    result_type: CType
    variadic: bool
    out_len: str
    free: str

    @property
    def arguments(self) -> tuple[Param, ...]:
        """The parameters fed by graph arguments, one each."""
        return tuple(p for p in self.params if p.kind != "context")


def fnv1a32(text: str) -> int:
    """The type id of an opaque handle type: FNV-1a (32 bits) of its name."""
    value = 0x811C9DC5
    for byte in text.encode():
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return value


class _Problem(Exception):
    """A declaration that cannot be exported; becomes a PluginError naming header and line."""


def parse_header(header: Path) -> list[Kernel]:
    """The kernels of `header`; raises PluginError naming `header:line` for what is unsupported."""
    text = header.read_text(encoding="utf-8")
    lines = text.splitlines()
    kernels: list[Kernel] = []
    for number, line in enumerate(lines, start=1):
        found = _ANNOTATION.match(line)
        if found is None:
            continue
        try:
            kernel = _kernel(_declaration_after(lines, number), found.group("options") or "")
        except _Problem as problem:
            raise PluginError(f"{header}:{number}: {problem}") from None
        if kernel.free and kernel.free != "free" and not re.search(rf"\b{kernel.free}\s*\(", text):
            raise PluginError(
                f"{header}:{number}: free={kernel.free} is not declared in the header; "
                "declare it there (or use free=free for memory from malloc)"
            )
        if any(k.name == kernel.name for k in kernels):
            raise PluginError(f"{header}:{number}: kernel name {kernel.name!r} is exported twice")
        kernels.append(kernel)
    if not kernels:
        raise PluginError(
            f"{header}: no `// @tomii_export` declaration; annotate the functions to export"
        )
    return kernels


def _declaration_after(lines: list[str], number: int) -> str:
    """The declaration that follows the annotation on line `number` (1-based), up to its `;`."""
    parts: list[str] = []
    for text in lines[number:]:
        if _ANNOTATION.match(text):
            break
        text = re.sub(r"/\*.*?\*/", " ", text.split("//")[0]).strip()
        if not text and not parts:
            continue
        if "{" in text:
            raise _Problem(
                "an annotated declaration is a prototype ending in `;` (bodies go in .c)"
            )
        parts.append(text)
        if ";" in text:
            return " ".join(parts).split(";")[0].strip()
    raise _Problem("no declaration ending in `;` follows `// @tomii_export`")


def _options(text: str) -> dict[str, str]:
    """`name="x", variadic, out_len=EXPR, free=FN` as a dict (a flag maps to "")."""
    items, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += char == "("
        depth -= char == ")"
        if char == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    options: dict[str, str] = {}
    for item in (i.strip() for i in items):
        if not item:
            continue
        key, _, value = (part.strip() for part in item.partition("="))
        if key not in ("name", "variadic", "out_len", "free") or bool(value) == (key == "variadic"):
            raise _Problem(
                f"unknown or malformed option {item!r}: the options are "
                '`name="..."`, `variadic`, `out_len=EXPRESSION` and `free=FUNCTION`'
            )
        options[key] = value
    return options


def _ctype(text: str, named: bool) -> tuple[CType, str]:
    """Parses `const float _Complex *v` into its type and, when `named`, the parameter name."""
    tokens = re.findall(r"[A-Za-z_]\w*|\*|\S", text)
    if any(t != "*" and not _IDENTIFIER.fullmatch(t) for t in tokens):
        raise _Problem(f"unsupported C type `{text}`; {_SUPPORTED}")
    name = ""
    if named:
        if len(tokens) < 2 or tokens[-1] == "*" or tokens[-1] in _TYPE_WORDS:
            raise _Problem(f"parameter `{text}` has no name: name every parameter")
        name = tokens.pop()
        text = text[: text.rfind(name)].strip()
    stars = tokens.count("*")
    if stars > 1:
        raise _Problem(f"unsupported C type `{text}` (a pointer to a pointer); {_SUPPORTED}")
    before_star = tokens[: tokens.index("*")] if stars else tokens
    words = [t for t in tokens if t not in _QUALIFIERS and t not in ("*", "struct")]
    base = " ".join(words)
    return CType(base, stars == 1, "const" in before_star, " ".join(text.split())), name


def _kernel(declaration: str, option_text: str) -> Kernel:
    options = _options(option_text)
    found = _DECLARATION.match(" ".join(declaration.split()))
    if found is None or "(" in found.group("params"):
        raise _Problem(f"cannot read the declaration `{declaration}`: write `TYPE name(PARAMS);`")
    ret_text = found.group("ret").replace("extern ", "").strip()
    if not ret_text or "static" in ret_text.split() or "inline" in ret_text.split():
        raise _Problem(f"`{declaration}`: export a plain prototype (no static or inline)")
    function = found.group("name")
    param_text = found.group("params").strip()
    texts = [] if param_text in ("", "void") else [p.strip() for p in param_text.split(",")]
    parsed = [_ctype(t, named=True) for t in texts]
    variadic = "variadic" in options
    params = _params(parsed, variadic)
    result_type, _ = _ctype(ret_text, named=False)
    result = _result(result_type, options, {p.name for p in params} | {p.length for p in params})
    name = function
    if "name" in options:
        quoted = re.fullmatch(r'"([^"\\]+)"', options["name"])
        if quoted is None:
            raise _Problem(f'kernel name {options["name"]}: write it as name="text"')
        name = quoted.group(1)
    if "free" in options and not _IDENTIFIER.fullmatch(options["free"]):
        raise _Problem(f"free={options['free']}: name a function")
    return Kernel(
        name=name,
        function=function,
        params=params,
        result=result,
        result_type=result_type,
        variadic=variadic,
        out_len=options.get("out_len", ""),
        free=options.get("free", ""),
    )


def _params(parsed: list[tuple[CType, str]], variadic: bool) -> tuple[Param, ...]:
    """Classifies the parameters, pairing each array or list pointer with its `size_t` length."""
    params: list[Param] = []
    i = 0
    while i < len(parsed):
        ctype, name = parsed[i]
        kind = _param_kind(ctype, name, first=i == 0)
        length = ""
        if kind in ("array", "list"):
            following = parsed[i + 1] if i + 1 < len(parsed) else None
            if following is None or following[0].base != "size_t" or following[0].pointer:
                raise _Problem(
                    f"parameter {name}: a `{ctype.text}` is followed by its `size_t` length"
                )
            length = following[1]
            i += 1
            only = all(p.kind == "context" for p in params) and i + 1 == len(parsed)
            if kind == "list" and not variadic and only:
                # The whole argument list, as the ABI's values: any number of arguments.
                kind = "raw"
            elif kind == "list" and (not variadic or i + 1 != len(parsed)):
                raise _Problem(
                    f"parameter {name}: `const TomiiValue *items, size_t count` ends a "
                    "`// @tomii_export(variadic)` declaration, or is the only parameter "
                    "(besides the context) of a kernel that takes its arguments as they come"
                )
        params.append(Param(name, kind, ctype, length))
        i += 1
    if variadic and (not params or params[-1].kind != "list"):
        raise _Problem("a variadic kernel ends with `const TomiiValue *items, size_t count`")
    return tuple(params)


def _param_kind(ctype: CType, name: str, first: bool) -> str:
    if ctype.base == "TomiiCallCtx" and ctype.pointer:
        if not first:
            raise _Problem(f"parameter {name}: the `const TomiiCallCtx *` parameter comes first")
        return "context"
    if not ctype.pointer:
        if ctype.base in SCALARS:
            return "scalar"
        raise _Problem(f"parameter {name}: unsupported C type `{ctype.text}`; {_SUPPORTED}")
    if not ctype.const:
        raise _Problem(
            f"parameter {name}: arguments are borrowed and shared by concurrent calls: "
            f"declare it `const` (`const {ctype.base} *{name}`)"
        )
    if ctype.base == "char":
        return "string"
    if ctype.base == "TomiiValue":
        return "list"
    if ctype.base in SCALARS and SCALARS[ctype.base].kind != "bool":
        return "array"
    if _IDENTIFIER.fullmatch(ctype.base) and ctype.base != "void" and ctype.base not in SCALARS:
        return "object"
    raise _Problem(f"parameter {name}: unsupported C type `{ctype.text}`; {_SUPPORTED}")


def _result(ctype: CType, options: dict[str, str], names: set[str]) -> str:
    """The result's kind, checking `out_len` and `free` against it."""
    if not ctype.pointer:
        kind = "none" if ctype.base == "void" else "scalar" if ctype.base in SCALARS else ""
    elif ctype.const:
        raise _Problem(
            f"returns `{ctype.text}`: Tomii owns and frees what a kernel returns; return a "
            "non-const pointer and name its free function with free=..."
        )
    elif ctype.base == "char":
        kind = "string"
    elif ctype.base in SCALARS and SCALARS[ctype.base].kind != "bool":
        kind = "array"
    elif _IDENTIFIER.fullmatch(ctype.base) and ctype.base != "void":
        kind = "object"
    else:
        kind = ""
    if not kind:
        raise _Problem(f"unsupported result type `{ctype.text}`; {_SUPPORTED}")
    if kind == "array" and not options.get("out_len"):
        raise _Problem("returns an array: give its length with @tomii_export(out_len=EXPRESSION)")
    if kind != "array" and "out_len" in options:
        raise _Problem("out_len= is for a kernel that returns an array (`T *`)")
    if kind == "object" and not options.get("free"):
        raise _Problem("returns an opaque handle: name its destroy function with free=FUNCTION")
    if kind in ("none", "scalar") and "free" in options:
        raise _Problem("free= is for a kernel that returns a pointer")
    unknown = set(_IDENTIFIER.findall(options.get("out_len", ""))) - names
    if unknown:
        raise _Problem(f"out_len uses {', '.join(sorted(unknown))}, which are not parameters")
    return kind


#: The helpers every generated file starts with (C source, copied in after the includes).
_PRELUDE = Path(__file__).with_name("_cgen_prelude.c")


def _article(text: str) -> str:
    # "an int64_t" but "a uint8_t": the type names here start with a vowel sound only on a, e, i, o.
    return f"an {text}" if text[0] in "aeio" else f"a {text}"


def _c_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _declare(param: Param) -> str:
    """The wrapper's local for `param`, zero-initialised (a string is the wrapper's own copy)."""
    if param.kind == "string":
        return f"char *{param.name} = NULL;"
    if param.ctype.pointer:
        return f"const {param.ctype.base} *{param.name} = NULL;"
    return f"{param.ctype.base} {param.name} = 0;"


def _convert(param: Param, index: int) -> list[str]:
    """The statements that fill the local of `param` from argument `index`."""
    call = f"tomii_ctx, &tomii_sig, tomii_args, {index}"
    expected = _c_string(_article(param.ctype.base))
    fail = "goto tomii_done;"
    if param.kind == "scalar":
        scalar = SCALARS[param.ctype.base]
        if scalar.kind == "signed":
            read = f"int64_t tomii_v; if (!tomii_signed({call}, {scalar.low}, {scalar.high}, {expected}, &tomii_v)) {fail}"
            return [f"{{ {read} {param.name} = ({param.ctype.base})tomii_v; }}"]
        if scalar.kind == "unsigned":
            read = f"uint64_t tomii_v; if (!tomii_unsigned({call}, {scalar.high}, {expected}, &tomii_v)) {fail}"
            return [f"{{ {read} {param.name} = ({param.ctype.base})tomii_v; }}"]
        if scalar.kind == "real":
            read = f"double tomii_v; if (!tomii_real({call}, {expected}, &tomii_v)) {fail}"
            return [f"{{ {read} {param.name} = ({param.ctype.base})tomii_v; }}"]
        if scalar.kind == "bool":
            return [f"if (!tomii_bool({call}, {expected}, &{param.name})) {fail}"]
        part = "float" if scalar.tag == "TOMII_TAG_C32" else "double"
        read = f"double tomii_v[2]; if (!tomii_complex({call}, {expected}, tomii_v)) {fail}"
        store = (
            f"{part} tomii_parts[2] = {{({part})tomii_v[0], ({part})tomii_v[1]}}; "
            f"memcpy(&{param.name}, tomii_parts, sizeof tomii_parts);"
        )
        return [f"{{ {read} {store} }}"]
    if param.kind == "string":
        return [f"if (!tomii_string({call}, &{param.name})) {fail}"]
    if param.kind == "array":
        tag = SCALARS[param.ctype.base].tag
        expected = _c_string(f"an array of {param.ctype.base}")
        read = f"const void *tomii_p; if (!tomii_array({call}, {tag}, {expected}, &tomii_p, &{param.length})) {fail}"
        return [f"{{ {read} {param.name} = tomii_p; }}"]
    if param.kind == "object":
        type_id = f"0x{fnv1a32(param.ctype.base):08x}u"
        expected = _c_string(f"a {param.ctype.base} handle (type id {type_id[:-1]})")
        read = f"const void *tomii_p; if (!tomii_object({call}, {type_id}, {expected}, &tomii_p)) {fail}"
        return [f"{{ {read} {param.name} = tomii_p; }}"]
    return [f"if (!tomii_list({call}, &{param.name}, &{param.length})) {fail}"]


def _store(kernel: Kernel) -> list[str]:
    """The statements that move `tomii_result` into `*tomii_out`."""
    ctype = kernel.result_type
    if kernel.result == "none":
        return []
    if kernel.result == "scalar":
        scalar = SCALARS[ctype.base]
        member = {
            "signed": "i = (int64_t)tomii_result",
            "unsigned": "u = (uint64_t)tomii_result",
            "bool": "b = tomii_result",
        }.get(scalar.kind)
        if scalar.kind == "real":
            member = f"{'f32' if scalar.tag == 'TOMII_TAG_F32' else 'f64'} = tomii_result"
        if scalar.kind == "complex":
            part = "c32" if scalar.tag == "TOMII_TAG_C32" else "c64"
            assign = f"memcpy(tomii_out->payload.{part}, &tomii_result, sizeof tomii_out->payload.{part});"
        else:
            assign = f"tomii_out->payload.{member};"
        return [f"tomii_out->tag = {scalar.tag};", assign]
    release = f"tomii_release_{kernel.free or 'free'}"
    missing = 'tomii_fail(tomii_ctx, "kernel %s returned NULL", tomii_sig.kernel); goto tomii_done;'
    if kernel.result == "array":
        return [
            f"size_t tomii_len = (size_t)({kernel.out_len});",
            f"if (tomii_result == NULL && tomii_len > 0) {{ {missing} }}",
            "tomii_out->tag = TOMII_TAG_ARRAY;",
            f"tomii_out->elem = {SCALARS[ctype.base].tag};",
            (
                "tomii_out->payload.buf = (TomiiBuffer){.data = (void *)tomii_result, .len = tomii_len, "
                f".release = tomii_result == NULL ? NULL : {release}}};"
            ),
        ]
    if kernel.result == "string":
        tag, elem, length = "TOMII_TAG_STR", "0", "strlen(tomii_result)"
    else:
        tag, elem, length = "TOMII_TAG_OBJECT", f"0x{fnv1a32(ctype.base):08x}u", "0"
    return [
        f"if (tomii_result == NULL) {{ {missing} }}",
        f"tomii_out->tag = {tag};",
        f"tomii_out->elem = {elem};",
        (
            f"tomii_out->payload.buf = (TomiiBuffer){{.data = (void *)tomii_result, .len = {length}, "
            f".release = {release}}};"
        ),
    ]


def _wrapper(kernel: Kernel) -> str:
    arguments = kernel.arguments
    names = ", ".join(_c_string(p.name) for p in arguments) or "NULL"
    listed = _c_string(", ".join(p.name for p in arguments))
    lines = [
        (
            f"static int32_t tomii_kernel_{kernel.function}(const TomiiValue *tomii_args, size_t tomii_nargs, "
            "TomiiValue *tomii_out, const TomiiCallCtx *tomii_ctx) {"
        ),
        "if (tomii_out == NULL || tomii_ctx == NULL || (tomii_args == NULL && tomii_nargs > 0)) {",
        "return TOMII_ERR_INVALID;",
        "}",
        f"static const char *const tomii_params[] = {{{names}}};",
        (
            f"static const TomiiSignature tomii_sig = {{{_c_string(kernel.name)}, tomii_params, "
            f"{len(arguments)}, {listed}}};"
        ),
        "int32_t tomii_status = TOMII_ERR;",
    ]
    for param in kernel.params:
        if param.kind != "context":
            lines.append(_declare(param))
        if param.length:
            lines.append(f"size_t {param.length} = 0;")
    if any(p.kind == "raw" for p in arguments):
        raw = arguments[0]
        lines += [f"{raw.name} = tomii_args;", f"{raw.length} = tomii_nargs;"]
    else:
        lines.append("if (!tomii_check_count(tomii_ctx, &tomii_sig, tomii_nargs)) goto tomii_done;")
        for index, param in enumerate(arguments):
            lines += _convert(param, index)
    call_args = []
    for param in kernel.params:
        call_args.append("tomii_ctx" if param.kind == "context" else param.name)
        if param.length:
            call_args.append(param.length)
    call = f"{kernel.function}({', '.join(call_args)})"
    takes_context = any(p.kind == "context" for p in kernel.params)
    if takes_context:
        lines.append("tomii_clear_error(tomii_ctx);")
    if kernel.result == "none":
        lines.append(f"{call};")
    else:
        const = "const " if kernel.result_type.const else ""
        star = " *" if kernel.result_type.pointer else " "
        lines.append(f"{const}{kernel.result_type.base}{star}tomii_result = {call};")
    if takes_context:
        release = ""
        if kernel.result_type.pointer:
            release = f"if (tomii_result != NULL) tomii_release_{kernel.free or 'free'}(tomii_result, 0, NULL); "
        lines.append(f"if (tomii_failed(tomii_ctx)) {{ {release}goto tomii_done; }}")
    lines += _store(kernel)
    lines.append("tomii_status = TOMII_OK;")
    lines.append("tomii_done:")
    for param in arguments:
        if param.kind == "string":
            lines.append(f"free({param.name});")
    lines += ["return tomii_status;", "}"]
    return _indent(lines)


def _indent(lines: list[str]) -> str:
    """Lines of one function, indented by brace depth (labels stay at the function's level)."""
    out, depth = [], 0
    for line in lines:
        depth -= line.startswith("}")
        pad = depth - 1 if line.endswith(":") and not line.startswith("case") else depth
        out.append("    " * max(pad, 0) + line)
        depth += line.endswith("{")
    return "\n".join(out)


def _release(free: str) -> str:
    return (
        f"static void tomii_release_{free}(void *data, size_t len, void *ctx) {{\n"
        f"    (void)len;\n    (void)ctx;\n    {free}(data);\n}}"
    )


def generate(header: Path, kernels: list[Kernel], library: str) -> str:
    """The C source of the wrappers and the registry of `kernels`, declared in `header`."""
    frees = sorted({k.free or "free" for k in kernels if k.result in ("string", "array", "object")})
    entries = ",\n".join(
        f"    {{.name = {_c_string(k.name)}, .func = tomii_kernel_{k.function}, "
        f".flags = {'TOMII_KERNEL_VARIADIC' if k.variadic else '0'}}}"
        for k in kernels
    )
    parts = [
        (
            f"/* Generated by tomii.build from {header.name}: the kernel wrappers and the registry of "
            "its // @tomii_export declarations. Do not edit; rebuild instead. */"
        ),
        "",
        "#include <complex.h>\n#include <inttypes.h>\n#include <limits.h>\n#include <stdarg.h>",
        "#include <stdbool.h>\n#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>",
        "#include <string.h>",
        "",
        '#include "tomii/tomii.h"',
        f"#include {_c_string(header.name)}",
        "",
        _PRELUDE.read_text(encoding="utf-8"),
        *(_release(free) + "\n" for free in frees),
        *(_wrapper(k) + "\n" for k in kernels),
        f"static const TomiiKernelEntry tomii_entries[] = {{\n{entries},\n}};",
        "",
        "static const TomiiKernelRegistry tomii_registry = {",
        "    .abi_major = TOMII_KERNEL_ABI_MAJOR,",
        "    .abi_minor = TOMII_KERNEL_ABI_MINOR,",
        "    .struct_size = sizeof(TomiiKernelRegistry),",
        "    .entry_size = sizeof(TomiiKernelEntry),",
        f"    .library = {_c_string(library)},",
        "    .entries = tomii_entries,",
        "    .count = sizeof tomii_entries / sizeof tomii_entries[0],",
        "};",
        "",
        "const TomiiKernelRegistry *tomii_kernels_v1(void) {",
        "    return &tomii_registry;",
        "}",
        "",
    ]
    return "\n".join(parts)
