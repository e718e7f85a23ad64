"""Log output of the servers: plain text, or one JSON object a line (``HIVEKEEP_LOG_FORMAT``).

A JSON line holds ``time``, ``level``, ``logger``, ``message``, ``agent`` and ``request_id``
(null outside a request): the server's request middleware sets the last two in context variables,
which reach the worker threads its routes run in. Memory text is never logged at INFO or above:
messages name memories by id, and the access line carries the path without its query string (a
recall's query is the user's words). No URL is logged with its credentials: a filter on the
handler shows every URL as ``hivekeep.redact`` does, and httpx's line for every request (with the
model's base URL) is not logged at all (its logger is set to WARNING).
"""

from __future__ import annotations

import json
import logging
from contextvars import ContextVar
from datetime import UTC, datetime

from hivekeep.redact import redact_urls

REQUEST_ID: ContextVar[str | None] = ContextVar("hivekeep_request_id", default=None)
AGENT: ContextVar[str | None] = ContextVar("hivekeep_agent", default=None)
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


QUIET = ("httpx", "httpx2", "httpcore", "httpcore2")  # a line per model call, with its URL


class RedactUrls(logging.Filter):
    """Every record's message with its URLs' users, passwords and query strings hidden."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = redact_urls(message)
        if redacted != message:
            record.msg, record.args = redacted, None
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object a line; an exception's traceback goes in ``exception``."""

    def format(self, record: logging.LogRecord) -> str:
        line = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "agent": AGENT.get(),
            "request_id": REQUEST_ID.get(),
        }
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)


def configure(log_format: str, level: int = logging.INFO) -> None:
    """Route every logger (uvicorn's too) through one stderr handler in ``log_format``."""
    handler = logging.StreamHandler()
    handler.setFormatter(
        JsonFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT)
    )
    handler.addFilter(RedactUrls())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).handlers[:] = []  # theirs would print a second, unformatted line
        logging.getLogger(name).propagate = True
    for name in QUIET:
        logging.getLogger(name).setLevel(max(level, logging.WARNING))
