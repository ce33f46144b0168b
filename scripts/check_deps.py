#!/usr/bin/env python3
"""Checks the crate dependency rules of ARCHITECTURE.md §2 over `cargo metadata`.

Every workspace member gets a role from its directory (tomii-types/, tomii-core/, schedulers/*,
plugins/* and examples/*/kernels, tomii-py/, bench/, tests/, experiments/); each role may depend
only on the workspace crates listed for it, whatever the dependency kind (normal, build or dev).
A member in no known directory is itself a violation, so a new crate gets a role here before it
lands.

One exception, by directory: tomii-types/macros (the `tomii-macros` proc-macro crate behind
`#[tomii_export]`) has the TYPES role and tomii-types may depend on it. A proc-macro must be a
crate of its own, and it lives inside tomii-types so that the two ship together as the plugin SDK;
no other TYPES -> TYPES edge is allowed, and the macros crate itself depends on no crate of ours.

The Tomii 1.2 compat SDK (tomii-types/v12/types, the `tomii12-types` crate, and tomii-types/v12/macro,
`tomii12-macro`) has the KERNEL_SDK role: kernel-SDK crates that 1.2 plugin crates build against,
depending on tomii-types alone (the macro crate on nothing of ours). Nothing in the workspace
depends on them.
Python 3 standard library only; importable (`check(metadata)` returns the violations).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path, PurePosixPath
from typing import Any

Json = dict[str, Any]

TYPES, KERNEL_SDK, CORE, SCHEDULER, PLUGIN, BINDING, LEAF = (
    "types",
    "kernel-sdk",
    "core",
    "scheduler",
    "plugin",
    "binding",
    "leaf",
)

# Role -> (roles it may depend on, or None for "any but a leaf"; the rule of ARCHITECTURE.md §2).
ALLOWED = {
    TYPES: (set(), "rule 1: tomii-types depends on no crate of ours"),
    KERNEL_SDK: ({TYPES}, "rule 1: a kernel-SDK crate depends only on tomii-types"),
    SCHEDULER: ({TYPES}, "rule 2: a scheduler depends only on tomii-types"),
    PLUGIN: ({TYPES}, "rule 2: a kernel plugin depends only on tomii-types"),
    CORE: (
        {TYPES},
        (
            "rule 3: tomii-core depends only on tomii-types, not even for tests; "
            "it finds schedulers and plugins at run time by name or path"
        ),
    ),
    BINDING: (
        {CORE, TYPES},
        "rule 4: the Python binding depends on tomii-core/tomii-types only",
    ),
    LEAF: (None, ""),  # a leaf may depend on any crate but another leaf
}
LEAF_RULE = "rule 5: bench/, tests/ and experiments/ are leaves: nothing depends on them"


# The one edge between two crates of the same role that rule 1 allows (see the module doc).
ALLOWED_EDGES = {(PurePosixPath("tomii-types"), PurePosixPath("tomii-types/macros"))}

# Where each role lives, relative to the workspace root.
AT = {  # exactly these
    "tomii-types": TYPES,
    "tomii-types/macros": TYPES,
    "tomii-types/v12/types": KERNEL_SDK,
    "tomii-types/v12/macro": KERNEL_SDK,
    "tomii-core": CORE,
}
ONE_LEVEL_UNDER = {"schedulers": SCHEDULER, "plugins": PLUGIN}  # schedulers/<name>/
ANYWHERE_UNDER = {
    "tomii-py": BINDING,
    "tomii": BINDING,
    "bench": LEAF,
    "tests": LEAF,
    "experiments": LEAF,
}


def role_of(rel_dir: PurePosixPath) -> str | None:
    """The role of the crate whose manifest sits in `rel_dir` (relative to the workspace root)."""
    parts = rel_dir.parts
    if rel_dir.as_posix() in AT:
        return AT[rel_dir.as_posix()]
    if len(parts) == 2 and parts[0] in ONE_LEVEL_UNDER:
        return ONE_LEVEL_UNDER[parts[0]]
    if len(parts) == 3 and parts[0] == "examples" and parts[2] == "kernels":
        return PLUGIN  # an example's kernel library (examples/<name>/kernels) is a kernel plugin
    if parts and parts[0] in ANYWHERE_UNDER:
        return ANYWHERE_UNDER[parts[0]]
    return None


def relative_dir(path: str, root: Path) -> PurePosixPath | None:
    """`path` (a directory or a Cargo.toml) relative to `root`, or None when outside it."""
    p = Path(path)
    if p.name == "Cargo.toml":
        p = p.parent
    try:
        return PurePosixPath(p.resolve().relative_to(root.resolve()).as_posix())
    except ValueError:
        return None


def describe(name: str, rel: PurePosixPath) -> str:
    return f"{name} ({rel}/)"


def check(metadata: Json) -> tuple[list[str], int]:
    """The violations in `metadata` (cargo metadata --no-deps), and the number of crates checked."""
    root = Path(metadata["workspace_root"])
    members = set(metadata["workspace_members"])
    packages = [p for p in metadata["packages"] if p["id"] in members]
    violations = []
    for pkg in sorted(packages, key=lambda p: p["manifest_path"]):
        rel = relative_dir(pkg["manifest_path"], root)
        role = role_of(rel) if rel is not None else None
        if rel is None or role is None:
            violations.append(
                f"{describe(pkg['name'], rel or PurePosixPath(pkg['manifest_path']))} is in no directory "
                "of ARCHITECTURE.md §2 -- move it, or give its directory a role in scripts/check_deps.py"
            )
            continue
        violations += check_package(pkg, rel, role, root)
    return violations, len(packages)


def check_package(pkg: Json, rel: PurePosixPath, role: str, root: Path) -> list[str]:
    """The violations among `pkg`'s dependencies on crates of this repository."""
    allowed, rule = ALLOWED[role]
    out = []
    for dep in pkg["dependencies"]:
        dep_rel = relative_dir(dep["path"], root) if dep.get("path") else None
        if dep_rel is None:
            continue  # a registry, git or out-of-tree crate: not ours
        dep_role = role_of(dep_rel)
        if (rel, dep_rel) in ALLOWED_EDGES:
            continue
        if dep_role == LEAF:
            why = LEAF_RULE
        elif allowed is None or dep_role in allowed:
            continue
        else:
            why = rule
        kind = dep["kind"] or "normal"
        edge = f"{describe(pkg['name'], rel)} has a {kind} dependency on {describe(dep['name'], dep_rel)}"
        out.append(f"{edge} -- ARCHITECTURE.md §2 {why}")
    return out


def cargo_metadata(repo: Path) -> Json:
    cmd = [
        "cargo",
        "metadata",
        "--format-version",
        "1",
        "--no-deps",
        "--manifest-path",
        str(repo / "Cargo.toml"),
    ]
    result = subprocess.run(cmd, check=False, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"check_deps: `{' '.join(cmd)}` failed:\n{result.stderr}")
    metadata: Json = json.loads(result.stdout)
    return metadata


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--metadata",
        type=Path,
        help="read this cargo metadata JSON instead of running cargo",
    )
    args = parser.parse_args(argv)
    repo = Path(__file__).resolve().parent.parent
    metadata = json.loads(args.metadata.read_text()) if args.metadata else cargo_metadata(repo)
    violations, checked = check(metadata)
    for line in violations:
        print(line)
    if violations:
        print(
            f"dependency rules: {len(violations)} violation(s); see ARCHITECTURE.md §2",
            file=sys.stderr,
        )
        return 1
    print(f"dependency rules: ok ({checked} crates checked)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
