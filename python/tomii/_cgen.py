"""C kernels from an annotated header: reads the declarations marked `// @tomii_export` and writes
the C file that wraps each one as a kernel (its arguments converted from `TomiiValue`s, its
result converted back) and defines the registry symbol `tomii_kernels_v1`.

Two dialects are read (plugins/README.md, "C kernels", says which form is whose): this runtime's
(`const T *data, size_t len` arrays, `const T *` typed handles, a first `const TomiiCallCtx *`,
`const TomiiValue *items, size_t count`) and Tomii 1.2's (`void *` handles, `void **` variadics,
the `NAME: array` / `NAME: mut_array` options, struct names as (re, im) float pairs). An option it
does not know is a warning naming the header and line; a declaration it cannot export is a
PluginError. Standard library only; it never runs the compiler.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from ._warnings import user_stacklevel
from .errors import PluginError

__all__ = ["HeaderWarning", "Kernel", "generate", "parse_header"]


class HeaderWarning(UserWarning):
    """What a header says that the reader ignores or reads as Tomii 1.2 did, with `header:line`."""


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
_LONG = _signed("I64", "LONG_MIN", "LONG_MAX")
_ULONG = _unsigned("U64", "ULONG_MAX")
_LLONG = _signed("I64", "LLONG_MIN", "LLONG_MAX")
_ULLONG = _unsigned("U64", "ULLONG_MAX")

#: Every scalar spelling a declaration may use (Tomii 1.2 read the ones it did not list as i32;
#: here each has its own width).
SCALARS: dict[str, Scalar] = {
    "int8_t": _signed("I8", "INT8_MIN", "INT8_MAX"),
    "int16_t": _signed("I16", "INT16_MIN", "INT16_MAX"),
    "int32_t": _signed("I32", "INT32_MIN", "INT32_MAX"),
    "int64_t": _signed("I64", "INT64_MIN", "INT64_MAX"),
    "int": _signed("I32", "INT_MIN", "INT_MAX"),
    "signed": _signed("I32", "INT_MIN", "INT_MAX"),
    "signed int": _signed("I32", "INT_MIN", "INT_MAX"),
    "char": _signed("I8", "CHAR_MIN", "CHAR_MAX"),
    "signed char": _signed("I8", "SCHAR_MIN", "SCHAR_MAX"),
    "short": _signed("I16", "SHRT_MIN", "SHRT_MAX"),
    "short int": _signed("I16", "SHRT_MIN", "SHRT_MAX"),
    "long": _LONG,
    "long int": _LONG,
    "long long": _LLONG,
    "long long int": _LLONG,
    "ptrdiff_t": _signed("ISIZE", "PTRDIFF_MIN", "PTRDIFF_MAX"),
    "ssize_t": _signed("ISIZE", "PTRDIFF_MIN", "PTRDIFF_MAX"),
    "intptr_t": _signed("ISIZE", "INTPTR_MIN", "INTPTR_MAX"),
    "uint8_t": _unsigned("U8", "UINT8_MAX"),
    "uint16_t": _unsigned("U16", "UINT16_MAX"),
    "uint32_t": _unsigned("U32", "UINT32_MAX"),
    "uint64_t": _unsigned("U64", "UINT64_MAX"),
    "unsigned": _unsigned("U32", "UINT_MAX"),
    "unsigned int": _unsigned("U32", "UINT_MAX"),
    "unsigned char": _unsigned("U8", "UCHAR_MAX"),
    "unsigned short": _unsigned("U16", "USHRT_MAX"),
    "unsigned short int": _unsigned("U16", "USHRT_MAX"),
    "unsigned long": _ULONG,
    "unsigned long int": _ULONG,
    "unsigned long long": _ULLONG,
    "unsigned long long int": _ULLONG,
    "size_t": _unsigned("USIZE", "SIZE_MAX"),
    "usize": _unsigned("USIZE", "SIZE_MAX"),
    "uintptr_t": _unsigned("USIZE", "UINTPTR_MAX"),
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
    "supported: integers (int8_t ... uint64_t, char, short, int, long, long long, unsigned ..., "
    "size_t, ptrdiff_t), float, double, bool, float/double _Complex; `const char *` or `char *` "
    "strings; `const T *data, size_t len` arrays (or `T *NAME, size_t NAME_len` with the option "
    "`NAME: array` or `NAME: mut_array`); `T *` or `void *` opaque handles; `void **items, size_t "
    "count` ending a variadic kernel; a first `const TomiiCallCtx *ctx`"
)
_OPTIONS = (
    '`name="..."`, `variadic`, `out_len=EXPRESSION`, `free=FUNCTION`, `NAME: array` and '
    "`NAME: mut_array`"
)

_QUALIFIERS = {"const", "volatile", "restrict", "__restrict", "__restrict__"}
#: Words of type names: a parameter's last word is its name only when it is none of these.
_OTHER_TYPE_WORDS = {"char", "void", "struct", "signed", "short", "long"}
_TYPE_WORDS = {w for s in SCALARS for w in s.split()} | _QUALIFIERS | _OTHER_TYPE_WORDS
_ANNOTATION = re.compile(r"^\s*//\s*@tomii_export\b(?P<rest>.*)$")
_DECLARATION = re.compile(r"^(?P<ret>.*?)(?P<name>[A-Za-z_]\w*)\s*\((?P<params>.*)\)$", re.DOTALL)
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_ARRAY_OPTION = re.compile(r"(?P<name>[A-Za-z_]\w*)\s*:\s+(?P<mode>array|mut_array)")
_TYPEDEF_STRUCT = re.compile(r"typedef\s+struct\s*\w*\s*\{(?P<body>[^{}]*)\}\s*(?P<name>\w+)\s*;")
_STRUCT = re.compile(r"\bstruct\s+(?P<name>\w+)\s*\{(?P<body>[^{}]*)\}")
_TYPEDEF_ALIAS = re.compile(r"typedef\s+(?P<type>[A-Za-z_][\w\s]*?)\s+(?P<name>\w+)\s*;")
#: The type id of a `void *` handle: every handle parameter accepts one (Tomii 1.2's handles
#: were untyped), and a `void *` parameter accepts a handle of any type.
VOID_HANDLE = "void"
#: The element of an array parameter of `void *`: any.
ANY_ELEMENT = "TOMII_ANY_ELEMENT"


@dataclass(frozen=True)
class CType:
    """A parsed C type: its base type (without qualifiers or `struct`), as spelled in C (with
    `struct`), its pointer depth and constness."""

    base: str
    pointer: bool
    const: bool
    text: str
    spelled: str = ""
    #: A pointer to a pointer (`void **`).
    double: bool = False


@dataclass(frozen=True)
class Param:
    """What one C parameter receives. `kind` is "context", "scalar", "string", "array",
    "object" (an opaque handle), "list" (a variadic kernel's trailing results as values),
    "handles" (the trailing results as a pointer array) or "raw" (every argument); arrays,
    lists, handles and raw arguments consume the `size_t` parameter named by `length`."""

    name: str
    kind: str
    ctype: CType
    length: str = ""
    #: An array's element tag (ANY_ELEMENT for `void`); a handle's type name ("" for any).
    elem: str = ""
    #: For Tomii 1.2's `NAME: array` / `NAME: mut_array`: "read" or "write", the lock the
    #: wrapper holds on the array for the call.
    lock: str = ""


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
    #: The element tag of an array result.
    result_elem: str = ""
    #: The function that frees what the C function returned, "" when nothing is freed (a
    #: handle without free=, a const result).
    release: str = ""
    #: A `mut_array` kernel: its C result is dropped (released with free= if given) and the
    #: kernel returns nothing, as in Tomii 1.2.
    in_place: bool = False
    #: Struct names used as array elements, with the tag they are read as.
    pairs: tuple[tuple[str, str], ...] = ()

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


@dataclass
class _Header:
    """What the declarations of one header are read against: its scalar typedefs, its structs
    (a pair of floats or doubles, or why not) and where its warnings go."""

    aliases: dict[str, str]
    structs: dict[str, str]
    warn: Callable[[str], None]
    pairs: dict[str, str] = field(default_factory=dict)


def parse_header(header: Path) -> list[Kernel]:
    """The kernels of `header`; raises PluginError naming `header:line` for what is unsupported
    and warns (HeaderWarning) for what it ignores."""
    text = header.read_text(encoding="utf-8")
    lines = text.splitlines()
    code = _without_comments(text)
    aliases, structs = _aliases(code), _structs(code)
    kernels: list[Kernel] = []
    for number, line in enumerate(lines, start=1):
        found = _ANNOTATION.match(line)
        if found is None:
            continue

        def warn(message: str, number: int = number) -> None:
            warnings.warn(
                f"{header}:{number}: {message}", HeaderWarning, stacklevel=user_stacklevel()
            )

        context = _Header(aliases, structs, warn)
        try:
            options, arrays = _options(_option_text(found.group("rest"), warn), warn)
            kernel = _kernel(_declaration_after(lines, number), options, arrays, context)
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


def _without_comments(text: str) -> str:
    return re.sub(r"//[^\n]*", " ", re.sub(r"/\*.*?\*/", " ", text, flags=re.DOTALL))


def _aliases(code: str) -> dict[str, str]:
    """`typedef float real;`: the header's names of scalar types."""
    aliases: dict[str, str] = {}
    for found in _TYPEDEF_ALIAS.finditer(code):
        spelled = " ".join(found.group("type").split())
        if spelled in SCALARS:
            aliases[found.group("name")] = spelled
    return aliases


def _structs(code: str) -> dict[str, str]:
    """The header's structs, each as the tag it is read as when it is an array's element
    (`TOMII_TAG_C32` for two floats, `TOMII_TAG_C64` for two doubles) or what it is instead."""
    structs: dict[str, str] = {}
    for pattern in (_TYPEDEF_STRUCT, _STRUCT):
        for found in pattern.finditer(code):
            structs.setdefault(found.group("name"), _pair(found.group("body")))
    return structs


def _pair(body: str) -> str:
    counts: dict[str, int] = {}
    for member in (m.strip() for m in body.split(";")):
        parsed = re.fullmatch(r"(?P<type>[A-Za-z_][\w\s]*?)\s+(?P<names>[\w\s,\[\]]+)", member)
        if not member:
            continue
        if parsed is None:
            return f"a member `{member}`"
        kind = " ".join(w for w in parsed.group("type").split() if w not in _QUALIFIERS)
        for name in parsed.group("names").split(","):
            length = re.search(r"\[\s*(\d+)\s*\]", name)
            counts[kind] = counts.get(kind, 0) + (int(length.group(1)) if length else 1)
    if counts == {"float": 2}:
        return "TOMII_TAG_C32"
    if counts == {"double": 2}:
        return "TOMII_TAG_C64"
    described = ", ".join(f"{n} {kind}" for kind, n in counts.items()) or "no members"
    return f"{described}"


def _option_text(rest: str, warn: Callable[[str], None]) -> str:
    """The options of `// @tomii_export(...)`: from `(` up to the last `)` on the line."""
    rest = rest.strip()
    if not rest:
        return ""
    if not rest.startswith("("):
        warn(f"`{rest}` after `// @tomii_export` is ignored; options go in parentheses")
        return ""
    return rest[1 : rest.rfind(")")] if ")" in rest else rest[1:]


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


def _options(text: str, warn: Callable[[str], None]) -> tuple[dict[str, str], dict[str, str]]:
    """`name="x", variadic, out_len=EXPR, free=FN` as a dict (a flag maps to ""), and the
    `NAME: array` / `NAME: mut_array` options as {NAME: mode}. Anything else is warned about
    and ignored (Tomii 1.2 ignored it without a word)."""
    items, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += char == "("
        depth -= char == ")"
        if char == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    options: dict[str, str] = {}
    arrays: dict[str, str] = {}
    for item in (i.strip() for i in items):
        array = _ARRAY_OPTION.fullmatch(item)
        key, equals, value = (part.strip() for part in item.partition("="))
        if not item:
            continue
        if array is not None:
            arrays[array.group("name")] = array.group("mode")
        elif key in ("name", "out_len", "free") and value:
            options[key] = value
        elif key == "variadic" and not equals:
            options[key] = ""
        else:
            squeezed = re.fullmatch(r"(\w+)\s*:\s*(array|mut_array)", item)
            hint = f" (did you mean `{squeezed[1]}: {squeezed[2]}`?)" if squeezed else ""
            warn(
                f"unknown option {item!r} of `// @tomii_export` is ignored{hint}, as Tomii 1.2 "
                f"ignored it; the options are {_OPTIONS}"
            )
    return options, arrays


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
    if stars > 2:
        raise _Problem(f"unsupported C type `{text}` (a pointer to a pointer to a pointer)")
    before_star = tokens[: tokens.index("*")] if stars else tokens
    spelled = " ".join(t for t in tokens if t not in _QUALIFIERS and t != "*")
    words = [t for t in tokens if t not in _QUALIFIERS and t not in ("*", "struct")]
    text = " ".join(text.split())
    ctype = CType(" ".join(words), stars >= 1, "const" in before_star, text, spelled, stars == 2)
    return ctype, name


def _kernel(
    declaration: str, options: dict[str, str], arrays: dict[str, str], header: _Header
) -> Kernel:
    found = _DECLARATION.match(" ".join(declaration.split()))
    if found is None or "(" in found.group("params"):
        raise _Problem(f"cannot read the declaration `{declaration}`: write `TYPE name(PARAMS);`")
    ret_text = found.group("ret").replace("extern ", "").strip()
    if not ret_text or "static" in ret_text.split() or "inline" in ret_text.split():
        raise _Problem(f"`{declaration}`: export a plain prototype (no static or inline)")
    function = found.group("name")
    param_text = found.group("params").strip()
    texts = [] if param_text in ("", "void") else [p.strip() for p in param_text.split(",")]
    parsed = [_resolved(_ctype(t, named=True), header) for t in texts]
    for name in sorted(set(arrays) - {n for _, n in parsed}):
        header.warn(f"option `{name}: {arrays[name]}` names no parameter of {function}; ignored")
    variadic = "variadic" in options
    params = _params(parsed, variadic, arrays, header)
    result_type, _ = _resolved(_ctype(ret_text, named=False), header)
    in_place = any(p.lock == "write" for p in params)
    names = {p.name for p in params} | {p.length for p in params}
    result, elem, release = _result(result_type, options, names, header, in_place)
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
        result_elem=elem,
        release=release,
        in_place=in_place,
        pairs=tuple(sorted(header.pairs.items())),
    )


def _resolved(parsed: tuple[CType, str], header: _Header) -> tuple[CType, str]:
    """The type with a typedef name of a scalar (`typedef float real;`) replaced by the scalar."""
    ctype, name = parsed
    if ctype.base in header.aliases:
        base = header.aliases[ctype.base]
        ctype = replace(ctype, base=base, spelled=base)
    return ctype, name


def _params(
    parsed: list[tuple[CType, str]], variadic: bool, arrays: dict[str, str], header: _Header
) -> tuple[Param, ...]:
    """Classifies the parameters, pairing each array or list pointer with its `size_t` length."""
    params: list[Param] = []
    i = 0
    while i < len(parsed):
        ctype, name = parsed[i]
        following = parsed[i + 1] if i + 1 < len(parsed) else None
        sized = following is not None and following[0].base == "size_t"
        sized = sized and following is not None and not following[0].pointer
        param = _param(ctype, name, i == 0, sized, arrays.get(name, ""), header)
        if param.kind in ("array", "list", "handles"):
            if following is None or not sized:
                raise _Problem(
                    f"parameter {name}: a `{ctype.text}` is followed by its `size_t` length"
                )
            param = replace(param, length=following[1])
            i += 1
            only = all(p.kind == "context" for p in params) and i + 1 == len(parsed)
            if param.kind == "list" and not variadic and only:
                # The whole argument list, as the ABI's values: any number of arguments.
                param = replace(param, kind="raw")
            elif param.kind in ("list", "handles") and (not variadic or i + 1 != len(parsed)):
                raise _Problem(
                    f"parameter {name}: `{ctype.text} {name}, size_t {following[1]}` takes the "
                    "trailing results: it ends a `// @tomii_export(variadic)` declaration"
                    + (
                        " (or is the only parameter, besides the context, of a kernel that "
                        "takes its arguments as they come)"
                        if param.kind == "list"
                        else ""
                    )
                )
        params.append(param)
        i += 1
    if variadic and (not params or params[-1].kind not in ("list", "handles")):
        raise _Problem(
            "a variadic kernel ends with `void **items, size_t count` (handles) or "
            "`const TomiiValue *items, size_t count` (values)"
        )
    return tuple(params)


def _param(ctype: CType, name: str, first: bool, sized: bool, mode: str, header: _Header) -> Param:
    """One parameter's kind; `sized` when a `size_t` follows it, `mode` its array option."""
    if mode:
        return _annotated_array(ctype, name, sized, mode, header)
    if ctype.base == "TomiiCallCtx" and ctype.pointer and not ctype.double:
        if not first:
            raise _Problem(f"parameter {name}: the `const TomiiCallCtx *` parameter comes first")
        return Param(name, "context", ctype)
    if not ctype.pointer:
        if ctype.base in SCALARS:
            return Param(name, "scalar", ctype)
        raise _Problem(f"parameter {name}: unsupported C type `{ctype.text}`; {_SUPPORTED}")
    if ctype.double:
        return Param(name, "handles", ctype, elem=_handle_type(ctype, name))
    if ctype.base == "char":
        return Param(name, "string", ctype)
    if ctype.base == "TomiiValue":
        return Param(name, "list", ctype)
    number = ctype.base in SCALARS and SCALARS[ctype.base].kind != "bool"
    if number and ctype.const and sized:
        return Param(name, "array", ctype, elem=SCALARS[ctype.base].tag)
    if ctype.base in SCALARS:
        header.warn(
            f"parameter {name}: `{ctype.text}` is read as an opaque handle, as Tomii 1.2 read "
            f"it; for an array write `const {ctype.base} *{name}, size_t {name}_len`, or give "
            f"the option `{name}: array` (or `{name}: mut_array` to change it in place)"
        )
    return Param(name, "object", ctype, elem=_handle_type(ctype, name))


def _handle_type(ctype: CType, name: str) -> str:
    """The type a handle parameter checks: its base type, or "" (any) for `void`."""
    if ctype.base == "void":
        return ""
    if not _IDENTIFIER.fullmatch(ctype.base.replace(" ", "_")):
        raise _Problem(f"parameter {name}: unsupported C type `{ctype.text}`; {_SUPPORTED}")
    return ctype.base


def _annotated_array(ctype: CType, name: str, sized: bool, mode: str, header: _Header) -> Param:
    """Tomii 1.2's `NAME: array` (read) or `NAME: mut_array` (changed in place, seen by every
    consumer of the value): `T *NAME, size_t NAME_len`."""
    if not ctype.pointer or ctype.double:
        raise _Problem(
            f"parameter {name}: `{name}: {mode}` is for `T *{name}, size_t {name}_len`, "
            f"not `{ctype.text}`"
        )
    if mode == "mut_array" and ctype.const:
        raise _Problem(
            f"parameter {name}: `{ctype.text}` cannot be changed in place: drop the `const`, "
            f"or give `{name}: array` to read it"
        )
    if not sized:
        raise _Problem(f"parameter {name}: `{name}: {mode}` is followed by `size_t {name}_len`")
    elem = _element(ctype.base, header, f"parameter {name}", result=False)
    return Param(name, "array", ctype, elem=elem, lock="write" if mode == "mut_array" else "read")


def _element(base: str, header: _Header, what: str, *, result: bool) -> str:
    """The element tag of an array of `base`: a number, or (Tomii 1.2's mapping) any other name
    read as a (re, im) pair of floats, checked against the struct when the header defines it."""
    if base in SCALARS and SCALARS[base].kind != "bool":
        return SCALARS[base].tag
    if base == "void":
        return "TOMII_TAG_C32" if result else ANY_ELEMENT
    if base in SCALARS or not _IDENTIFIER.fullmatch(base):
        raise _Problem(f"{what}: an array of `{base}` is not supported; {_SUPPORTED}")
    tag = header.structs.get(base, "TOMII_TAG_C32")
    if not tag.startswith("TOMII_TAG_"):
        raise _Problem(
            f"{what}: an array of `{base}` is read as (re, im) pairs of float or of double, "
            f"but struct {base} has {tag}; make it `{{ float re, im; }}` or "
            "`{ double re, im; }`, or pass it as a handle"
        )
    header.pairs[base] = tag
    return tag


def _result(
    ctype: CType, options: dict[str, str], names: set[str], header: _Header, in_place: bool
) -> tuple[str, str, str]:
    """The result's kind, element tag and release function, checking `out_len` and `free`."""
    free = options.get("free", "")
    unknown = set(_IDENTIFIER.findall(options.get("out_len", ""))) - names
    if in_place:
        # Tomii 1.2: a kernel that changes an array in place returns nothing, whatever C returns.
        return "none", "", free if ctype.pointer else ""
    if ctype.double:
        raise _Problem(f"unsupported result type `{ctype.text}`; {_SUPPORTED}")
    if not ctype.pointer:
        kind = "none" if ctype.base == "void" else "scalar" if ctype.base in SCALARS else ""
        if not kind:
            raise _Problem(f"unsupported result type `{ctype.text}`; {_SUPPORTED}")
        if free:
            raise _Problem("free= is for a kernel that returns a pointer")
        if "out_len" in options:
            raise _Problem("out_len= is for a kernel that returns an array (`T *`)")
        return kind, "", ""
    if "out_len" in options:
        if ctype.base == "char" or ctype.const:
            raise _Problem(
                "out_len= is for a kernel that returns an array it gives away (`T *`, "
                f"not `{ctype.text}`)"
            )
        if unknown:
            raise _Problem(f"out_len uses {', '.join(sorted(unknown))}, which are not parameters")
        return "array", _element(ctype.base, header, "the result", result=True), free or "free"
    if ctype.base == "char" and not ctype.const:
        return "string", "", free or "free"
    if ctype.const:
        if free:
            raise _Problem(
                f"returns `{ctype.text}`, which the library keeps; free= is for a result it "
                "gives away (drop the const)"
            )
        if ctype.base == "char":
            header.warn(
                f"returns `{ctype.text}`: read as an opaque handle the library keeps, as Tomii "
                "1.2 read it; return `char *` (freed with free=) for a string"
            )
    elif ctype.base in SCALARS:
        header.warn(
            f"returns `{ctype.text}` without out_len=: read as an opaque handle, as Tomii 1.2 "
            "read it; give out_len=EXPRESSION for an array"
        )
    _handle_type(ctype, "the result")
    return "object", "", free


#: The helpers every generated file starts with (C source, copied in after the includes).
_PRELUDE = Path(__file__).with_name("_cgen_prelude.c")


def _article(text: str) -> str:
    # "an int64_t" but "a uint8_t": the type names here start with a vowel sound only on a, e, i, o.
    return f"an {text}" if text[0] in "aeio" else f"a {text}"


def _c_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _type_id(name: str) -> str:
    return f"0x{fnv1a32(name or VOID_HANDLE):08x}u"


def _declare(param: Param) -> str:
    """The wrapper's local for `param`, zero-initialised (a string is the wrapper's own copy)."""
    ctype = param.ctype
    if param.kind == "string":
        return f"char *{param.name} = NULL;"
    const = "const " if ctype.const else ""
    if ctype.double:
        return f"{const}{ctype.spelled} **{param.name} = NULL;"
    if ctype.pointer:
        return f"{const}{ctype.spelled} *{param.name} = NULL;"
    return f"{ctype.spelled} {param.name} = 0;"


def _convert(param: Param, index: int) -> list[str]:
    """The statements that fill the local of `param` from argument `index`."""
    call = f"tomii_ctx, &tomii_sig, tomii_args, {index}"
    expected = _c_string(_article(param.ctype.base))
    fail = "goto tomii_done;"
    if param.kind == "scalar":
        return _convert_scalar(param, call, expected, fail)
    if param.kind == "string":
        return [f"if (!tomii_string({call}, &{param.name})) {fail}"]
    if param.kind == "array":
        what = "any element type" if param.elem == ANY_ELEMENT else param.ctype.base
        expected = _c_string(f"an array of {what}")
        read = f"const void *tomii_p; if (!tomii_array({call}, {param.elem}, {expected}, &tomii_p, &{param.length})) {fail}"
        return [f"{{ {read} {param.name} = (void *)tomii_p; }}"]
    any_type = "true" if not param.elem else "false"
    described = (
        f"a {param.elem} handle (type id {_type_id(param.elem)[:-1]})" if param.elem else "a handle"
    )
    expected = _c_string(described)
    if param.kind == "object":
        read = f"const void *tomii_p; if (!tomii_object({call}, {any_type}, {_type_id(param.elem)}, {expected}, &tomii_p)) {fail}"
        return [f"{{ {read} {param.name} = (void *)tomii_p; }}"]
    if param.kind == "handles":
        read = f"void **tomii_p; if (!tomii_handles({call}, {any_type}, {_type_id(param.elem)}, {expected}, &tomii_p, &{param.length})) {fail}"
        return [f"{{ {read} {param.name} = (void *)tomii_p; }}"]
    return [f"if (!tomii_list({call}, &{param.name}, &{param.length})) {fail}"]


def _convert_scalar(param: Param, call: str, expected: str, fail: str) -> list[str]:
    scalar = SCALARS[param.ctype.base]
    cast = param.ctype.spelled
    if scalar.kind == "signed":
        read = f"int64_t tomii_v; if (!tomii_signed({call}, {scalar.low}, {scalar.high}, {expected}, &tomii_v)) {fail}"
        return [f"{{ {read} {param.name} = ({cast})tomii_v; }}"]
    if scalar.kind == "unsigned":
        read = f"uint64_t tomii_v; if (!tomii_unsigned({call}, {scalar.high}, {expected}, &tomii_v)) {fail}"
        return [f"{{ {read} {param.name} = ({cast})tomii_v; }}"]
    if scalar.kind == "real":
        read = f"double tomii_v; if (!tomii_real({call}, {expected}, &tomii_v)) {fail}"
        return [f"{{ {read} {param.name} = ({cast})tomii_v; }}"]
    if scalar.kind == "bool":
        return [f"if (!tomii_bool({call}, {expected}, &{param.name})) {fail}"]
    part = "float" if scalar.tag == "TOMII_TAG_C32" else "double"
    read = f"double tomii_v[2]; if (!tomii_complex({call}, {expected}, tomii_v)) {fail}"
    store = (
        f"{part} tomii_parts[2] = {{({part})tomii_v[0], ({part})tomii_v[1]}}; "
        f"memcpy(&{param.name}, tomii_parts, sizeof tomii_parts);"
    )
    return [f"{{ {read} {store} }}"]


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
    release = f"tomii_release_{kernel.release}" if kernel.release else "NULL"
    missing = 'tomii_fail(tomii_ctx, "kernel %s returned NULL", tomii_sig.kernel); goto tomii_done;'
    if kernel.result == "array":
        return [
            f"size_t tomii_len = (size_t)({kernel.out_len});",
            f"if (tomii_result == NULL && tomii_len > 0) {{ {missing} }}",
            "tomii_out->tag = TOMII_TAG_ARRAY;",
            f"tomii_out->elem = {kernel.result_elem};",
            (
                "tomii_out->payload.buf = (TomiiBuffer){.data = (void *)tomii_result, .len = tomii_len, "
                f".release = tomii_result == NULL ? NULL : {release}}};"
            ),
        ]
    if kernel.result == "string":
        tag, elem, length = "TOMII_TAG_STR", "0", "strlen(tomii_result)"
    else:
        tag, elem, length = "TOMII_TAG_OBJECT", _type_id(ctype.base), "0"
    return [
        f"if (tomii_result == NULL) {{ {missing} }}",
        f"tomii_out->tag = {tag};",
        f"tomii_out->elem = {elem};",
        (
            f"tomii_out->payload.buf = (TomiiBuffer){{.data = (void *)tomii_result, .len = {length}, "
            f".release = {release}}};"
        ),
    ]


def _call(kernel: Kernel) -> list[str]:
    """The call of the C function, under the locks of its Tomii 1.2 arrays."""
    call_args = []
    for param in kernel.params:
        call_args.append("tomii_ctx" if param.kind == "context" else param.name)
        if param.length:
            call_args.append(param.length)
    call = f"{kernel.function}({', '.join(call_args)})"
    locked = [p for p in kernel.params if p.lock]
    lines = []
    if locked:
        entries = ", ".join(
            f"{{{p.name}, {'true' if p.lock == 'write' else 'false'}, 0, 0}}" for p in locked
        )
        lines += [
            f"TomiiLock tomii_locks[] = {{{entries}}};",
            f"tomii_lock_all(tomii_locks, {len(locked)});",
        ]
    ctype = kernel.result_type
    star = " *" if ctype.pointer else " "
    declared = f"{'const ' if ctype.const else ''}{ctype.spelled}{star}"
    if kernel.in_place and kernel.release:
        lines.append(f"{declared}tomii_dropped = {call};")
    elif kernel.result == "none":
        returns_void = ctype.base == "void" and not ctype.pointer
        lines.append(f"{call};" if returns_void else f"(void){call};")
    else:
        lines.append(f"{declared}tomii_result = {call};")
    if locked:
        lines.append(f"tomii_unlock_all(tomii_locks, {len(locked)});")
    if kernel.in_place and kernel.release:
        lines.append(
            f"if (tomii_dropped != NULL) tomii_release_{kernel.release}((void *)tomii_dropped, 0, NULL);"
        )
    return lines


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
    takes_context = any(p.kind == "context" for p in kernel.params)
    if takes_context:
        lines.append("tomii_clear_error(tomii_ctx);")
    lines += _call(kernel)
    if takes_context:
        release = ""
        if kernel.result != "none" and kernel.release:
            release = f"if (tomii_result != NULL) tomii_release_{kernel.release}((void *)tomii_result, 0, NULL); "
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


def _pair_checks(kernels: list[Kernel]) -> list[str]:
    """Compile-time checks that each struct read as (re, im) pairs has the size of one."""
    checks = []
    for name, tag in sorted({pair for k in kernels for pair in k.pairs}):
        part = "float" if tag == "TOMII_TAG_C32" else "double"
        message = (
            f"{name} is an array element read as (re, im) pairs of {part} (Tomii 1.2's mapping "
            f"of a struct name): it must be two {part}s"
        )
        checks.append(
            f"_Static_assert(sizeof({name}) == 2 * sizeof({part}), {_c_string(message)});"
        )
    return checks


def generate(header: Path, kernels: list[Kernel], library: str) -> str:
    """The C source of the wrappers and the registry of `kernels`, declared in `header`."""
    frees = sorted({k.release for k in kernels if k.release})
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
        "#include <complex.h>\n#include <inttypes.h>\n#include <limits.h>\n#include <pthread.h>",
        "#include <stdarg.h>\n#include <stdbool.h>\n#include <stdint.h>\n#include <stdio.h>",
        "#include <stdlib.h>\n#include <string.h>",
        "",
        '#include "tomii/tomii.h"',
        f"#include {_c_string(header.name)}",
        "",
        f"#define TOMII_VOID_HANDLE {_type_id(VOID_HANDLE)}",
        *_pair_checks(kernels),
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
