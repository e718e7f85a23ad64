"""Issue 34 in real headless Chromium against a real server (the model is the only double): no
stray text anywhere for a lived-in agent, conversations renamed, deleted and restored, titled
from their first message, and a turn that outlives a reload and shows in every open tab."""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, expect

from tests.browser.test_ui import ARTIFACTS, watched_page
from tests.integration.scripted_server import DEFAULT_SCRIPT, start_scripted_server
from tests.integration.server_support import Server

pytestmark = pytest.mark.slow

# what a template prints when a value is missing or not text
STRAY = re.compile(r"\b(null|undefined|NaN)\b|\[object Object\]")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    started = start_scripted_server(tmp_path_factory.mktemp("third-hour"), {"slow_s": 3})
    yield started
    started.stop()


@pytest.fixture
def page(browser: Browser, server: Server, request: pytest.FixtureRequest) -> Iterator[Page]:
    yield from watched_page(browser, server.url, request, width=1100)


def ok(response: httpx.Response) -> Any:
    assert response.is_success, response.text
    return response.json() if response.content else None


def lived_in_agent(api: httpx.Client) -> dict[str, Any]:
    """An agent with private and shared memories, a peer's shared one, a changed fact, a
    forgotten one in the trash, and a conversation that was compacted."""
    me = ok(api.post("/api/agents", json={"name": f"ann{secrets.token_hex(4)}", "role": "Helper"}))
    peer = ok(api.post("/api/agents", json={"name": f"bob{secrets.token_hex(4)}"}))
    mine = f"/api/agents/{me['id']}/memories"

    def memorize(path: str, content: str, **more: Any) -> int:
        body = {"content": content, "category": "fact", **more}
        return int(ok(api.post(path, json=body))["memory"]["id"])

    memorize(mine, "Ann drinks green tea every morning", subject="Ann", importance=6)
    memorize(mine, "The team ships on Thursdays", scope="shared", subject="team")
    memorize(f"/api/agents/{peer['id']}/memories", "Bob hosts the Friday demo", scope="shared")
    changed = memorize(mine, "Ann lives in Porto", subject="Ann")
    ok(api.patch(f"{mine}/{changed}", json={"content": "Ann lives in Lisbon since May"}))
    gone = memorize(mine, "Ann once owned a red bicycle", category="knowledge")
    ok(api.delete(f"{mine}/{gone}"))
    conversation = ok(api.post(f"/api/agents/{me['id']}/conversations", json={}))["id"]
    with api.stream(
        "POST", f"/api/conversations/{conversation}/chat", json={"message": "Hi, I am Ann."}
    ) as response:
        response.read()
    ok(api.post(f"/api/conversations/{conversation}/compact"))
    return dict(me)


def stray_text(page: Page) -> list[str]:
    """Lines of visible text that show a missing value."""
    text = page.locator("body").inner_text()
    return [line for line in text.splitlines() if STRAY.search(line)]


def test_every_tab_of_a_lived_in_agent_shows_no_stray_text(
    page: Page, server: Server, request: pytest.FixtureRequest
) -> None:
    console: list[str] = []

    def on_console(message: ConsoleMessage) -> None:
        if message.type == "error":
            console.append(message.text)

    page.on("console", on_console)
    agent = lived_in_agent(server.client())
    seen: dict[str, list[str]] = {}

    def check(where: str) -> None:
        page.wait_for_timeout(
            500
        )  # what loads after the first paint (the events stream never idles)
        seen[where] = stray_text(page)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"stray-{where}.png"), full_page=True)

    page.goto(f"{server.url}/#/agents/{agent['id']}/chat")
    expect(page.locator(".card.compaction")).to_be_visible()
    page.locator(".card.compaction summary").first.click()
    check("chat")
    page.get_by_role("tab", name="Memory").click()
    expect(page.locator(".memories .content", has_text="Bob hosts the Friday demo")).to_be_visible()
    check("memory")
    # a person's write that may update a fact: the outcome, and the older memory's "newer" line
    page.get_by_text("Add a memory").click()
    form = page.locator(".archive > details form.memory-form")
    form.get_by_label("Content").fill("Ann lives in Lisbon since May 2024, near the river")
    form.get_by_label("Subject").fill("Ann")
    form.get_by_role("button", name="Add memory").click()
    expect(form.locator(".write-result")).to_contain_text("Saved as")
    check("memory-written")
    page.get_by_label("Search", exact=True).fill("where does Ann live")
    page.get_by_role("button", name="Search", exact=True).click()
    expect(page.locator(".memories .memory").first).to_be_visible()
    # each hit says why it was found (issue 34, item 4)
    lisbon = page.locator(".memories .memory", has_text="Ann lives in Lisbon").first
    expect(lisbon.locator(".why")).to_contain_text(re.compile(r"(strong|weak) match: .*meaning"))
    check("memory-search")
    card = page.locator(".memories .memory", has_text="Ann lives in Lisbon since May").first
    card.get_by_role("button", name=re.compile("History of memory")).click()
    expect(page.locator(".memories .history, .memories ol, .memories ul").first).to_be_visible()
    check("memory-history")
    page.get_by_role("button", name="History", exact=True).click()  # the profile's
    page.locator(".trash-view summary").click()
    expect(page.locator(".trash-view", has_text="red bicycle")).to_be_visible()
    check("memory-trash")
    page.get_by_role("tab", name="Settings").click()
    expect(page.locator("#panel")).not_to_be_empty()
    check("settings")

    assert {where: lines for where, lines in seen.items() if lines} == {}
    assert console == [], console


def send(page: Page, text: str) -> None:
    page.get_by_label("Message", exact=True).fill(text)
    page.get_by_role("button", name="Send").click()


def test_conversations_are_titled_renamed_deleted_and_restored(page: Page) -> None:
    page.get_by_label("New agent name").fill(f"ui{secrets.token_hex(4)}")
    page.get_by_role("button", name="Create agent").click()
    page.get_by_role("button", name="New conversation").click()
    send(page, "Plans for the Porto trip in May")
    conversations = page.get_by_role("list", name="Conversations")
    expect(
        conversations.get_by_role("button", name="Plans for the Porto trip in May", exact=True)
    ).to_be_visible()

    conversations.get_by_role("button", name="Rename Plans for the Porto trip in May").click()
    page.get_by_label("New title").fill("Porto trip")
    page.get_by_role("button", name="Save").click()
    expect(conversations.get_by_role("button", name="Porto trip", exact=True)).to_be_visible()

    conversations.get_by_role("button", name="Delete Porto trip").click()
    expect(page.locator(".undo")).to_contain_text('"Porto trip" moved to the trash')
    expect(conversations.get_by_role("button", name="Porto trip", exact=True)).to_have_count(0)
    page.get_by_role("button", name="Undo").click()
    expect(conversations.get_by_role("button", name="Porto trip", exact=True)).to_be_visible()
    expect(page.locator(".msg.assistant", has_text=str(DEFAULT_SCRIPT["chat"]))).to_be_visible()

    conversations.get_by_role("button", name="Delete Porto trip").click()
    page.locator(".trash summary").click()
    page.get_by_role("button", name="Restore Porto trip").click()
    expect(conversations.get_by_role("button", name="Porto trip", exact=True)).to_be_visible()


def test_a_turn_outlives_a_reload_and_shows_in_every_open_tab(
    page: Page, browser: Browser, server: Server, request: pytest.FixtureRequest
) -> None:
    page.get_by_label("New agent name").fill(f"ui{secrets.token_hex(4)}")
    page.get_by_role("button", name="Create agent").click()
    page.get_by_role("button", name="New conversation").click()
    expect(page.get_by_label("Message", exact=True)).to_be_visible()
    other = next(watched_page(browser, page.url, request, width=1100))  # a second tab
    expect(other.get_by_label("Message", exact=True)).to_be_visible()

    send(page, "slow: are you there?")  # the model answers after 3 s
    expect(page.locator(".msg.user", has_text="slow: are you there?")).to_be_visible()
    page.reload()  # mid-turn: the server goes on, and the page shows the turn under way
    answer = str(DEFAULT_SCRIPT["chat"])
    expect(page.locator(".msg.assistant", has_text=answer)).to_be_visible()
    expect(page.locator(".unanswered")).to_have_count(0)
    # the other tab never sent anything, yet shows the exchange
    expect(other.locator(".msg.user", has_text="slow: are you there?")).to_be_visible()
    expect(other.locator(".msg.assistant", has_text=answer)).to_be_visible()
    other.context.close()


def test_a_server_that_cannot_be_reached_is_said_in_words(page: Page) -> None:
    """Issue 34: the browser's "Failed to fetch" told a person nothing."""
    expect(page.get_by_text("Create or pick an agent.")).to_be_visible()  # loaded
    page.route("**/api/**", lambda route: route.abort())  # as if `hivekeep serve` had stopped
    page.get_by_label("New agent name").fill(f"ui{secrets.token_hex(4)}")
    page.get_by_role("button", name="Create agent").click()
    error = page.locator("#new-agent-error")
    expect(error).to_contain_text("The hivekeep server cannot be reached")
    expect(error).not_to_contain_text("Failed to fetch")
    page.goto(f"{page.url.split('#')[0]}#/agents/1/chat")  # a view that cannot load says so too
    expect(page.locator("#main")).to_contain_text("The hivekeep server cannot be reached")


def test_a_window_too_small_for_the_fixed_part_is_said_in_the_chat_tab(
    browser: Browser, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    small = start_scripted_server(tmp_path, {"context_window": 2048})
    try:
        page = next(watched_page(browser, small.url, request, width=1100))
        page.get_by_label("New agent name").fill(f"ui{secrets.token_hex(4)}")
        page.get_by_role("button", name="Create agent").click()
        warning = page.locator(".warning.room")
        expect(warning).to_contain_text("leaves")
        expect(warning).to_contain_text("2,048-token window")
        page.get_by_role("button", name="New conversation").click()
        # the fixed part alone is over the trigger: nothing to fold, and the bar says so
        expect(page.locator(".context .waiting")).to_contain_text("with no message to fold")
        page.context.close()
    finally:
        small.stop()
