"""The SQLite vector cache's default budget (``vector_cache.py``), apart from the cache so that
``config`` reads it without importing numpy."""

from __future__ import annotations

# MiB. 1M 384-d vectors are 1.5 GB: the budget holds about 600k of them, with their ids and
# filter columns; one agent holding more still has its matrix (a search keeps its own).
DEFAULT_BUDGET_MB = 1024
