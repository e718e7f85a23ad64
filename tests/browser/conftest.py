"""What every browser test needs: Debian's Chromium (never a Playwright download) and one browser
per test module (a session-wide Playwright keeps its event loop running
under later asyncio tests). Without Chromium the tests skip, or fail under CI and `scripts/test`."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, sync_playwright

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists() and (os.environ.get("CI") or os.environ.get("HIVEKEEP_REQUIRE_BROWSER")):
    raise RuntimeError(f"{CHROMIUM} is missing: scripts/test installs it with apt-get")


@pytest.fixture(scope="module")  # a live Playwright loop would break later asyncio tests
def browser() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium)")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-gpu"]
        )
        yield launched
        launched.close()
