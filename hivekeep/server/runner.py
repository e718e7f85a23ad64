"""Run the app with uvicorn, ending the open event streams first when asked to stop.

An SSE stream never ends by itself, and uvicorn waits for open requests before it stops; without
this, Ctrl+C with a browser tab open would wait out the grace period and cancel the stream with an
error in the log.
"""

from __future__ import annotations

import logging
import threading
from types import FrameType

import uvicorn

from hivekeep.hive import Hive
from hivekeep.logs import configure as configure_logging
from hivekeep.server.app import create_app
from hivekeep.server.events import EventStreams
from hivekeep.server.guard import allowed_hosts

log = logging.getLogger(__name__)

GRACEFUL_SHUTDOWN_S = 5  # the last resort, for a response stuck sending to a slow client


def model_note(hive: Hive) -> tuple[str, str | None]:
    """The start line's ``model: …`` part, and a warning line when that model cannot be used
    (its API key is missing): said at start, not at the first chat."""
    model, problem = hive.llm_status()
    if model is None:
        return "model: none (chat needs HIVEKEEP_LLM or an agent's model)", None
    if problem is None:
        return f"model: {model}", None
    return f"model: {model}, NOT USABLE", (
        f"the model {model} cannot be used: {problem} Chat and compaction fail until it is "
        "set; the web UI's Settings can give this server the key (kept in memory only)."
    )


def _resume(hive: Hive) -> None:
    try:
        outcome = hive.resume()
    except Exception:  # never take the server down; the next start tries again
        log.exception("Start-up upkeep failed")
        return
    log.info(
        "Start-up upkeep: bootstrap %s, %d maintenance batches run",
        "done" if outcome.bootstrap.done else "not done (retried next start)",
        len(outcome.maintenance),
    )


def _upkeep_wanted(hive: Hive) -> bool:
    """A model for upkeep: the hive's, or any agent's own (chat or extraction model)."""
    return hive.has_upkeep_model()


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, streams: EventStreams) -> None:
        super().__init__(config)
        self._streams = streams

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self._streams.close_all()
        super().handle_exit(sig, frame)


def run_server(hive: Hive, *, host: str, port: int, token: str | None = None) -> None:
    """Serve ``hive`` until interrupted (SIGINT / SIGTERM).

    The deferred start-up upkeep (bootstrap, maintenance left pending by a crash or an outage)
    runs in the background when a model is configured, hive-wide or for any agent, so the
    server answers at once.
    """
    hosts = allowed_hosts(port or None, bind_host=host, extra=hive.settings.allowed_hosts)
    app = create_app(hive, token=token, hosts=hosts)
    if _upkeep_wanted(hive):
        threading.Thread(target=_resume, args=(hive,), name="hivekeep-resume", daemon=True).start()
    configure_logging(hive.settings.log_format)  # HIVEKEEP_LOG_FORMAT: text or json
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
        log_config=None,  # uvicorn's lines go through our handler (and its format) too
        access_log=False,  # ``observe.Observe`` logs each request, without its query string
    )
    _Server(config, app.state.event_streams).run()
