"""Tell the pages about writes made by other processes (``hivekeep memorize`` while the UI is open).

The server's own writes are published on the hive's bus as they happen; another process's are not.
While the app runs, ``watch_hive`` polls ``Hive.data_version`` (SQLite's ``PRAGMA data_version``:
it changes only when another connection commits) every ``WATCH_S`` seconds and publishes one
``hive:changed`` event (no agent, no data) when it moved: the web UI refreshes its agent list, the
open agent's archive and its profile. On PostgreSQL (``None``) nothing is polled: the event relay
already carries other servers' events.
"""

from __future__ import annotations

import asyncio
import logging

from starlette.concurrency import run_in_threadpool

from hivekeep import Hive

log = logging.getLogger(__name__)

WATCH_S = 1.0


async def watch_hive(hive: Hive, every_s: float = WATCH_S) -> None:
    """Runs until cancelled; a failed poll (the file busy, say) is retried at the next tick."""
    seen = await run_in_threadpool(hive.data_version)
    if seen is None:
        return
    while True:
        await asyncio.sleep(every_s)
        try:
            now = await run_in_threadpool(hive.data_version)
        except Exception as exc:  # never end the watch: the next tick tries again
            log.warning("Watching the hive for other processes' writes: %s", exc)
            continue
        if now != seen:
            seen = now
            hive.events.publish("hive:changed", None)
