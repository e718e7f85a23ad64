"""The process's Prometheus metrics, every name starting ``hivekeep_`` (docs/server.md, "Metrics").

A leaf, like ``events.py``: the services and the store record into these objects (one line where
the work happens), and the server renders them at ``/metrics``. They live in a registry of their
own, not ``prometheus_client``'s global one, so a host application's metrics never mix in. Labels
are bounded sets (route templates, arm and outcome names), never an agent name or an id.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Iterator, Sized
from contextlib import contextmanager

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

REGISTRY = CollectorRegistry(auto_describe=True)
# seconds: recall arms take about a millisecond, an LLM-backed compaction tens of seconds
FAST = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
SLOW = (0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)

HTTP_REQUESTS = Counter(
    "hivekeep_http_requests",
    "HTTP requests answered, by method, route template and status.",
    ["method", "route", "status"],
    registry=REGISTRY,
)
HTTP_SECONDS = Histogram(
    "hivekeep_http_request_duration_seconds",
    "Time to answer an HTTP request (to the end of the body; a stream's whole life).",
    ["method", "route", "status"],
    buckets=FAST[1:] + SLOW[4:],
    registry=REGISTRY,
)
RECALL_SECONDS = Histogram(
    "hivekeep_recall_arm_duration_seconds",
    "Time of each part of a recall: vector (embedding the query and the search), full_text, "
    "subject (the subject bonus), fusion.",
    ["arm"],
    buckets=FAST,
    registry=REGISTRY,
)
MEMORIZED = Counter(
    "hivekeep_memorize",
    "Memories written, by outcome: stored, duplicate (an equivalent one existed), reworded "
    "(merged into the writer's memory of the same fact, whose text it became), "
    "pending_embedding (stored; the embedder failed, a backfill adds its vector).",
    ["outcome"],
    registry=REGISTRY,
)
MAINTENANCE = Counter(
    "hivekeep_maintenance_runs",
    "Maintenance runs (the LLM pass over summarised batches), by outcome: done, failed.",
    ["outcome"],
    registry=REGISTRY,
)
MAINTENANCE_SECONDS = Histogram(
    "hivekeep_maintenance_duration_seconds",
    "Time of a maintenance run.",
    buckets=SLOW,
    registry=REGISTRY,
)
COMPACTION = Counter(
    "hivekeep_compaction_runs",
    "Compaction runs, by outcome: done, nothing (nothing to fold), error.",
    ["outcome"],
    registry=REGISTRY,
)
COMPACTION_SECONDS = Histogram(
    "hivekeep_compaction_duration_seconds",
    "Time of a compaction run, its maintenance included.",
    buckets=SLOW,
    registry=REGISTRY,
)
EVENT_SUBSCRIBERS = Gauge(
    "hivekeep_event_stream_subscribers",
    "Open event streams (GET /api/events).",
    registry=REGISTRY,
)
VECTOR_CACHE = Gauge(
    "hivekeep_vector_cache_vectors",
    "Vectors held by the in-process vector caches of the open SQLite hives.",
    registry=REGISTRY,
)

_caches: weakref.WeakSet[Sized] = weakref.WeakSet()
VECTOR_CACHE.set_function(lambda: float(sum(len(cache) for cache in list(_caches))))


def track_vector_cache(cache: Sized) -> None:
    """Count ``cache`` in ``hivekeep_vector_cache_vectors`` for as long as it lives."""
    _caches.add(cache)


@contextmanager
def timed(histogram: Histogram, **labels: str) -> Iterator[None]:
    """Observe the block's duration (also when it raises)."""
    start = time.perf_counter()
    try:
        yield
    finally:
        target = histogram.labels(**labels) if labels else histogram
        target.observe(time.perf_counter() - start)


def render() -> tuple[bytes, str]:
    """The metrics in the Prometheus text format, and its content type."""
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST
