"""The MCP server: one agent's seven memory tools and its profile, for any MCP host.

A thin adapter over ``hivekeep.tools``: the tool list is ``tool_schemas("mcp")`` and every call
goes through ``agent.call_tool``, so schemas, validation and error messages exist once. A result
``{"error": ...}`` becomes a tool error (``isError``), which the model sees and can correct. The
profile is a resource read fresh on every request, and is also in the server ``instructions`` (as
of start), so hosts that inject instructions give the model its profile without a resource read.

Built on the official SDK's low-level ``Server`` (not ``MCPServer``): ``MCPServer`` derives schemas
from Python signatures, while these tools already have theirs.
"""

from __future__ import annotations

import functools
import json
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote

import anyio.to_thread
from mcp import types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hivekeep.errors import HivekeepError
from hivekeep.tools import READ_ONLY_TOOLS, TOOLS_BY_NAME, tool_schemas

if TYPE_CHECKING:
    from hivekeep import Access
    from hivekeep.agent import Agent

T = TypeVar("T")

SERVER_NAME = "hivekeep"
HTTP_HOST = "127.0.0.1"  # the HTTP transport is for this machine only (tokens: ``TokenGate``)
HTTP_PATH = "/mcp"
PROFILE_MIME_TYPE = "text/markdown"


def profile_uri(agent: Agent) -> str:
    """The profile resource's URI, e.g. ``hivekeep://agents/assistant/profile``."""
    return f"hivekeep://agents/{quote(agent.name, safe='')}/profile"


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("hivekeep")
    except PackageNotFoundError:  # a source checkout that was never installed
        return "0"


REMEMBER_TOOL = "remember"
REMEMBER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "text": {"type": "string", "description": "What to remember, as one user message."},
        "messages": {
            "type": "array",
            "description": "Messages in OpenAI's form: {role, content}, oldest first.",
            "items": {"type": "object"},
        },
    },
}
REMEMBER_DESCRIPTION = (
    "Extract memories now from a text or messages (one maintenance call of the host's model): "
    "new facts are added to the archive, known ones left alone, the profile updated. Answers "
    "what was added, reworded or left alone. Not one of the memory tools a model calls in a "
    "turn: the host's way to say 'remember this conversation'."
)


def _remember(agent: Agent, arguments: dict[str, Any] | None) -> dict[str, Any]:
    """The MCP-only ``remember`` tool: ``agent.remember`` over ``text`` or ``messages``."""
    given = arguments or {}
    text, messages = given.get("text"), given.get("messages")
    if set(given) - {"text", "messages"} or not (
        (isinstance(text, str) and messages is None)
        or (isinstance(messages, list) and text is None)
    ):
        return {"error": "remember takes either 'text' (a string) or 'messages' (a list)."}
    try:
        answer = agent.remember(text if isinstance(text, str) else messages or [])
    except HivekeepError as exc:
        return {"error": str(exc)}
    if answer.error is not None:  # kept and retried later, but this call did not remember
        return {"error": f"The maintenance call failed (it will be retried): {answer.error}"}
    return {key: value for key, value in answer.to_json().items() if key != "error"}


def build_server(agent: Agent) -> Server[Any]:
    """An MCP server acting as ``agent``; ``instructions`` hold its memory block as of now."""
    tools = [types.Tool.model_validate(schema) for schema in tool_schemas("mcp")]
    tools.append(
        types.Tool(
            name=REMEMBER_TOOL, description=REMEMBER_DESCRIPTION, input_schema=REMEMBER_SCHEMA
        )
    )
    uri = profile_uri(agent)
    # The hive is synchronous (SQLite, the ONNX embedder): calls run in worker threads so the event
    # loop keeps serving, one at a time so concurrent sessions cannot interleave a dedup check and
    # its write.
    lock = threading.Lock()

    async def run_locked(function: Callable[[], T]) -> T:
        def locked() -> T:
            with lock:
                return function()

        return await anyio.to_thread.run_sync(locked)

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if params.name == REMEMBER_TOOL:
            call = functools.partial(_remember, agent, params.arguments)
        else:
            call = functools.partial(agent.call_tool, params.name, params.arguments)
        result = await run_locked(call)
        if "error" in result:
            return types.CallToolResult(
                content=[types.TextContent(text=str(result["error"]))], is_error=True
            )
        text = json.dumps(result, ensure_ascii=False)
        return types.CallToolResult(
            content=[types.TextContent(text=text)], structured_content=result
        )

    async def list_resources(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        profile = types.Resource(
            uri=uri,
            name="profile",
            title=f"Profile of {agent.name}",
            description="The agent's profile: the document that belongs in its system prompt.",
            mime_type=PROFILE_MIME_TYPE,
        )
        return types.ListResourcesResult(resources=[profile])

    async def read_resource(
        ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        if params.uri != uri:
            raise MCPError(types.INVALID_PARAMS, f"Unknown resource {params.uri!r}; try {uri!r}.")
        text = await run_locked(agent.profile_text)
        contents = types.TextResourceContents(uri=uri, mime_type=PROFILE_MIME_TYPE, text=text)
        return types.ReadResourceResult(contents=[contents])

    def input_schema(name: str) -> dict[str, Any] | None:
        if name == REMEMBER_TOOL:
            return REMEMBER_SCHEMA
        tool = TOOLS_BY_NAME.get(name)
        return tool.input_schema() if tool else None

    return Server(
        SERVER_NAME,
        version=_version(),
        title=f"hivekeep memory of {agent.name}",
        instructions=agent.system_prompt_block(),
        get_tool_input_schema=input_schema,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )


def serve_stdio(agent: Agent) -> None:
    """Serve ``agent`` over stdin/stdout until the host closes stdin."""
    server = build_server(agent)

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(main)


class TokenGate:
    """The bearer-token rules of ``hivekeep serve`` in front of the MCP HTTP transport.

    Each request is checked against the hive (``Authenticate``: ``hive.tokens.authenticate``,
    so a revoked token is refused at once): 401 without a valid token (when the hive needs one),
    403 for a token that does not act as this agent, and 403 for a read-only token's call of a
    tool that changes something (the JSON-RPC body is read to tell, up to ``MAX_BODY`` bytes).

    A request in progress (a session's event stream, ``GET /mcp``, or a long call) is checked
    again every ``RECHECK_S`` seconds, and ended as soon as its token is revoked or the agent is
    deleted (``authenticate`` answers otherwise than it did): no session outlives its right.
    """

    MAX_BODY = 1024 * 1024
    RECHECK_S = 1.0

    def __init__(self, app: ASGIApp, agent_id: int, authenticate: Authenticate) -> None:
        self.app = app
        self.agent_id = agent_id
        self.authenticate = authenticate

    def recheck(self, bearer: str | None) -> Access | None:
        return self.authenticate(bearer, record_use=False)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        header = Headers(scope=scope).get("authorization", "")
        scheme, _, credentials = header.partition(" ")
        bearer = credentials.strip() if scheme.lower() == "bearer" and credentials else None
        access = await anyio.to_thread.run_sync(self.authenticate, bearer)
        if access is None:
            await _refusal(401, "A valid bearer token is needed (wrong, or revoked).")(
                scope, receive, send
            )
            return
        if not access.sees(self.agent_id):
            await _refusal(403, "This token does not act as this agent.")(scope, receive, send)
            return
        if access.read_only and scope["method"] == "POST":
            body = await _read_body(receive, self.MAX_BODY)
            if _calls_a_writing_tool(body):
                await _refusal(403, "This token is read-only: it may recall, not change.")(
                    scope, receive, send
                )
                return
            receive = _replay(body, receive)
        await self._while_allowed(bearer, access, scope, receive, send)

    async def _while_allowed(
        self, bearer: str | None, access: Access, scope: Scope, receive: Receive, send: Send
    ) -> None:
        state = {"started": False, "ended": False}

        async def tracked(message: Message) -> None:
            if message["type"] == "http.response.start":
                state["started"] = True
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                state["ended"] = True
            await send(message)

        async with anyio.create_task_group() as group:

            async def watch() -> None:
                while True:
                    await anyio.sleep(self.RECHECK_S)
                    again = await anyio.to_thread.run_sync(self.recheck, bearer)
                    if again != access:
                        group.cancel_scope.cancel()
                        return

            group.start_soon(watch)
            await self.app(scope, receive, tracked)
            group.cancel_scope.cancel()
        if not state["started"]:  # ended before answering: the token went meanwhile
            await _refusal(401, "The token was revoked, or the agent deleted.")(
                scope, receive, send
            )
        elif not state["ended"]:  # end the stream cleanly rather than drop the connection
            await send({"type": "http.response.body", "body": b"", "more_body": False})


Authenticate = Callable[..., "Access | None"]
"""Who a bearer token (None: none) acts as, or None: refused; ``record_use=False`` for a
re-check (``hive.tokens.authenticate`` with the server's admin token bound)."""


def _refusal(status: int, message: str) -> JSONResponse:
    code = "unauthorized" if status == 401 else "forbidden"
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse({"error": {"code": code, "message": message}}, status, headers=headers)


async def _read_body(receive: Receive, limit: int) -> bytes:
    body = b""
    while True:
        message = await receive()
        body += bytes(message.get("body", b""))
        if not message.get("more_body") or len(body) > limit:
            return body


def _replay(body: bytes, receive: Receive) -> Receive:
    """The body already read, then the client's own messages (its disconnect, when it leaves)."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replayed


def _calls_a_writing_tool(body: bytes) -> bool:
    """Whether a JSON-RPC message (or batch) calls a tool outside ``READ_ONLY_TOOLS``; a body
    that cannot be read counts as one (refused rather than guessed)."""
    try:
        parsed = json.loads(body)
    except ValueError:
        return True
    messages = parsed if isinstance(parsed, list) else [parsed]
    for message in messages:
        if not isinstance(message, dict):
            return True
        if message.get("method") == "tools/call":
            params = message.get("params")
            name = params.get("name") if isinstance(params, dict) else None
            if name not in READ_ONLY_TOOLS:
                return True
    return False


def serve_http(
    agent: Agent, port: int, authenticate: Authenticate, log_format: str = "text"
) -> None:
    """Serve ``agent`` over streamable HTTP at ``http://127.0.0.1:PORT/mcp`` until interrupted;
    ``authenticate`` tells who a request's bearer token (None: none) acts as, or None: refused.
    Warnings and errors are logged in ``log_format`` (``HIVEKEEP_LOG_FORMAT``)."""
    import uvicorn

    from hivekeep.logs import configure

    app = build_server(agent).streamable_http_app(streamable_http_path=HTTP_PATH, host=HTTP_HOST)
    gated = TokenGate(app, agent.id, authenticate)
    configure(log_format, logging.WARNING)
    uvicorn.run(gated, host=HTTP_HOST, port=port, log_config=None, log_level="warning")
