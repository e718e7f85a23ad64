"""What every browser test needs: Debian's Chromium (never a Playwright download) and one browser
per test session."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists():
    if os.environ.get("CI") or os.environ.get("HIVEKEEP_REQUIRE_BROWSER"):
        raise RuntimeError(f"{CHROMIUM} is missing: scripts/test installs it with apt-get")
    collect_ignore_glob = ["test_*.py"]  # nothing to drive them with: `scripts/test` installs it

    def pytest_report_header() -> str:
        return f"browser tests left out: {CHROMIUM} is not installed (apt-get install chromium)"
else:
    from playwright.sync_api import Browser, sync_playwright

    @pytest.fixture(scope="session")
    def browser() -> Iterator[Browser]:
        with sync_playwright() as playwright:
            launched = playwright.chromium.launch(
                executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-gpu"]
            )
            yield launched
            launched.close()
