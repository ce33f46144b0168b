"""Every Python test runs against the plugins built in target/debug: scheduler and kernel plugin
names resolve there first."""

from __future__ import annotations

import pytest
from reference import SYNTHETIC, TARGET


@pytest.fixture(autouse=True)
def scheduler_path(monkeypatch: pytest.MonkeyPatch) -> None:
    if not SYNTHETIC.is_file():
        pytest.fail(f"{SYNTHETIC} is missing: run `cargo build --workspace` first")
    monkeypatch.setenv("TOMII_SCHEDULER_PATH", str(TARGET))
    monkeypatch.setenv("TOMII_PLUGIN_PATH", str(TARGET))
