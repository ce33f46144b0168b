"""Every Python test runs against the plugins built in target/debug: scheduler and kernel plugin
names resolve there first. Set once for the whole session, so that fixtures of any scope (and the
processes they start) see it too."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from reference import SYNTHETIC, TARGET


@pytest.fixture(autouse=True, scope="session")
def scheduler_path() -> Iterator[None]:
    if not SYNTHETIC.is_file():
        pytest.fail(f"{SYNTHETIC} is missing: run `cargo build --workspace` first")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TOMII_SCHEDULER_PATH", str(TARGET))
        patch.setenv("TOMII_PLUGIN_PATH", str(TARGET))
        yield
