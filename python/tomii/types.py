"""Explicitly typed argument values: the Rust types of the graph format's typed literals.

Each wrapper is a small frozen dataclass whose `to_json()` gives `{"type": T, "value": V}`, the
typed-literal form of the graph JSON (tomii-core/src/graph/README.md, "Literals").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

__all__ = [
    "Complex32",
    "Complex64",
    "String",
    "TypedValue",
    "Vec",
    "bool_",
    "char_",
    "f32",
    "f64",
    "i8",
    "i16",
    "i32",
    "i64",
    "i128",
    "infer_type",
    "isize",
    "u8",
    "u16",
    "u32",
    "u64",
    "u128",
    "usize",
]

#: Integers beyond this magnitude lose precision in JSON readers that use doubles.
_EXACT_IN_DOUBLE = 2**53


class TypedValue:
    """Base of the typed wrappers: a value with an explicit Rust type."""

    TYPE: ClassVar[str] = ""

    def to_json(self) -> dict[str, Any]:
        """The typed literal `{"type": T, "value": V}`."""
        raise NotImplementedError


@dataclass(frozen=True)
class _Int(TypedValue):
    value: int
    BITS: ClassVar[int] = 64
    SIGNED: ClassVar[bool] = False
    #: Wider than a double holds exactly: a large value is written as a string.
    WIDE: ClassVar[bool] = False

    def __init_subclass__(cls, *, bits: int, signed: bool = False, **kwargs: Any) -> None:
        """An integer type is named by its class and sized by the class keywords."""
        super().__init_subclass__(**kwargs)
        cls.TYPE = cls.__name__
        cls.BITS = bits
        cls.SIGNED = signed
        cls.WIDE = bits > 64

    def __post_init__(self) -> None:
        if isinstance(self.value, bool) or not isinstance(self.value, int):
            raise TypeError(f"{self.TYPE} needs an int, got {type(self.value).__name__}")
        lo = -(1 << (self.BITS - 1)) if self.SIGNED else 0
        hi = (1 << (self.BITS - 1)) - 1 if self.SIGNED else (1 << self.BITS) - 1
        if not lo <= self.value <= hi:
            raise ValueError(f"{self.value} does not fit in {self.TYPE} ({lo}..={hi})")

    def to_json(self) -> dict[str, Any]:
        return {"type": self.TYPE, "value": _wide(self.value) if self.WIDE else self.value}


def _wide(value: int) -> int | str:
    return str(value) if abs(value) > _EXACT_IN_DOUBLE else value


class i8(_Int, bits=8, signed=True):
    pass


class i16(_Int, bits=16, signed=True):
    pass


class i32(_Int, bits=32, signed=True):
    pass


class i64(_Int, bits=64, signed=True):
    pass


class isize(_Int, bits=64, signed=True):
    pass


class i128(_Int, bits=128, signed=True):
    pass


class u8(_Int, bits=8):
    pass


class u16(_Int, bits=16):
    pass


class u32(_Int, bits=32):
    pass


class u64(_Int, bits=64):
    pass


class usize(_Int, bits=64):
    pass


class u128(_Int, bits=128):
    pass


@dataclass(frozen=True)
class _Float(TypedValue):
    value: float

    def __post_init__(self) -> None:
        if isinstance(self.value, bool) or not isinstance(self.value, (int, float)):
            raise TypeError(f"{self.TYPE} needs a float, got {type(self.value).__name__}")

    def to_json(self) -> dict[str, Any]:
        return {"type": self.TYPE, "value": float(self.value)}


class f32(_Float):
    TYPE = "f32"


class f64(_Float):
    TYPE = "f64"


class _Plain(TypedValue):
    """A value written as it is, of one Python type (`PY_TYPE`)."""

    value: Any
    PY_TYPE: ClassVar[type] = object

    def __post_init__(self) -> None:
        if not isinstance(self.value, self.PY_TYPE):
            name, wanted, got = (
                type(self).__name__,
                self.PY_TYPE.__name__,
                type(self.value).__name__,
            )
            raise TypeError(f"{name} needs a {wanted}, got {got}")

    def to_json(self) -> dict[str, Any]:
        return {"type": self.TYPE, "value": self.value}


@dataclass(frozen=True)
class String(_Plain):
    value: str
    TYPE: ClassVar[str] = "String"
    PY_TYPE: ClassVar[type] = str


@dataclass(frozen=True)
class bool_(_Plain):
    value: bool
    TYPE: ClassVar[str] = "bool"
    PY_TYPE: ClassVar[type] = bool


@dataclass(frozen=True)
class char_(_Plain):
    value: str
    TYPE: ClassVar[str] = "char"

    def __post_init__(self) -> None:
        if not isinstance(self.value, str) or len(self.value) != 1:
            raise ValueError(f"char_ needs a single character, got {self.value!r}")


@dataclass(frozen=True)
class _Complex(TypedValue):
    re: float
    im: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"type": self.TYPE, "value": [float(self.re), float(self.im)]}


class Complex32(_Complex):
    TYPE = "Complex32"


class Complex64(_Complex):
    TYPE = "Complex64"


_ELEMENT_TYPES = frozenset(
    [
        "i8",
        "i16",
        "i32",
        "i64",
        "i128",
        "isize",
        "u8",
        "u16",
        "u32",
        "u64",
        "u128",
        "usize",
        "f32",
        "f64",
        "bool",
        "char",
        "String",
        "Complex32",
        "Complex64",
    ]
)


def _element(elem_type: str, value: Any) -> Any:
    if isinstance(value, TypedValue):
        if value.TYPE != elem_type:
            raise TypeError(f"Vec<{elem_type}> cannot hold a {value.TYPE}")
        return value.to_json()["value"]
    if elem_type.startswith("Complex"):
        if isinstance(value, (list, tuple)) and len(value) == 2:
            return [float(value[0]), float(value[1])]
        c = complex(value)
        return [c.real, c.imag]
    if elem_type in ("i128", "u128") and isinstance(value, int):
        return _wide(value)
    if elem_type == "char" and (not isinstance(value, str) or len(value) != 1):
        raise ValueError(f"Vec<char> needs single characters, got {value!r}")
    return value


@dataclass(frozen=True)
class Vec(TypedValue):
    """`Vec<T>`: `Vec("f32", [1.0, 2.0])` gives `{"type": "Vec<f32>", "value": [1.0, 2.0]}`."""

    elem_type: str
    values: list[Any] | tuple[Any, ...]
    TYPE: ClassVar[str] = "Vec"

    def __post_init__(self) -> None:
        if self.elem_type not in _ELEMENT_TYPES:
            known = ", ".join(sorted(_ELEMENT_TYPES))
            raise ValueError(f"Vec element type {self.elem_type!r} is not one of: {known}")

    def to_json(self) -> dict[str, Any]:
        values = [_element(self.elem_type, v) for v in self.values]
        return {"type": f"Vec<{self.elem_type}>", "value": values}


def infer_type(value: Any) -> TypedValue:
    """The typed value of a plain Python value: bool → bool, int → usize, float → f64.

    A negative int raises ValueError (wrap it, e.g. `isize(-1)`); any other type raises TypeError.
    """
    if isinstance(value, TypedValue):
        return value
    if isinstance(value, bool):
        return bool_(value)
    if isinstance(value, int):
        if value < 0:
            raise ValueError(
                f"{value} is negative: plain ints are inferred as usize; wrap it as isize({value}) "
                "or another signed type"
            )
        return usize(value)
    if isinstance(value, float):
        return f64(value)
    raise TypeError(
        f"cannot infer a Rust type for {type(value).__name__} value {value!r}: "
        "wrap it explicitly (e.g. tomii.String, tomii.Vec, tomii.Complex64)"
    )
