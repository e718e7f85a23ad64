"""Run the app with uvicorn, ending the open event streams first when asked to stop.

An SSE stream never ends by itself, and uvicorn waits for open requests before it stops; without
this, Ctrl+C with a browser tab open would wait out the grace period and cancel the stream with an
error in the log.
"""

from __future__ import annotations

from types import FrameType

import uvicorn

from hivekeep.hive import Hive
from hivekeep.server.app import create_app
from hivekeep.server.events import EventStreams

GRACEFUL_SHUTDOWN_S = 5  # the last resort, for a response stuck sending to a slow client


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, streams: EventStreams) -> None:
        super().__init__(config)
        self._streams = streams

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self._streams.close_all()
        super().handle_exit(sig, frame)


def run_server(hive: Hive, *, host: str, port: int, token: str | None = None) -> None:
    """Serve ``hive`` until interrupted (SIGINT / SIGTERM)."""
    app = create_app(hive, token=token)
    config = uvicorn.Config(
        app, host=host, port=port, timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S, log_level="info"
    )
    _Server(config, app.state.event_streams).run()
