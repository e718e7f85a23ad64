"""The web UI with a scoped token (issue 29): a real Chromium page against a real ``hivekeep
serve`` that has an admin token; the page takes a token of one agent and shows only that agent."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from hivekeep import Hive, Settings
from hivekeep.providers.embeddings.local import LocalEmbedder
from tests.integration.server_support import Server, start_server


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, str]]:
    db: Path = tmp_path_factory.mktemp("ui-scoped") / "hive.db"
    with Hive(db, embedder=LocalEmbedder(), settings=Settings()) as hive:
        hive.create_agent("alice")
        hive.create_agent("bob")
        token = hive.tokens.create("alice-ui", ["alice"]).token
    server = start_server(db, db.with_name("serve.log"), token=f"admin-{secrets.token_hex(16)}")
    try:
        yield server, token
    finally:
        server.stop()


def test_the_ui_takes_a_scoped_token_and_shows_only_its_agents(
    browser: Browser, served: tuple[Server, str]
) -> None:
    server, token = served
    page = browser.new_page()
    try:
        page.goto(server.url)
        expect(page.locator("#status")).to_contain_text("hivekeep tokens create")
        page.fill("#token-input", token)
        page.click("#token-form button")
        expect(page.locator("#agents li")).to_have_text(["alice"])
        page.goto(f"{server.url}/#/agents/bob/chat")
        expect(page.locator("#main .error")).to_contain_text("No agent 'bob'")
    finally:
        page.close()


def test_sign_out_forgets_the_token_and_shows_the_token_form(
    browser: Browser, served: tuple[Server, str]
) -> None:
    """Issue 32: the UI kept the token in localStorage with no way to sign out."""
    server, token = served
    page = browser.new_page()
    try:
        page.goto(server.url)
        page.fill("#token-input", token)
        page.click("#token-form button")
        expect(page.locator("#agents li")).to_have_text(["alice"])
        assert page.evaluate("localStorage.getItem('hivekeep.token')") == token
        page.get_by_role("button", name="Sign out").click()
        expect(page.locator("#token-form")).to_be_visible()
        expect(page.locator("#agents li")).to_have_count(0)
        expect(page.get_by_role("button", name="Sign out")).to_be_hidden()
        assert page.evaluate("localStorage.getItem('hivekeep.token')") is None
        page.reload()  # nothing kept: the page asks for a token again
        expect(page.locator("#token-form")).to_be_visible()
        expect(page.locator("#status")).to_contain_text("needs a token")
    finally:
        page.close()
