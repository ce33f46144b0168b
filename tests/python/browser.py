"""Headless Chromium for the tests of the package's pages, driven by Selenium through Debian's
chromium and chromium-driver (scripts/test.sh installs them).

The browser has no network: every request that is not to the loopback interface goes to a proxy
that does not exist, so a page that needed anything from outside would show it. Without chromium
the tests that need it are skipped with the reason, except on CI (`CI` set), where they fail.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.support.ui import WebDriverWait

#: The driver the tests get: Chromium's, which has the console log (`page_errors`).
WebDriver = webdriver.Chrome

__all__ = ["WebDriver", "chromium", "page_errors", "wait_for"]

#: Chromium's flags: headless, no sandbox (CI runs as root), no network but loopback.
FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--window-size=1400,900",
    "--proxy-server=127.0.0.1:9",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
]


def _binaries() -> tuple[str, str]:
    found = [shutil.which(name) for name in ("chromium", "chromedriver")]
    if all(found):
        return found[0] or "", found[1] or ""
    reason = (
        "the browser tests need Debian's chromium and chromium-driver "
        "(apt-get install chromium chromium-driver; scripts/test.sh installs them)"
    )
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


@contextmanager
def chromium() -> Iterator[WebDriver]:
    """A headless Chromium without network, quit when the block ends."""
    browser, driver = _binaries()
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in FLAGS:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    session = webdriver.Chrome(service=Service(driver), options=options)
    try:
        yield session
    finally:
        session.quit()


def wait_for(session: WebDriver, script: str, timeout: float = 10) -> Any:
    """Waits until JavaScript `script` (a `return ...`) gives a true value, and returns it."""
    return WebDriverWait(session, timeout).until(lambda s: s.execute_script(script))


def page_errors(session: WebDriver) -> list[str]:
    """The console's errors since the last call: script errors, refused loads, CSP violations."""
    log: list[dict[str, Any]] = session.get_log("browser")  # type: ignore[no-untyped-call]
    return [entry["message"] for entry in log if entry["level"] == "SEVERE"]
