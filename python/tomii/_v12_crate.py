"""Tomii 1.2 Rust plugin crates, built unchanged: the rewriting `tomii.build` does at build time.

A 1.2 crate depends on 1.2's `tomii-types` and `tomii-macro` (by path to a 1.2 checkout, or
1.x from crates.io, where 1.2 published them) and is a `dylib`. Its files are never touched: a
generated manifest under the target directory uses the crate's own `src/lib.rs` as its library,
keeps its other dependencies (relative paths made absolute, `workspace = true` resolved), maps
`tomii-types`/`tomii-macro` to the compat crates of the SDK (tomii12-types, tomii12-macro) under
the same names, and builds a `cdylib`. Hand-written `#[no_mangle]` bridges are found by scanning
the sources (as 1.2's converter did: top-level items of lib.rs and of each `mod x;` as `x.rs`)
and registered under their name minus `_cm`.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

from .errors import PluginError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - depends on the interpreter
    import tomli as tomllib

__all__ = ["V12Crate", "read_v12_crate"]

#: The dependency tables whose entries the generated manifest keeps.
KEPT_TABLES = ("dependencies", "build-dependencies")
#: The names of 1.2's SDK crates, mapped to the compat crates (directory under the SDK).
COMPAT = {
    "tomii-types": ("tomii12-types", "v12/types"),
    "tomii-macro": ("tomii12-macro", "v12/macro"),
}
#: Parameter types a hand-written bridge may take, and how its shim reads them.
BRIDGE_PARAMS = {
    "&CmTypes": ("a.cm({i})?", "&arg{i}"),
    "&[CmTypes]": ("a.cm_tail({i})?", "&arg{i}"),
    "&Vec<CmTypes>": ("a.cm_tail({i})?", "&arg{i}"),
    "&str": ("a.value::<&str>({i})?", "arg{i}"),
    "String": ("a.value::<String>({i})?", "arg{i}"),
}
PRIMITIVES = (
    "bool i8 i16 i32 i64 i128 isize u8 u16 u32 u64 u128 usize f32 f64 char".split()  # noqa: SIM905
)
BRIDGE = re.compile(
    r"^#\[\s*(?:unsafe\s*\(\s*)?no_mangle\s*\)?\s*\]\s*(?:pub(?:\([^)]*\))?\s+)?"
    r"(?:extern\s+\"Rust\"\s+)?fn\s+(\w+)\s*\(([^)]*)\)\s*(?:->\s*([^{]+?))?\s*\{",
    re.MULTILINE,
)
MOD = re.compile(r"^(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", re.MULTILINE)


class V12Crate:
    """A 1.2 plugin crate: its manifest, parsed, and what the generated build needs."""

    def __init__(self, manifest: Path, document: dict[str, Any]) -> None:
        self.manifest = manifest
        self.document = document
        package = document.get("package", {})
        self.package = str(package.get("name", manifest.parent.name))
        lib = document.get("lib", {})
        self.lib_name = str(lib.get("name", self.package.replace("-", "_")))
        self.lib_path = (manifest.parent / str(lib.get("path", "src/lib.rs"))).resolve()
        self.workspace_root = _workspace_root(manifest)

    def target_dir(self, env: dict[str, str]) -> Path:
        """Where the compat build goes: `<target>/tomii12`, target being CARGO_TARGET_DIR or the
        crate's (or its workspace's) `target/`."""
        given = env.get("CARGO_TARGET_DIR")
        root = self.workspace_root or self.manifest.parent
        return (Path(given) if given else root / "target").resolve() / "tomii12"

    def write_build(self, sdk: Path, target: Path) -> tuple[Path, Path | None]:
        """Writes the generated manifest (and the bridges' registrations, if any) under `target`;
        returns the manifest and the bridges file."""
        if not self.lib_path.is_file():
            raise PluginError(f"{self.manifest}: its library source {self.lib_path} does not exist")
        directory = target / "manifests" / self.package
        directory.mkdir(parents=True, exist_ok=True)
        manifest = directory / "Cargo.toml"
        text = render_toml(self.generated(sdk))
        if not manifest.is_file() or manifest.read_text(encoding="utf-8") != text:
            manifest.write_text(text, encoding="utf-8")
        lock = directory / "Cargo.lock"
        if not lock.is_file():
            for candidate in self.lockfiles(sdk):
                if candidate.is_file():
                    shutil.copyfile(candidate, lock)
                    break
        bridges = scan_bridges(self.lib_path)
        if not bridges:
            return manifest, None
        registrations = directory / "bridges.rs"
        text = render_bridges(bridges)
        if not registrations.is_file() or registrations.read_text(encoding="utf-8") != text:
            registrations.write_text(text, encoding="utf-8")
        return manifest, registrations

    def lockfiles(self, sdk: Path) -> list[Path]:
        """Lock files to start from, so the build picks the versions already resolved: the crate's,
        its workspace's, then the Tomii repository's (in a source checkout)."""
        found = [self.manifest.parent / "Cargo.lock"]
        if self.workspace_root is not None:
            found.append(self.workspace_root / "Cargo.lock")
        return [*found, sdk.parent / "Cargo.lock"]

    def generated(self, sdk: Path) -> dict[str, Any]:
        """The generated manifest, as a TOML document."""
        package = {
            key: self._inherited("package", key, value)
            for key, value in self.document.get("package", {}).items()
            if key not in ("workspace", "autobins", "autoexamples", "autotests", "autobenches")
        }
        package.update(autobins=False, autoexamples=False, autotests=False, autobenches=False)
        if isinstance(package.get("build"), str):
            package["build"] = str((self.manifest.parent / package["build"]).resolve())
        elif (self.manifest.parent / "build.rs").is_file() and package.get("build") is not False:
            package["build"] = str((self.manifest.parent / "build.rs").resolve())
        document: dict[str, Any] = {
            "package": package,
            "lib": {"name": self.lib_name, "path": str(self.lib_path), "crate-type": ["cdylib"]},
        }
        for table in KEPT_TABLES:
            entries = self.document.get(table, {})
            document[table] = {
                name: self._dependency(name, spec, sdk) for name, spec in entries.items()
            }
        for name, spec in (("tomii-types", None), ("tomii-macro", None)):
            document["dependencies"].setdefault(name, self._dependency(name, spec, sdk))
        if "features" in self.document:
            document["features"] = self.document["features"]
        targets = {}
        for cfg, tables in self.document.get("target", {}).items():
            kept = {
                table: {n: self._dependency(n, s, sdk) for n, s in tables[table].items()}
                for table in KEPT_TABLES
                if table in tables
            }
            if kept:
                targets[cfg] = kept
        if targets:
            document["target"] = targets
        profile = self._profiles()
        # One codegen unit for the compat crate: its registry and the bridges' registrations stay
        # in one object file, which the library always links.
        for name in ("dev", "release"):
            profile.setdefault(name, {}).setdefault("package", {})["tomii12-types"] = {
                "codegen-units": 1
            }
        document["profile"] = profile
        document["workspace"] = {}
        return document

    def _profiles(self) -> dict[str, Any]:
        root = (
            self.document
            if self.workspace_root is None
            else _load(self.workspace_root / "Cargo.toml")
        )
        profiles: dict[str, Any] = json.loads(json.dumps(root.get("profile", {})))
        return profiles

    def _inherited(self, table: str, key: str, value: Any) -> Any:
        if isinstance(value, dict) and value.get("workspace") is True:
            if self.workspace_root is None:
                raise PluginError(
                    f"{self.manifest}: {table}.{key} is inherited from a workspace it is in none of"
                )
            root = _load(self.workspace_root / "Cargo.toml")
            return root.get("workspace", {}).get(table, {}).get(key)
        return value

    def _dependency(self, name: str, spec: Any, sdk: Path) -> Any:
        if name in COMPAT:
            package, directory = COMPAT[name]
            return {"package": package, "path": str((sdk / directory).resolve())}
        base = self.manifest.parent
        if isinstance(spec, dict) and spec.get("workspace") is True:
            if self.workspace_root is None:
                raise PluginError(
                    f"{self.manifest}: dependency {name} is inherited from no workspace"
                )
            root = _load(self.workspace_root / "Cargo.toml")
            inherited = root.get("workspace", {}).get("dependencies", {}).get(name)
            if inherited is None:
                raise PluginError(
                    f"{self.manifest}: the workspace has no dependency {name} to inherit"
                )
            extra = {k: v for k, v in spec.items() if k != "workspace"}
            spec = {"version": inherited} if isinstance(inherited, str) else {**inherited}
            if "features" in extra:
                spec["features"] = [*spec.get("features", []), *extra.pop("features")]
            spec.update(extra)
            base = self.workspace_root
        if isinstance(spec, dict) and "path" in spec:
            spec = {**spec, "path": str((base / spec["path"]).resolve())}
        return spec


def _load(manifest: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise PluginError(f"{manifest}: cannot read the manifest: {error}") from None


def _workspace_root(manifest: Path) -> Path | None:
    """The directory of the workspace the crate belongs to: its own when it has `[workspace]`
    (1.2's standalone bench crates), else the nearest one above listing it."""
    if "workspace" in _load(manifest):
        return None
    for directory in manifest.parent.parents:
        candidate = directory / "Cargo.toml"
        if candidate.is_file() and "workspace" in _load(candidate):
            return directory
    return None


def read_v12_crate(manifest: Path) -> V12Crate | None:
    """The crate of `manifest` when it is a 1.2 plugin crate, else None. A 1.2 crate depends on
    `tomii-macro` (1.2's name; this SDK's proc-macro crate is `tomii-macros`), or on a
    `tomii-types` that is not this SDK: 1.x from crates.io, or a path to 1.2's tree (or to
    nothing)."""
    document = _load(manifest)
    for table in ("dependencies", "dev-dependencies"):
        entries = document.get(table, {})
        if "tomii-macro" in entries:
            return V12Crate(manifest, document)
        spec = entries.get("tomii-types")
        if isinstance(spec, str) and spec.strip().lstrip("=^~ ").startswith("1"):
            return V12Crate(manifest, document)
        if (
            isinstance(spec, dict)
            and "path" in spec
            and not _is_sdk(manifest.parent / spec["path"])
        ):
            return V12Crate(manifest, document)
        if isinstance(spec, dict) and str(spec.get("version", "")).lstrip("=^~ ").startswith("1"):
            return V12Crate(manifest, document)
    return None


def _is_sdk(crate: Path) -> bool:
    manifest = crate / "Cargo.toml"
    if not manifest.is_file():
        return False
    version = str(_load(manifest).get("package", {}).get("version", ""))
    return not version.startswith("1")


# ----------------------------------------------------------------------------------------------
# Hand-written bridges
# ----------------------------------------------------------------------------------------------


def _sources(lib: Path) -> list[Path]:
    """lib.rs and each `mod x;` it declares as `x.rs` beside it (1.2's converter's rule)."""
    text = lib.read_text(encoding="utf-8")
    found = [lib]
    for name in MOD.findall(text):
        candidate = lib.parent / f"{name}.rs"
        if candidate.is_file():
            found.append(candidate)
    return found


def scan_bridges(lib: Path) -> list[tuple[str, list[tuple[str, str]], str]]:
    """The `#[no_mangle]` functions of the crate's top-level items: (symbol, params, return)."""
    bridges = []
    for source in _sources(lib):
        text = re.sub(r"//[^\n]*", "", source.read_text(encoding="utf-8"))
        for match in BRIDGE.finditer(text):
            symbol, params, returns = match.group(1), match.group(2), (match.group(3) or "").strip()
            parsed = []
            for param in (p.strip() for p in params.split(",")):
                if not param:
                    continue
                name, _, ty = param.partition(":")
                parsed.append((name.strip(), re.sub(r"\s+", "", ty).replace("tomii_types::", "")))
            bridges.append(
                (symbol, parsed, re.sub(r"\s+", "", returns).replace("tomii_types::", ""))
            )
    return bridges


def _rust_type(ty: str) -> str:
    return ty.replace("CmTypes", "crate::CmTypes").replace("&str", "&'static str")


def render_bridges(bridges: list[tuple[str, list[tuple[str, str]], str]]) -> str:
    """Registrations of the bridges, compiled into tomii12-types (its build.rs)."""
    out = ["// Generated by tomii.build from the crate's #[no_mangle] bridges; do not edit.\n"]
    for symbol, params, returns in bridges:
        kernel = symbol.removesuffix("_cm")
        reads, calls, declared = [], [], []
        for i, (name, ty) in enumerate(params):
            if ty in BRIDGE_PARAMS:
                read, call = BRIDGE_PARAMS[ty]
            elif ty in PRIMITIVES:
                read, call = f"a.value::<{ty}>({{i}})?", "arg{i}"
            else:
                raise PluginError(
                    f"bridge {symbol}: parameter {name}: {ty} is not a type a bridge takes "
                    "(&CmTypes, &[CmTypes], &Vec<CmTypes>, a primitive, &str or String)"
                )
            reads.append(f"let arg{i} = {read.format(i=i)};")
            calls.append(call.format(i=i))
            declared.append(f"{name.lstrip('_') or 'arg'}_{i}: {_rust_type(ty)}")
        if returns in ("", "()"):
            result, ret = "{ call; sdk::kernel::Value::none() }", ""
        elif returns == "CmTypes":
            result, ret = "crate::object::into_value(call)", " -> crate::CmTypes"
        elif returns in PRIMITIVES or returns == "String":
            result, ret = "sdk::export::IntoValue::into_value(call)", f" -> {returns}"
        else:
            raise PluginError(
                f"bridge {symbol}: it returns {returns}; a bridge returns CmTypes, a primitive or String"
            )
        names = ", ".join(json.dumps(name) for name, _ in params)
        args = ", ".join(calls)
        out.append(
            f"""
const _: () = {{
    unsafe extern "Rust" {{
        fn {symbol}({", ".join(declared)}){ret};
    }}
    static SIGNATURE: crate::call::Signature12 =
        crate::call::Signature12 {{ kernel: {json.dumps(kernel)}, params: &[{names}] }};
    unsafe extern "C" fn shim(
        args: *const sdk::abi::TomiiValue,
        nargs: usize,
        out: *mut sdk::abi::TomiiValue,
        ctx: *const sdk::abi::TomiiCallCtx,
    ) -> i32 {{
        // SAFETY: the host's pointers are valid per the kernel ABI; the bridge is the crate's
        // own #[no_mangle] function with this signature (scanned from its source).
        unsafe {{
            crate::call::call(args, nargs, out, ctx, &SIGNATURE, |a| {{
                {" ".join(reads)}
                let call = {symbol}({args});
                Ok({result})
            }})
        }}
    }}
    sdk::__private::inventory::submit! {{
        sdk::export::Registration::new(c{json.dumps(kernel)}, shim, false)
    }}
}};
"""
        )
    return "".join(out)


# ----------------------------------------------------------------------------------------------
# TOML
# ----------------------------------------------------------------------------------------------


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_value(v)}" for k, v in value.items()) + " }"
    raise PluginError(f"cannot write {value!r} into a manifest")


def render_toml(document: dict[str, Any]) -> str:
    """A TOML document whose top-level tables hold values, inline tables or nested tables."""
    lines = ["# Generated by tomii.build from a Tomii 1.2 plugin crate; do not edit.\n"]

    def table(path: list[str], body: dict[str, Any]) -> None:
        plain = {k: v for k, v in body.items() if not (isinstance(v, dict) and _is_table(k, path))}
        lines.append(f"[{'.'.join(json.dumps(p) for p in path)}]")
        lines.extend(f"{json.dumps(k)} = {_value(v)}" for k, v in plain.items())
        lines.append("")
        for k, v in body.items():
            if k not in plain:
                table([*path, k], v)

    for name, body in document.items():
        table([name], body)
    return "\n".join(lines)


def _is_table(key: str, path: list[str]) -> bool:
    """Whether `key` under `path` is written as a table of its own (rather than inline): the
    nested tables of `[profile]` and `[target]`; dependencies are inline tables."""
    return path[0] in ("profile", "target")
