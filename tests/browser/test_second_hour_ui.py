"""Issue 26 in real headless Chromium against a real server (the model is the only double): what
the API says about a write is shown (duplicate, reworded, similar), a person's memory is
attributed to the person, search shows relevance in words, history diffs read cleanly, a
rejected token says so, and a failed chat turn is stored once and retried in place, with drafts
kept."""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from hivekeep import Hive, Settings
from hivekeep.providers.embeddings.local import LocalEmbedder
from tests.browser.test_ui import TIMEOUT_MS, create_agent, watched_page
from tests.integration.scripted_server import DEFAULT_SCRIPT, start_scripted_server
from tests.integration.server_support import Server, start_server
from tests.wire_servers import WireServer, openai_stream

pytestmark = pytest.mark.slow

FAIL = str(DEFAULT_SCRIPT["fail_marker"])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    started = start_scripted_server(tmp_path_factory.mktemp("second-hour"))
    yield started
    started.stop()


@pytest.fixture
def page(browser: Browser, server: Server, request: pytest.FixtureRequest) -> Iterator[Page]:
    yield from watched_page(browser, server.url, request, width=1000)


def open_memory_tab(page: Page) -> None:
    create_agent(page)
    page.get_by_role("tab", name="Memory").click()
    page.get_by_text("Add a memory").click()


def type_memory(page: Page, content: str) -> None:
    form = page.locator(".archive > details form.memory-form")
    form.get_by_label("Content").fill(content)
    form.get_by_label("Subject").fill("Ann")
    form.get_by_role("button", name="Add memory").click()
    expect(form.get_by_label("Content")).to_have_value("")  # reset once the server answered


def test_a_write_says_what_the_server_said_duplicate_and_similar(page: Page) -> None:
    open_memory_tab(page)
    outcome = page.locator(".memory-form .write-result")
    type_memory(page, "Ann lives in Lisbon since May")
    expect(outcome).to_contain_text(re.compile(r"Saved as #\d+"))
    first_id = outcome.locator("a.memory-link").first.get_attribute("data-memory")

    type_memory(page, "Ann lives in Porto since May")  # close to the first: listed as similar
    expect(outcome).to_contain_text("Similar memories")
    similar = outcome.locator(".similar li")
    expect(similar).to_have_count(1)
    expect(similar).to_contain_text(f"#{first_id} “Ann lives in Lisbon since May”")

    type_memory(page, "Ann lives in Lisbon since May.")  # the same fact in other words
    expect(outcome).to_contain_text(f"Reworded #{first_id}")
    expect(outcome).to_contain_text("previous text is kept in its history")
    expect(page.locator(".memories .memory")).to_have_count(2)  # no new memory
    page.locator(".memory-form .memory-link", has_text=f"#{first_id}").click()
    focused = page.locator(f".memories .memory.focus[data-id='{first_id}']")
    expect(focused).to_be_visible()
    expect(focused).to_be_in_viewport()
    lisbon = page.locator(f".memories .memory[data-id='{first_id}']")
    expect(lisbon.locator(".content")).to_have_text("Ann lives in Lisbon since May.")  # live
    expect(lisbon.locator(".newer")).to_contain_text("Ann lives in Porto since May")  # newer
    lisbon.get_by_role("button", name=re.compile("^History")).click()
    versions = page.get_by_role("list", name="History").locator(".version")
    expect(versions).to_have_count(2)
    expect(versions.first).to_contain_text("reword")
    expect(versions.first).to_contain_text("by person")

    type_memory(page, "Ann lives in Lisbon since May.")  # an exact repeat
    expect(outcome).to_contain_text(f"Already known as #{first_id}")
    expect(outcome).to_contain_text("Nothing new was saved.")


def test_a_memory_typed_into_the_form_is_recorded_as_the_persons(page: Page) -> None:
    open_memory_tab(page)
    type_memory(page, "Ann keeps bees in the garden")
    item = page.locator(".memories .memory", has_text="bees")
    item.get_by_role("button", name=re.compile("^History")).click()
    version = page.get_by_role("list", name="History").locator(".version")
    expect(version).to_have_count(1)
    expect(version).to_contain_text("create")
    expect(version).to_contain_text("by person")


def test_search_shows_relevance_in_words_and_marks_weak_matches(page: Page) -> None:
    open_memory_tab(page)
    for content in (
        "The user moved to Lisbon in May 2024.",
        "The user has a cat named Miso.",
        "The user prefers short answers.",
        "The user works as a nurse at night.",
    ):
        type_memory(page, content)
    expect(page.locator(".memories .memory")).to_have_count(4)
    filters = page.get_by_role("search")
    filters.get_by_label("Search").fill("where does the user live")
    filters.get_by_role("button", name="Search").click()
    hits = page.locator(".memories .memory")
    expect(hits.first.locator(".content")).to_have_text("The user moved to Lisbon in May 2024.")
    expect(hits.first.locator(".badge.match")).to_have_text("strong match")
    expect(hits.locator(".badge.match", has_text="weak match")).to_have_count(3)
    expect(hits.first.locator(".badge.match")).to_have_attribute("title", re.compile("meaning"))
    expect(page.locator(".legend")).to_be_visible()
    expect(page.get_by_role("list", name="Memories")).not_to_contain_text("score")


def test_history_diffs_keep_words_apart_and_the_profile_keeps_its_lines(page: Page) -> None:
    open_memory_tab(page)
    type_memory(page, "Standup is at 10am")
    item = page.locator(".memories .memory", has_text="Standup")
    item.get_by_role("button", name="Edit").click()
    editor = page.locator(".memories form.memory-form")
    editor.get_by_label("Content").fill("Standup is at 11am")
    editor.get_by_role("button", name="Save changes").click()
    page.locator(".memories .memory", has_text="11am").get_by_role(
        "button", name=re.compile("^History")
    ).click()
    newest = page.get_by_role("list", name="History").locator(".version").first
    expect(newest.locator(".diff")).to_have_text("Standup is at 10am 11am")  # not "10am11am"

    profile = page.get_by_label("Profile document (markdown)")
    profile.fill("## User\n- Name: Ann\n- Lives in Lisbon\n")
    page.get_by_role("button", name="Save profile").click()
    expect(page.get_by_text("Saved (")).to_be_visible()
    profile.fill("## User\n- Name: Ann\n- Lives in Porto\n")
    page.get_by_role("button", name="Save profile").click()
    page.locator(".profile").get_by_role("button", name="History").click()
    diff = page.locator(".profile-history .version").first.locator(".diff")
    expect(diff.locator("del")).to_have_text("Lisbon")
    lines = diff.evaluate("(node) => node.innerText.split('\\n').filter(Boolean)")
    assert lines[:3] == ["## User", "- Name: Ann", "- Lives in Lisbon Porto"], lines


def test_a_rejected_token_is_said_to_be_rejected(browser: Browser, tmp_path: Path) -> None:
    token = secrets.token_hex(16)
    server = start_server(tmp_path / "hive.db", tmp_path / "serve.log", token=token)
    context = browser.new_context()
    try:
        page = context.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        page.goto(server.url)
        status = page.locator("#status")
        expect(status).to_contain_text("This server needs a token")
        page.get_by_label("API token").fill("not-the-token-at-all")
        page.get_by_role("button", name="Use token").click()
        expect(status).to_contain_text("rejected this API token")
        expect(page.get_by_label("API token")).to_have_attribute("aria-invalid", "true")
        page.get_by_label("API token").fill(token)
        page.get_by_role("button", name="Use token").click()
        expect(status).to_have_text("")
        expect(page.locator("#token-form")).to_be_hidden()
    finally:
        context.close()
        server.stop()


def test_a_failed_send_is_stored_once_and_drafts_survive_tabs_and_reloads(
    page: Page, server: Server
) -> None:
    name = create_agent(page)
    page.get_by_role("button", name="New conversation").click()
    message = page.get_by_label("Message", exact=True)
    failing = f"{FAIL} tell me about Lisbon"
    message.fill(failing)
    page.get_by_role("button", name="Send").click()
    expect(page.get_by_role("alert").filter(has_text="scripted model is down")).to_be_visible()
    expect(page.locator(".msg.user .unanswered")).to_contain_text("Send it again to retry")
    expect(message).to_have_value(failing)  # kept, to try again
    page.get_by_role("button", name="Send").click()  # fails again (the marker): not stored twice
    expect(page.locator(".msg.user .unanswered")).to_be_visible()
    api = server.client()
    [conversation] = api.get(f"/api/agents/{name}/conversations").json()["conversations"]
    stored = api.get(f"/api/conversations/{conversation['id']}/messages").json()["messages"]
    assert [(m["role"], m["content"]) for m in stored] == [("user", failing)]

    message.fill("A draft I have not sent")
    page.get_by_role("tab", name="Memory").click()
    page.get_by_role("tab", name="Chat").click()
    expect(page.get_by_label("Message", exact=True)).to_have_value("A draft I have not sent")
    page.reload()
    expect(page.get_by_label("Message", exact=True)).to_have_value("A draft I have not sent")
    page.get_by_label("Message", exact=True).fill("Hello there")
    page.get_by_role("button", name="Send").click()
    expect(page.locator(".msg.assistant", has_text="Hello from the scripted model")).to_be_visible()
    expect(page.get_by_label("Message", exact=True)).to_have_value("")
    page.reload()
    expect(page.locator(".msg.assistant").first).to_be_visible()
    expect(page.get_by_label("Message", exact=True)).to_have_value("")  # sent: no draft left


def test_a_model_without_its_key_disables_send_until_settings_give_the_key(
    browser: Browser, tmp_path: Path
) -> None:
    env: dict[str, str | None] = {
        "HIVEKEEP_LLM": "openai:gpt-4o-mini",
        "OPENAI_API_KEY": None,
        "OPENAI_BASE_URL": None,
    }
    server = start_server(tmp_path / "hive.db", tmp_path / "serve.log", env=env)
    context = browser.new_context()
    try:
        with WireServer() as wire:
            wire.script(openai_stream(["Hello ", "from the local model."]))
            page = context.new_page()
            page.set_default_timeout(TIMEOUT_MS)
            page.goto(server.url)
            create_agent(page)
            expect(page.locator(".no-model")).to_contain_text("OPENAI_API_KEY")
            page.get_by_role("button", name="New conversation").click()
            expect(page.get_by_role("button", name="Send")).to_be_disabled()
            page.get_by_role("tab", name="Settings").click()
            page.get_by_label("Provider", exact=True).select_option("openai")
            page.get_by_label("API key", exact=True).fill("sk-local-test-key-0000")
            page.get_by_label("Base URL", exact=True).fill(f"{wire.url}/v1")
            page.get_by_role("button", name="Use for this server").click()
            expect(page.locator(".credentials .result")).to_contain_text("in memory only")
            expect(page.locator(".credentials")).to_contain_text("openai: key set")
            expect(page.get_by_label("API key", exact=True)).to_have_value("")  # never shown back
            page.get_by_role("tab", name="Chat").click()
            expect(page.locator(".no-model")).to_have_count(0)
            page.get_by_label("Message", exact=True).fill("Hi")
            page.get_by_role("button", name="Send").click()
            expect(page.locator(".msg.assistant", has_text="from the local model")).to_be_visible()
    finally:
        context.close()
        server.stop()


def test_a_write_by_another_process_appears_without_a_reload(
    page: Page, server: Server, local_embedder: LocalEmbedder
) -> None:
    name = create_agent(page)
    page.get_by_role("tab", name="Memory").click()
    expect(page.get_by_text("No memories match.")).to_be_visible()
    with Hive(server.log.parent / "hive.db", embedder=local_embedder, settings=Settings()) as cli:
        cli.get_agent(name).memorize("Ann keeps bees in the garden", category="fact")
        cli.get_agent(name).set_profile("## User\n- Keeps bees\n")
    expect(page.locator(".memories .content", has_text="keeps bees")).to_be_visible()
    expect(page.get_by_label("Profile document (markdown)")).to_have_value(
        "## User\n- Keeps bees\n"
    )
