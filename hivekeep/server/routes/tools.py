"""The seven memory tools over HTTP: exactly what a model gets from ``call_tool``.

A tool's result is returned as is (200). A tool error (bad arguments, unknown memory, ...) is
answered 422 with the usual error shape and code ``tool_error``, its message being the very text a
model would read, so HTTP clients see a failure as a failure.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Path
from fastapi.responses import JSONResponse

from hivekeep.errors import NotFound
from hivekeep.server.deps import AgentDep
from hivekeep.server.errors import ErrorOut, error_response
from hivekeep.server.schemas import ToolList, ToolOut
from hivekeep.tools import TOOLS, TOOLS_BY_NAME, call_tool

router = APIRouter(tags=["tools"])


@router.get("/tools")
def list_tools() -> ToolList:
    """Each tool's name, description and JSON Schema of its arguments."""
    return ToolList(
        tools=[
            ToolOut(name=t.name, description=t.description, input_schema=t.input_schema())
            for t in TOOLS
        ]
    )


@router.post(
    "/agents/{agent}/tools/{tool}",
    responses={422: {"model": ErrorOut, "description": "The tool refused: code 'tool_error'."}},
)
def run_tool(
    agent: AgentDep,
    tool: Annotated[str, Path(max_length=64, description="A tool name, e.g. 'recall'.")],
    arguments: Annotated[
        dict[str, Any] | None,
        Body(max_length=20, description="The tool's arguments (see GET /api/tools)."),
    ] = None,
) -> JSONResponse:
    """Call a tool as this agent, with the JSON body as its arguments."""
    if tool not in TOOLS_BY_NAME:
        raise NotFound(f"No tool {tool!r}; the tools are: {', '.join(TOOLS_BY_NAME)}.")
    result = call_tool(agent, tool, arguments or {})
    if "error" in result:
        return error_response(422, "tool_error", str(result["error"]))
    return JSONResponse(result)
