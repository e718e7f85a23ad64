"""The embedded backend: one SQLite file with sqlite-vec (vectors) and FTS5 (full text)."""

from hivekeep.store.sqlite.store import SQLiteStore
from hivekeep.store.sqlite.vectors import encode_vector

__all__ = ["SQLiteStore", "encode_vector"]
