"""The web UI in real headless Chromium (Debian's, driven by Playwright) against a real server whose
only double is the model (``ScriptedLLM``). A failing test leaves a screenshot in
``test-artifacts/`` (or ``$HIVEKEEP_TEST_ARTIFACTS``)."""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.integration.scripted_server import DEFAULT_SCRIPT, start_scripted_server
from tests.integration.server_support import Server

pytestmark = pytest.mark.slow

ARTIFACTS = Path(
    os.environ.get("HIVEKEEP_TEST_ARTIFACTS", Path(__file__).parents[2] / "test-artifacts")
)
TIMEOUT_MS = 15_000


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    started = start_scripted_server(tmp_path_factory.mktemp("ui"))
    yield started
    started.stop()


@pytest.fixture
def page(browser: Browser, server: Server, request: pytest.FixtureRequest) -> Iterator[Page]:
    """A fresh 400 px-wide page (the narrowest layout), screenshotted if the test fails."""
    yield from watched_page(browser, server.url, request, width=400)


def watched_page(
    browser: Browser, url: str, request: pytest.FixtureRequest, *, width: int
) -> Iterator[Page]:
    """A fixture's body: a fresh page at ``url``, screenshotted if the test fails, and no
    JavaScript error allowed on it."""
    context = browser.new_context(viewport={"width": width, "height": 900})
    opened = context.new_page()
    opened.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    opened.goto(url)
    failed_before = request.session.testsfailed
    yield opened
    if request.session.testsfailed > failed_before:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        opened.screenshot(path=str(ARTIFACTS / f"{request.node.name}.png"), full_page=True)
    context.close()
    assert not errors, f"{len(errors)} JavaScript errors on the page, first: {errors[:3]}"


def create_agent(page: Page) -> str:
    name = f"ui{secrets.token_hex(4)}"
    page.get_by_label("New agent name").fill(name)
    page.get_by_role("button", name="Create agent").click()
    expect(page.get_by_role("heading", level=2, name=name)).to_be_visible()
    return name


def add_memory(page: Page, content: str) -> None:
    form = page.locator(".archive > details form.memory-form")
    if not form.is_visible():
        page.get_by_text("Add a memory").click()
    form.get_by_label("Content").fill(content)
    form.get_by_label("Subject").fill("Ann")
    form.get_by_role("button", name="Add memory").click()
    expect(page.locator(".memories .content", has_text=content)).to_be_visible()


def test_memories_are_added_searched_edited_and_deleted(page: Page) -> None:
    create_agent(page)
    page.get_by_role("tab", name="Memory").click()
    add_memory(page, "Ann lives in Lisbon since May")
    add_memory(page, "Ann's favourite drink is green tea")
    filters = page.get_by_role("search")
    filters.get_by_label("Search").fill("where does Ann live")
    filters.get_by_role("button", name="Search").click()
    first = page.locator(".memories .memory").first
    expect(first.locator(".content")).to_have_text("Ann lives in Lisbon since May")
    expect(first.locator(".badge.match")).to_have_text(re.compile(r"^(strong|weak) match$"))
    first.get_by_role("button", name="Edit").click()
    editor = page.locator(".memories form.memory-form")
    editor.get_by_label("Content").fill("Ann lives in Porto now")
    editor.get_by_role("button", name="Save changes").click()
    expect(page.locator(".memories .content", has_text="Porto")).to_be_visible()
    filters.get_by_label("Search").fill("")
    filters.get_by_role("button", name="Search").click()
    expect(page.locator(".memories .memory")).to_have_count(2)
    page.once("dialog", lambda dialog: dialog.accept())
    page.locator(".memories .memory", has_text="Porto").get_by_role(
        "button", name=re.compile("^Delete")
    ).click()
    expect(page.locator(".memories .memory")).to_have_count(1)


def test_profile_over_budget_is_refused_and_regenerate_shows_its_end(page: Page) -> None:
    create_agent(page)
    page.get_by_role("tab", name="Memory").click()
    profile = page.get_by_label("Profile document (markdown)")
    profile.fill("## User\n" + "- Ann likes many things, such as tea and long walks.\n" * 400)
    expect(page.locator(".gauge.over")).to_contain_text("over budget")
    page.get_by_role("button", name="Save profile").click()
    expect(page.get_by_role("alert").filter(has_text="Not saved (422)")).to_be_visible()
    profile.fill("## User\n- Ann\n")
    page.get_by_role("button", name="Save profile").click()
    expect(page.locator(".result.ok")).to_contain_text("Saved")

    add_memory(page, "Ann lives in Lisbon")
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Regenerate").click()
    expect(page.locator(".result.ok")).to_contain_text("Profile regenerated.")
    expect(profile).to_have_value(re.compile("Name: Ann"))

    add_memory(page, f"{DEFAULT_SCRIPT['fail_marker']} here")
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Regenerate").click()
    expect(page.get_by_role("alert").filter(has_text="Regenerate failed")).to_contain_text(
        "no usable <profile> block"
    )
    expect(page.get_by_role("button", name="Regenerate")).to_be_enabled()


def test_chat_streams_and_force_compact_shows_the_finished_card(page: Page) -> None:
    create_agent(page)
    page.get_by_role("button", name="New conversation").click()
    expect(page.get_by_role("meter", name="Context usage")).to_be_visible()
    message = page.get_by_role("textbox", name="Message")
    for turn in range(3):
        message.fill(f"Turn {turn}: I like green tea and I live in Lisbon.")
        message.press("Enter")
        expect(page.locator(".msg.assistant:not(.streaming)")).to_have_count(turn + 1)
    expect(page.locator(".msg.assistant").last).to_have_text(
        re.compile(re.escape(str(DEFAULT_SCRIPT["chat"])))
    )
    page.get_by_role("button", name="Force compact").click()
    card = page.locator(".card.compaction.done")
    expect(card).to_contain_text("messages folded")
    expect(card).to_contain_text("1 memory extracted")
    expect(card).to_contain_text("profile updated")
    card.get_by_text("Summary").click()
    expect(card.locator(".summary")).to_have_text(str(DEFAULT_SCRIPT["fold"]))
    expect(page.locator(".msg.folded").first).to_be_visible()

    page.get_by_role("tab", name="Settings").click()
    expect(page.get_by_text(re.compile("^In force: scripted"))).to_be_visible()
    threshold = page.get_by_label("threshold percent")
    threshold.fill("50")
    page.get_by_label("keep percent").fill("60")
    page.get_by_role("button", name="Save settings").click()
    expect(page.locator(".result.error")).to_contain_text("keep_percent")
    page.get_by_label("keep percent").fill("30")
    page.get_by_role("button", name="Save settings").click()
    expect(page.locator(".result.ok")).to_contain_text("Saved")


def test_deleting_an_agent_says_what_stays_and_a_person_may_remove_it(page: Page) -> None:
    author = create_agent(page)
    page.get_by_role("tab", name="Memory").click()
    content = f"The {author} team meets on Thursdays"
    page.get_by_text("Add a memory").click()
    form = page.locator(".archive > details form.memory-form")
    form.get_by_label("Content").fill(content)
    form.get_by_label("Scope").select_option("shared")
    form.get_by_role("button", name="Add memory").click()
    expect(page.locator(".memories .content", has_text=content)).to_be_visible()

    page.get_by_role("tab", name="Settings").click()
    questions: list[str] = []

    def answer(dialog: Any) -> None:
        questions.append(dialog.message)
        dialog.accept()

    page.once("dialog", answer)
    page.get_by_role("button", name="Delete agent").click()
    expect(page.locator("#status")).to_contain_text("Kept 1 shared memory")
    assert "Its shared memories stay" in questions[0] and author in questions[0]

    create_agent(page)
    page.get_by_role("tab", name="Memory").click()
    item = page.locator(".memories .memory", has_text=content)
    expect(item.get_by_text(f"shared by {author} (deleted)")).to_be_visible()
    page.once("dialog", lambda dialog: dialog.accept())
    item.get_by_role("button", name=re.compile("^Delete")).click()
    expect(item).to_have_count(0)


def test_the_ui_works_under_the_guard_and_another_sites_page_cannot_post(
    browser: Browser, server: Server
) -> None:
    """The UI's own requests (same origin, JSON) pass the cross-site checks, under any allowed
    name; a page of another origin posting a form or a no-cors fetch to the API is refused."""
    from tests.integration.server_support import free_port

    port = server.url.rsplit(":", 1)[1]
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        page.goto(f"http://localhost:{port}/")  # another allowed name than the tests' 127.0.0.1
        name = create_agent(page)  # a POST from the page: Origin and Sec-Fetch-Site are sent
        page.get_by_role("tab", name="Memory").click()
        add_memory(page, "Ann keeps bees in the garden")

        other = f"http://127.0.0.1:{free_port()}/"  # another origin: a local dev server, say
        trap = (
            f'<form id="trap" method="POST" enctype="text/plain" action="{server.url}/api/agents">'
            '<input name=\'{"name":"pwned","role":"\' value=\'"}\'></form>'
        )
        context.route(other, lambda route: route.fulfill(content_type="text/html", body=trap))
        page.goto(other)
        with page.expect_response(lambda response: response.url.endswith("/api/agents")) as sent:
            page.evaluate("document.getElementById('trap').submit()")
        assert sent.value.status == 403, sent.value.text()
        page.wait_for_url(f"{server.url}/api/agents")  # the form navigates to the refusal
        page.goto(other)  # back on the other site's page
        fetched = page.evaluate(
            "async (url) => { try { await fetch(url, {method: 'POST', mode: 'no-cors', "
            "body: '{\"name\": \"pwned2\"}'}); return 'sent'; } catch (e) { return String(e); } }",
            f"{server.url}/api/agents",
        )
        # the browser sent it: the answer is opaque to the page, or, when the refusal comes before
        # the body is read and the connection closes, a network error; nothing is created either way
        assert fetched in ("sent", "TypeError: Failed to fetch"), fetched
        agents = server.client().get("/api/agents").json()["agents"]
        names = {agent["name"] for agent in agents}
        assert name in names and not names & {"pwned", "pwned2"}
        assert not errors, errors
    finally:
        context.close()


def test_memory_history_shows_a_diff_and_restores_and_the_trash_restores(page: Page) -> None:
    create_agent(page)
    page.get_by_role("tab", name="Memory").click()
    add_memory(page, "Ann lives in Lisbon since May")
    item = page.locator(".memories .memory", has_text="Lisbon")
    item.get_by_role("button", name="Edit").click()
    editor = page.locator(".memories form.memory-form")
    editor.get_by_label("Content").fill("Ann lives in Porto since May")
    editor.get_by_role("button", name="Save changes").click()
    item = page.locator(".memories .memory", has_text="Porto")
    item.get_by_role("button", name=re.compile("^History")).click()
    history = page.get_by_role("list", name="History")
    expect(history.locator(".version")).to_have_count(2)
    expect(history.locator("ins").first).to_have_text("Porto")
    expect(history.locator("del").first).to_have_text("Lisbon")
    history.get_by_role("button", name="Restore version 1").click()
    expect(page.locator(".memories .content", has_text="Lisbon")).to_be_visible()

    page.once("dialog", lambda dialog: dialog.accept())
    page.locator(".memories .memory", has_text="Lisbon").get_by_role(
        "button", name=re.compile("^Delete")
    ).click()
    expect(page.locator(".memories .memory")).to_have_count(0)
    page.get_by_text("Trash", exact=True).click()
    trash = page.get_by_role("list", name="Trash")
    expect(trash.locator(".memory", has_text="Lisbon")).to_be_visible()
    trash.get_by_role("button", name=re.compile("^Restore memory")).click()
    expect(page.locator(".memories:not(.trash) .content", has_text="Lisbon")).to_be_visible()
    expect(trash.locator(".memory")).to_have_count(0)


def test_profile_history_restores_an_older_text(page: Page) -> None:
    create_agent(page)
    page.get_by_role("tab", name="Memory").click()
    profile = page.get_by_label("Profile document (markdown)")
    profile.fill("## Health\n- allergic to peanuts\n")
    page.get_by_role("button", name="Save profile").click()
    expect(page.locator(".result.ok")).to_contain_text("Saved")
    profile.fill("## Health\n- nothing known\n")
    page.get_by_role("button", name="Save profile").click()
    expect(page.locator(".result.ok")).to_contain_text("Saved")
    page.get_by_role("button", name="History", exact=True).click()
    history = page.locator(".profile-history").get_by_role("list", name="History")
    expect(history.locator(".version")).to_have_count(3)
    history.get_by_role("button", name="Restore version 1").click()
    expect(profile).to_have_value(re.compile("allergic to peanuts"))
    expect(page.locator(".result.ok")).to_contain_text("Restored version 1")


def test_the_compaction_card_links_to_the_profile_diff_its_maintenance_made(page: Page) -> None:
    create_agent(page)
    page.get_by_role("button", name="New conversation").click()
    message = page.get_by_role("textbox", name="Message")
    for turn in range(3):
        message.fill(f"Turn {turn}: my name is Ann.")
        message.press("Enter")
        expect(page.locator(".msg.assistant:not(.streaming)")).to_have_count(turn + 1)
    page.get_by_role("button", name="Force compact").click()
    link = page.locator(".card.compaction.done").get_by_role("link", name=re.compile("profile"))
    expect(link).to_have_text("profile updated (v0 → v1): see the change")
    page.reload()  # the stored record links the same way as the live card
    link = page.locator(".card.compaction.done").get_by_role("link", name=re.compile("profile"))
    expect(link).to_have_attribute("href", re.compile(r"/memory/profile/1$"))
    link.click()
    expect(page.get_by_role("tab", name="Memory")).to_have_attribute("aria-selected", "true")
    entry = page.locator('.profile-history li.version[aria-current="true"]')
    expect(entry).to_have_count(1)
    expect(entry.locator("strong").first).to_have_text("v1")
    expect(entry.locator(".badge").first).to_have_text("rewrite")
    expect(entry.locator(".diff ins", has_text="Ann")).to_have_count(1)  # what the rewrite added
    expect(entry).to_be_in_viewport()
