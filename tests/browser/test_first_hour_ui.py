"""A newcomer's first hour in the web UI (issue 19), in Debian's headless Chromium: offline API
docs, a chat with no model, the agent-name rule, the server's token count, live agent events and
people's wording. One server has no model at all (as ``hivekeep serve`` starts by default); one
has the scripted model, for a send that fails."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest
from playwright.sync_api import Browser, Page, Request, Route, expect

from tests.integration.scripted_server import DEFAULT_SCRIPT, start_scripted_server
from tests.integration.server_support import START_TIMEOUT_S, Server, free_port

pytestmark = pytest.mark.slow

TIMEOUT_MS = 15_000
LOCAL = ("127.0.0.1", "localhost")
SERVE = (sys.executable, "-m", "hivekeep", "serve")
RULE = "1\N{EN DASH}64 letters, digits, spaces, _ . or -, starting with a letter."


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """``hivekeep serve`` on the embedded defaults: no model configured."""
    root = tmp_path_factory.mktemp("bare")
    port = free_port()
    log = root / "serve.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HIVEKEEP_", "MEMORY_"))}
    env = {k: v for k, v in env.items() if not k.startswith("COMPACTING_")}
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [*SERVE, "--port", str(port), "--db", str(root / "hive.db")],
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=env,
        )
    server = Server(f"http://127.0.0.1:{port}", process, log)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _answers(server):
            assert process.poll() is None and time.monotonic() < deadline, server.output()
            time.sleep(0.1)
        yield server
    finally:
        server.stop()


def _answers(server: Server) -> bool:
    try:
        return httpx.get(f"{server.url}/api/health", timeout=1, trust_env=False).is_success
    except httpx.TransportError:
        return False


@pytest.fixture(scope="module")
def scripted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    started = start_scripted_server(tmp_path_factory.mktemp("scripted"))
    yield started
    started.stop()


class Tab:
    """A page whose requests to any host but this machine are refused and recorded."""

    def __init__(self, browser: Browser) -> None:
        self.context = browser.new_context(viewport={"width": 1000, "height": 900})
        self.foreign: list[str] = []
        self.errors: list[str] = []
        self.context.route("**/*", self._only_local)
        self.page = self.context.new_page()
        self.page.set_default_timeout(TIMEOUT_MS)
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))

    def _only_local(self, route: Route, request: Request) -> None:
        host = urlsplit(request.url).hostname or ""
        if request.url.startswith(("data:", "blob:")) or host in LOCAL:
            route.continue_()
        else:
            self.foreign.append(request.url)
            route.abort()

    def close(self) -> None:
        self.context.close()
        assert not self.errors, f"JavaScript errors: {self.errors[:3]}"
        assert not self.foreign, f"requests to other hosts: {self.foreign[:5]}"


@pytest.fixture
def tabs(browser: Browser) -> Iterator[list[Tab]]:
    opened: list[Tab] = []
    yield opened
    for tab in opened:
        tab.close()


def open_tab(tabs: list[Tab], browser: Browser, url: str) -> Page:
    tab = Tab(browser)
    tabs.append(tab)
    tab.page.goto(url)
    return tab.page


def create_agent(page: Page) -> str:
    name = f"ui{secrets.token_hex(4)}"
    page.get_by_label("New agent name").fill(name)
    page.get_by_role("button", name="Create agent").click()
    expect(page.get_by_role("heading", level=2, name=name)).to_be_visible()
    return name


def test_api_docs_render_with_no_request_beyond_this_machine(
    browser: Browser, bare: Server, tabs: list[Tab]
) -> None:
    page = open_tab(tabs, browser, f"{bare.url}/docs")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("hivekeep")
    expect(page.locator(".opblock-summary-path", has_text="/api/agents").first).to_be_visible()
    page.goto(f"{bare.url}/redoc")  # no ReDoc (it fetches from a CDN): the offline /docs instead
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("hivekeep")
    assert page.url == f"{bare.url}/docs"
    page.goto(bare.url)
    icon = page.request.get(f"{bare.url}/favicon.ico")
    assert icon.status == 200 and icon.headers["content-type"] == "image/x-icon"
    expect(page.locator("link[rel=icon]")).to_have_attribute("href", "/favicon.ico")


def test_chat_without_a_model_explains_and_disables_send_and_compact(
    browser: Browser, bare: Server, tabs: list[Tab]
) -> None:
    page = open_tab(tabs, browser, bare.url)
    create_agent(page)
    page.get_by_role("button", name="New conversation").click()
    explanation = page.locator(".no-model")
    expect(explanation).to_contain_text("no chat model")
    expect(explanation.get_by_role("link", name="the Settings tab")).to_be_visible()
    expect(page.get_by_role("button", name="Send")).to_be_disabled()
    expect(page.get_by_role("button", name="Force compact")).to_be_disabled()
    message = page.get_by_role("textbox", name="Message")
    message.fill("hello, are you there?")
    message.press("Enter")  # Enter submits the form: still nothing is lost
    expect(message).to_have_value("hello, are you there?")
    expect(page.get_by_role("alert").filter(has_text="No LLM")).to_have_count(0)
    explanation.get_by_role("link", name="the Settings tab").click()
    expect(page.get_by_role("tab", name="Settings", selected=True)).to_be_visible()


def test_a_failed_send_keeps_the_text_and_shows_the_error_once(
    browser: Browser, scripted: Server, tabs: list[Tab]
) -> None:
    page = open_tab(tabs, browser, scripted.url)
    create_agent(page)
    page.get_by_role("button", name="New conversation").click()
    message = page.get_by_role("textbox", name="Message")
    typed = f"{DEFAULT_SCRIPT['fail_marker']} please answer"
    message.fill(typed)
    page.get_by_role("button", name="Send").click()
    expect(page.get_by_text("the scripted model is down")).to_have_count(1)
    expect(message).to_have_value(typed)
    expect(page.get_by_role("button", name="Send")).to_be_enabled()


def test_the_agent_name_rule_is_the_servers_and_is_shown(
    browser: Browser, bare: Server, tabs: list[Tab]
) -> None:
    page = open_tab(tabs, browser, bare.url)
    expect(page.locator("#new-agent-rule")).to_have_text(RULE)
    name = page.get_by_label("New agent name")
    name.fill("9lives")
    page.get_by_role("button", name="Create agent").click()
    assert "starting with a letter" in name.evaluate("el => el.validationMessage")
    refused = httpx.post(f"{bare.url}/api/agents", json={"name": "9lives"}, trust_env=False)
    assert "starting with a letter" in refused.json()["error"]["message"]
    for accepted in ("Ann", "ann-2 b.c_d"):
        name.fill(accepted)
        assert name.evaluate("el => el.checkValidity()")


def test_the_profile_gauge_shows_the_servers_count_and_people_wording(
    browser: Browser, bare: Server, tabs: list[Tab]
) -> None:
    page = open_tab(tabs, browser, bare.url)
    agent = create_agent(page)
    page.get_by_role("tab", name="Memory").click()
    text = "## User\n- Ann lives in Lisbon and drinks green tea every morning, " * 3 + "\n"
    page.get_by_label("Profile document (markdown)").fill(text)
    tokens = httpx.post(f"{bare.url}/api/tokens", json={"text": text}, trust_env=False).json()
    expect(page.locator(".gauge")).to_have_text(f"{tokens['tokens']} / 1,500 tokens")
    page.get_by_label("Profile document (markdown)").fill(
        "## User\n" + "- Ann likes many things, such as tea and long walks.\n" * 400
    )
    expect(page.locator(".gauge.over")).to_contain_text("over budget")
    page.get_by_role("button", name="Save profile").click()
    alert = page.get_by_role("alert").filter(has_text="Not saved (422)")
    expect(alert).to_contain_text("Shorten or delete some lines")
    expect(alert).not_to_contain_text("edit_profile")
    assert agent


def test_a_second_tab_follows_agents_created_renamed_and_deleted(
    browser: Browser, bare: Server, tabs: list[Tab]
) -> None:
    first = open_tab(tabs, browser, bare.url)
    second = open_tab(tabs, browser, bare.url)
    expect(second.get_by_role("heading", name="Agents")).to_be_visible()
    second.wait_for_timeout(300)  # its event stream is open
    name = create_agent(first)
    agents = second.get_by_role("navigation", name="Agents")
    expect(agents.get_by_role("link", name=name)).to_be_visible()
    agents.get_by_role("link", name=name).click()
    expect(second.get_by_role("heading", level=2, name=name)).to_be_visible()
    with httpx.Client(base_url=f"{bare.url}/api", trust_env=False) as api:
        api.patch(f"/agents/{name}", json={"name": f"{name}x"}).raise_for_status()
        expect(second.get_by_role("heading", level=2, name=f"{name}x")).to_be_visible()
        expect(
            first.get_by_role("navigation", name="Agents").get_by_role("link", name=f"{name}x")
        ).to_be_visible()
        api.delete(f"/agents/{name}x").raise_for_status()
    expect(agents.get_by_role("link", name=f"{name}x")).to_have_count(0)
    expect(second.get_by_text("Create or pick an agent.")).to_be_visible()


def test_the_settings_tab_sets_the_agents_upkeep_models(
    browser: Browser, bare: Server, tabs: list[Tab]
) -> None:
    page = open_tab(tabs, browser, bare.url)
    name = create_agent(page)
    page.get_by_role("tab", name="Settings").click()
    page.get_by_label("Compaction model (provider:model)").fill("ollama:llama3.1")
    page.get_by_label("Extraction model (provider:model)").fill("ollama:qwen2.5")
    page.get_by_role("button", name="Save settings").click()
    expect(page.locator(".result.ok")).to_contain_text("Saved")
    stored = httpx.get(f"{bare.url}/api/agents/{name}/settings", trust_env=False).json()
    assert (stored["compacting_model"], stored["extraction_model"]) == (
        "ollama:llama3.1",
        "ollama:qwen2.5",
    )
    page.get_by_label("Compaction model (provider:model)").fill("")
    with page.expect_response(lambda r: r.url.endswith("/settings") and r.request.method == "PUT"):
        page.get_by_role("button", name="Save settings").click()
    stored = httpx.get(f"{bare.url}/api/agents/{name}/settings", trust_env=False).json()
    assert stored["compacting_model"] is None and stored["extraction_model"] == "ollama:qwen2.5"


def test_the_settings_tab_sets_and_clears_the_context_window(
    browser: Browser, bare: Server, tabs: list[Tab]
) -> None:
    page = open_tab(tabs, browser, bare.url)
    name = create_agent(page)
    settings = f"{bare.url}/api/agents/{name}/settings"
    page.get_by_role("tab", name="Settings").click()
    window = page.get_by_label("Context window (tokens, for a model hivekeep does not know)")
    expect(window).to_have_value("")
    window.fill("32768")
    page.get_by_role("button", name="Save settings").click()
    expect(page.locator(".result.ok")).to_contain_text("Saved")
    assert httpx.get(settings, trust_env=False).json()["context_window_setting"] == 32768
    page.reload()
    page.get_by_role("tab", name="Settings").click()
    window = page.get_by_label("Context window (tokens, for a model hivekeep does not know)")
    expect(window).to_have_value("32768")
    window.fill("")
    with page.expect_response(lambda r: r.url.endswith("/settings") and r.request.method == "PUT"):
        page.get_by_role("button", name="Save settings").click()
    assert httpx.get(settings, trust_env=False).json()["context_window_setting"] is None
