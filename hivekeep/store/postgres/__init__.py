"""The server backend: PostgreSQL with pgvector (vectors, HNSW) and tsvector + GIN (full text)."""

from hivekeep.store.postgres.store import PostgresStore
from hivekeep.store.target import is_postgres_url

__all__ = ["PostgresStore", "is_postgres_url"]
