"""Compatibility surface for Tomii 1.2's scripts, which import `TypedValue` and the type wrappers
from its private module `tomii._types`. The wrappers are `tomii.types`' own; `TypedValue(type,
value)` is 1.2's raw typed argument, adapted: `TypedValue("$ref", "$index")` (and `"$workers"`)
is the runtime's placeholder, written `{"type": "$index"}`, as a node's or an initialization's
argument. Nothing else belongs here.
"""

from __future__ import annotations

from typing import Any

from . import types as _types
from .types import (
    Complex32,
    Complex64,
    String,
    Vec,
    bool_,
    char_,
    f32,
    f64,
    i8,
    i16,
    i32,
    i64,
    i128,
    infer_type,
    isize,
    u8,
    u16,
    u32,
    u64,
    u128,
    usize,
)

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

#: The names a `$ref` may hold that are the runtime's placeholders rather than initializations.
_PLACEHOLDERS = ("$index", "$workers")


class TypedValue(_types.TypedValue):
    """Tomii 1.2's raw typed argument: a type name and the value's text, written as given, but
    for the placeholders: `TypedValue("$ref", "$index")` is `{"type": "$index"}` (the instance's
    index), `"$workers"` likewise, and `TypedValue("$ref", NAME)` refers to initialization NAME."""

    def __init__(self, type_name: str, value_str: str) -> None:
        if not isinstance(type_name, str) or not isinstance(value_str, str):
            raise TypeError("TypedValue(type_name, value_str) takes two strs")
        self.type_name = type_name
        self.value_str = value_str

    def __repr__(self) -> str:
        return f"TypedValue({self.type_name!r}, {self.value_str!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TypedValue):
            return NotImplemented
        return (self.type_name, self.value_str) == (other.type_name, other.value_str)

    def __hash__(self) -> int:
        return hash((self.type_name, self.value_str))

    def to_json(self) -> dict[str, Any]:
        if self.type_name == "$ref" and self.value_str in _PLACEHOLDERS:
            return {"type": self.value_str}
        if self.type_name in _PLACEHOLDERS:
            return {"type": self.type_name}
        if self.type_name == "$ref":
            return {"type": "$ref", "name": self.value_str}
        return {"type": self.type_name, "value": self.value_str}
