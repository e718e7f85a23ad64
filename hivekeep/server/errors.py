"""One error shape for every failure: ``{"error": {"code": ..., "message": ...}}``.

Clients branch on ``code`` (stable, snake_case) and show ``message`` (a sentence that says what to
do). Library errors, request validation, unknown routes and unexpected failures all end here, so no
handler in a route module needs its own try/except, and no traceback ever reaches a client.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException

from hivekeep import LLMNotConfigured
from hivekeep.errors import (
    BudgetError,
    ConflictError,
    EmbedderMismatch,
    HiveBusy,
    HivekeepError,
    NotFound,
    ProviderError,
    StoreError,
    ValidationError,
)

log = logging.getLogger(__name__)

# Checked in order, so a subclass (BudgetError) comes before its parent (ValidationError).
LIBRARY_ERRORS: tuple[tuple[type[HivekeepError], int, str], ...] = (
    (BudgetError, 422, "over_budget"),  # 413 is only for a body over the size limit
    (LLMNotConfigured, 422, "llm_not_configured"),  # the server has no model: say what to set
    (ValidationError, 422, "validation_error"),
    (NotFound, 404, "not_found"),
    (ConflictError, 409, "conflict"),
    (EmbedderMismatch, 409, "embedder_mismatch"),
    (ProviderError, 502, "provider_error"),
    (HiveBusy, 503, "hive_busy"),  # retry: another process holds the write lock
    (StoreError, 500, "store_error"),
)
HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    413: "too_large",
    415: "unsupported_media_type",
    421: "misdirected_request",
    422: "validation_error",
}
MAX_PROBLEMS = 5  # a message names the first few problems; ``details`` lists them all


class ErrorDetail(BaseModel):
    code: str
    message: str
    details: list[dict[str, str]] | None = None


class ErrorOut(BaseModel):
    """The body of every error response."""

    error: ErrorDetail


# For the OpenAPI document: what every /api route may answer besides its success.
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorOut, "description": description}
    for status, description in (
        (401, "Missing or wrong bearer token (when the server has one)."),
        (404, "No such agent, memory or tool (or not visible to this agent)."),
        (422, "Invalid body, query or path parameter."),
    )
}


def error_response(
    status: int,
    code: str,
    message: str,
    *,
    details: list[dict[str, str]] | None = None,
    headers: Mapping[str, str] | None = None,
) -> JSONResponse:
    error: dict[str, Any] = {"code": code, "message": message}
    if details:
        error["details"] = details
    return JSONResponse({"error": error}, status_code=status, headers=headers)


def library_error(exc: HivekeepError) -> tuple[int, str]:
    """The HTTP status and stable code of a library error."""
    for kind, status, code in LIBRARY_ERRORS:
        if isinstance(exc, kind):
            return status, code
    return 400, "bad_request"


async def _on_library_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HivekeepError)
    status, code = library_error(exc)
    if status >= 500:
        log.error("%s %s failed: %s", request.method, request.url.path, exc)
    details = None
    if isinstance(exc, ValidationError):  # like the request model's 422s: one per bad field
        part = "body" if request.method in ("POST", "PUT", "PATCH") else "query"
        where = f"{part}.{exc.field}" if exc.field else part
        details = [{"field": where, "message": str(exc)}]
    message = str(exc)
    if isinstance(exc, BudgetError):  # a person's edit (a tool's comes back as tool_error)
        message = exc.for_people
        details = [{"field": "body.text", "message": message}]
    headers = {"Retry-After": "5"} if isinstance(exc, HiveBusy) else None
    return error_response(status, code, message, details=details, headers=headers)


def describe_validation(errors: list[dict[str, Any]]) -> tuple[str, list[dict[str, str]]]:
    """A sentence naming each bad field (``body.content``, ``query.limit``), and the list."""
    details = []
    for error in errors:
        where = ".".join(str(part) for part in error.get("loc", ())) or "request"
        if error.get("type") == "json_invalid":  # loc is ("body", character position)
            where = "body"
            reason = error.get("ctx", {}).get("error")
            message = f"is not valid JSON ({reason})" if reason else "is not valid JSON"
        elif error.get("type") == "extra_forbidden":
            message = "is not an accepted field"
        elif error.get("type") == "missing":
            message = "is required"
        else:
            text = str(error.get("msg", "is invalid"))
            message = text[:1].lower() + text[1:]
        details.append({"field": where, "message": message})
    listed = "; ".join(f"'{d['field']}' {d['message']}" for d in details[:MAX_PROBLEMS])
    more = len(details) - MAX_PROBLEMS
    suffix = f" (and {more} more)" if more > 0 else ""
    return f"Invalid request: {listed}{suffix}. See /docs for the accepted fields.", details


async def _on_request_validation(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    message, details = describe_validation(list(exc.errors()))
    return error_response(422, "validation_error", message, details=details)


async def _on_http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    code = HTTP_CODES.get(exc.status_code, "http_error")
    if exc.status_code == 404 and exc.detail == "Not Found":
        message = f"No route {request.method} {request.url.path}; the API is listed at /docs."
    elif exc.status_code == 405:
        message = f"{request.method} is not allowed on {request.url.path}; see /docs."
    else:
        message = str(exc.detail)
    return error_response(exc.status_code, code, message, headers=exc.headers)


async def _on_unexpected(request: Request, exc: Exception) -> JSONResponse:
    # Starlette re-raises the exception after this response, so the server logs the traceback.
    return error_response(
        500, "internal_error", "The server failed unexpectedly; the details are in its log."
    )


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(HivekeepError, _on_library_error)
    app.add_exception_handler(RequestValidationError, _on_request_validation)
    app.add_exception_handler(HTTPException, _on_http_error)
    app.add_exception_handler(Exception, _on_unexpected)
