"""PostgreSQL schema migrations: numbered, ordered functions, each applied with its record.

Everything lives in the connection's current schema (the first of its ``search_path``), so one
database can hold several hives, one per schema. The ``vector`` extension is database-wide; it is
created when missing (which needs the right to create extensions) and must sit in a schema on the
``search_path`` (``public`` by default).

The vector column is made without a dimension here: the dimension belongs to the embedding model,
so ``PostgresStore.reset_embedding_space`` retypes it (and builds the HNSW index) when the hive
first meets, or changes, its embedder.
"""

from __future__ import annotations

import re

import psycopg
from psycopg import sql
from psycopg.rows import TupleRow

from hivekeep.errors import StoreError
from hivekeep.store.postgres.dialect import POSTGRES
from hivekeep.store.postgres.fulltext import SPLIT_PUNCTUATION
from hivekeep.store.spoken_dates import month_cases
from hivekeep.store.sql.dialect import Session
from hivekeep.store.sql.migrate import Migration, apply_pending

# Latin letters with diacritics and the letter they fold to (NFKD base), as FTS5's
# ``remove_diacritics 2`` does; then the ASCII punctuation that PostgreSQL's parser would glue into
# one token (hosts, e-mails, paths, versions, hyphenated words), turned into spaces so words split
# as FTS5's unicode61 tokenizer splits them. A literal: a migration never changes once released.
_FOLD_FROM = (
    "ÀÁÂÃÄÅÇÈÉÊËÌÍÎÏÑÒÓÔÕÖÙÚÛÜÝàáâãäåçèéêëìíîïñòóôõöùúûüýÿĀāĂăĄąĆćĈĉĊċČčĎďĒēĔĕĖėĘęĚěĜĝĞğĠġĢģĤĥĨĩ"
    "ĪīĬĭĮįİĴĵĶķĹĺĻļĽľŃńŅņŇňŌōŎŏŐőŔŕŖŗŘřŚśŜŝŞşŠšŢţŤťŨũŪūŬŭŮůŰűŲųŴŵŶŷŸŹźŻżŽžƠơƯưǍǎǏǐǑǒǓǔǕǖǗǘǙǚǛǜǞǟ"
    "ǠǡǦǧǨǩǪǫǬǭǰǴǵǸǹǺǻȀȁȂȃȄȅȆȇȈȉȊȋȌȍȎȏȐȑȒȓȔȕȖȗȘșȚțȞȟȦȧȨȩȪȫȬȭȮȯȰȱȲȳ"
)
_FOLD_TO = (
    "AAAAAACEEEEIIIINOOOOOUUUUYaaaaaaceeeeiiiinooooouuuuyyAaAaAaCcCcCcCcDdEeEeEeEeEeGgGgGgGgHhIi"
    "IiIiIiIJjKkLlLlLlNnNnNnOoOoOoRrRrRrSsSsSsSsTtTtUuUuUuUuUuUuWwYyYZzZzZzOoUuAaIiOoUuUuUuUuUuAa"
    "AaGgKkOoOojGgNnAaAaAaEeEeIiIiOoOoRrRrUuUuSsTtHhAaEeOoOoOoOoYy"
)
Connection = psycopg.Connection[TupleRow]
MIN_PGVECTOR = (0, 8)  # iterative index scans


def _literal(text: str) -> str:
    """A SQL string literal (standard_conforming_strings: only quotes are doubled)."""
    return "'" + text.replace("'", "''") + "'"


def m001_initial(conn: Connection) -> None:
    fold_from = _FOLD_FROM + SPLIT_PUNCTUATION
    fold_to = _FOLD_TO + " " * len(SPLIT_PUNCTUATION)
    assert len(fold_from) == len(fold_to)
    months = month_cases()
    statements = [
        'CREATE TABLE meta (key text COLLATE "C" PRIMARY KEY, value text NOT NULL)',
        """CREATE TABLE agents (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            name text NOT NULL,
            role text NOT NULL DEFAULT '',
            created_at text COLLATE "C" NOT NULL,
            updated_at text COLLATE "C" NOT NULL
        )""",
        "CREATE UNIQUE INDEX agents_name ON agents (lower(name))",
        """CREATE TABLE profiles (
            agent_id bigint PRIMARY KEY REFERENCES agents(id) ON DELETE CASCADE,
            text text NOT NULL DEFAULT '',
            tokens integer NOT NULL DEFAULT 0,
            revision integer NOT NULL DEFAULT 0,
            last_rewrite_at text COLLATE "C",
            manually_edited_at text COLLATE "C",
            created_at text COLLATE "C" NOT NULL,
            updated_at text COLLATE "C" NOT NULL
        )""",
        # Full text: FTS5's "porter unicode61 remove_diacritics 2" as closely as PostgreSQL goes:
        # the Snowball English stemmer with no stopword list (FTS5 indexes every word), over text
        # whose diacritics are folded and whose token-gluing punctuation is split.
        "CREATE TEXT SEARCH DICTIONARY hivekeep_stem (TEMPLATE = snowball, Language = english)",
        "CREATE TEXT SEARCH CONFIGURATION hivekeep_fts (COPY = english)",
        """ALTER TEXT SEARCH CONFIGURATION hivekeep_fts
            ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, word, hword, hword_part
            WITH hivekeep_stem""",
        f"""CREATE FUNCTION hivekeep_fts_text(body text) RETURNS text
            LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
            RETURN translate(body, {_literal(fold_from)}, {_literal(fold_to)})""",
        f"""CREATE FUNCTION hivekeep_spoken_date(stamp text) RETURNS text
            LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
            RETURN ltrim(substr(stamp, 9, 2), '0') || ' '
                || CASE substr(stamp, 6, 2) {months} ELSE '' END || ' ' || substr(stamp, 1, 4)""",
        """CREATE FUNCTION hivekeep_fts_document(
                content text, subject text, source_context text, created_at text
            ) RETURNS tsvector
            LANGUAGE sql IMMUTABLE PARALLEL SAFE
            RETURN to_tsvector('hivekeep_fts'::regconfig, hivekeep_fts_text(
                coalesce(content, '') || ' ' || coalesce(subject, '') || ' '
                || coalesce(source_context, '') || ' '
                || coalesce(hivekeep_spoken_date(created_at), '')))""",
        # One search term as a quoted prefix query: never tsquery syntax, whatever it holds.
        """CREATE FUNCTION hivekeep_prefix_query(term text) RETURNS tsquery
            LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
            RETURN to_tsquery('hivekeep_fts'::regconfig, '''' || replace(replace(
                btrim(hivekeep_fts_text(term)), '\\', '\\\\'), '''', '''''') || ''':*')""",
        # id: an identity never reused, so a forgotten memory's id never names a new memory.
        """CREATE TABLE memories (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            agent_id bigint NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            author_name text NOT NULL,
            content text NOT NULL,
            text_key text NOT NULL,
            category text NOT NULL
                CHECK (category IN ('fact', 'preference', 'decision', 'knowledge')),
            subject text,
            subject_key text NOT NULL DEFAULT '',
            importance integer CHECK (importance BETWEEN 1 AND 10),
            scope text NOT NULL DEFAULT 'private' CHECK (scope IN ('private', 'shared')),
            source_context text,
            source text NOT NULL DEFAULT 'explicit' CHECK (source IN ('explicit', 'automatic')),
            source_message_id bigint,
            retrieval_count integer NOT NULL DEFAULT 0,
            last_retrieved_at text COLLATE "C",
            embedding_state text NOT NULL DEFAULT 'pending'
                CHECK (embedding_state IN ('ready', 'pending')),
            embedding_model text,
            embedding vector,
            created_at text COLLATE "C" NOT NULL,
            updated_at text COLLATE "C" NOT NULL,
            fts tsvector GENERATED ALWAYS AS
                (hivekeep_fts_document(content, subject, source_context, created_at)) STORED
        )""",
        "CREATE INDEX memories_agent_created ON memories (agent_id, created_at)",
        "CREATE INDEX memories_shared_created ON memories (scope, created_at)",
        "CREATE INDEX memories_text_key ON memories (text_key)",
        "CREATE INDEX memories_pending ON memories (id) WHERE embedding_state = 'pending'",
        "CREATE INDEX memories_fts ON memories USING gin (fts)",
        """CREATE TABLE agent_settings (
            agent_id bigint PRIMARY KEY REFERENCES agents(id) ON DELETE CASCADE,
            settings jsonb NOT NULL DEFAULT '{}'
        )""",
        """CREATE TABLE conversations (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            agent_id bigint NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            title text NOT NULL DEFAULT '',
            created_at text COLLATE "C" NOT NULL,
            updated_at text COLLATE "C" NOT NULL
        )""",
        "CREATE INDEX conversations_agent ON conversations (agent_id, id)",
        """CREATE TABLE summaries (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            conversation_id bigint NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
            agent_id bigint NOT NULL,
            text text NOT NULL,
            first_message_id bigint,
            last_message_id bigint,
            first_at text COLLATE "C" NOT NULL,
            last_at text COLLATE "C" NOT NULL,
            message_count integer NOT NULL,
            tokens integer NOT NULL,
            depth integer NOT NULL DEFAULT 0,
            source_ids bigint[] NOT NULL DEFAULT '{}',
            in_context boolean NOT NULL DEFAULT true,
            maintenance_status text NOT NULL DEFAULT 'pending'
                CHECK (maintenance_status IN ('pending', 'done', 'failed')),
            maintenance_attempts integer NOT NULL DEFAULT 0,
            maintenance_error text,
            created_at text COLLATE "C" NOT NULL
        )""",
        "CREATE INDEX summaries_context ON summaries (conversation_id, in_context)",
        """CREATE INDEX summaries_maintenance ON summaries (agent_id, maintenance_status)
            WHERE maintenance_status != 'done'""",
        """CREATE TABLE messages (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            conversation_id bigint NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
            role text NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
            content text NOT NULL DEFAULT '',
            tool_calls jsonb,
            tool_call_id text,
            tool_name text,
            speaker text,
            tokens integer NOT NULL DEFAULT 0,
            summary_id bigint REFERENCES summaries(id),
            is_compaction_record boolean NOT NULL DEFAULT false,
            record jsonb,
            created_at text COLLATE "C" NOT NULL
        )""",
        "CREATE INDEX messages_raw ON messages (conversation_id, id) WHERE summary_id IS NULL",
        "CREATE INDEX messages_summary ON messages (summary_id)",
        # Who holds a lease, for the refusal message; the lock itself is an advisory lock.
        """CREATE TABLE leases (
            name text PRIMARY KEY,
            holder text NOT NULL,
            expires_at double precision NOT NULL
        )""",
    ]
    for statement in statements:
        conn.execute(statement)  # our own fixed text


def m002_memories_outlive_authors(conn: Connection) -> None:
    """Shared memories outlive their author: ``agent_id`` NULL means "author deleted".

    Deleting an agent deletes its private memories and sets ``agent_id`` NULL on its shared ones
    (``author_name`` keeps the name), so no agent, not even a new one with the same name, owns
    them. A memory with no owner must be shared (CHECK).
    """
    constraint = conn.execute(
        "SELECT conname FROM pg_constraint WHERE conrelid = 'memories'::regclass AND contype = 'f'"
    ).fetchone()
    assert constraint is not None  # m001 made it
    for statement in (
        sql.SQL("ALTER TABLE memories DROP CONSTRAINT {}").format(sql.Identifier(constraint[0])),
        sql.SQL("ALTER TABLE memories ALTER COLUMN agent_id DROP NOT NULL"),
        sql.SQL(
            "ALTER TABLE memories ADD CONSTRAINT memories_agent_id_fkey FOREIGN KEY (agent_id) "
            "REFERENCES agents(id) ON DELETE SET NULL"
        ),
        sql.SQL(
            "ALTER TABLE memories ADD CONSTRAINT memories_owner_or_shared "
            "CHECK (agent_id IS NOT NULL OR scope = 'shared')"
        ),
    ):
        conn.execute(statement)


def m003_history_and_trash(conn: Connection) -> None:
    """Nothing is overwritten: versions of memories and profiles, and a trash for memories.

    As SQLite's migration 6: ``memory_versions`` holds each state of a changed memory,
    ``memory_trash`` forgotten memories whole (their vector in a dimensionless ``vector`` column),
    out of ``memories`` and so out of every index and read, ``profile_versions`` each revision.
    """
    for statement in (
        """CREATE TABLE memory_versions (
            memory_id bigint NOT NULL,
            version integer NOT NULL,
            content text NOT NULL,
            category text NOT NULL,
            subject text,
            importance integer,
            scope text NOT NULL,
            changed_at text COLLATE "C" NOT NULL,
            changed_by text NOT NULL,
            operation text NOT NULL,
            PRIMARY KEY (memory_id, version)
        )""",
        """CREATE TABLE memory_trash (
            id bigint PRIMARY KEY,
            agent_id bigint,
            author_name text NOT NULL,
            content text NOT NULL,
            text_key text NOT NULL,
            category text NOT NULL,
            subject text,
            subject_key text NOT NULL DEFAULT '',
            importance integer,
            scope text NOT NULL,
            source_context text,
            source text NOT NULL,
            source_message_id bigint,
            retrieval_count integer NOT NULL,
            last_retrieved_at text COLLATE "C",
            embedding_state text NOT NULL,
            embedding_model text,
            embedding vector,
            created_at text COLLATE "C" NOT NULL,
            updated_at text COLLATE "C" NOT NULL,
            deleted_at text COLLATE "C" NOT NULL,
            deleted_by text NOT NULL
        )""",
        "CREATE INDEX memory_trash_agent ON memory_trash (agent_id, deleted_at)",
        "CREATE INDEX memory_trash_deleted ON memory_trash (deleted_at)",
        """CREATE TABLE profile_versions (
            agent_id bigint NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            version integer NOT NULL,
            text text NOT NULL,
            tokens integer NOT NULL,
            changed_at text COLLATE "C" NOT NULL,
            changed_by text NOT NULL,
            operation text NOT NULL,
            PRIMARY KEY (agent_id, version)
        )""",
    ):
        conn.execute(statement)  # our own fixed text


def m004_merges_and_links(conn: Connection) -> None:
    """As SQLite's migration 8: ``memory_versions.agent_id`` (the agent whose write made a
    version; NULL for a person's) and ``memory_links`` (newer id -> older id, no foreign keys:
    a trashed memory keeps its links, a purge removes them); and the indexes by which a dedup
    lookup, now within one subject, counts and reads the author's rows of that subject."""
    for statement in (
        "ALTER TABLE memory_versions ADD COLUMN agent_id bigint",
        """UPDATE memory_versions v SET agent_id = coalesce(
            (SELECT agent_id FROM memories WHERE id = v.memory_id),
            (SELECT agent_id FROM memory_trash WHERE id = v.memory_id))
        WHERE changed_by <> 'person'""",
        """CREATE TABLE memory_links (
            newer_id bigint NOT NULL,
            older_id bigint NOT NULL,
            created_at text COLLATE "C" NOT NULL,
            PRIMARY KEY (newer_id, older_id)
        )""",
        "CREATE INDEX memory_links_older ON memory_links (older_id, newer_id)",
        # what a dedup lookup counts and reads: one author's rows of a subject, shared ones
        "CREATE INDEX memories_agent_subject ON memories (agent_id, subject_key)",
        "CREATE INDEX memories_shared_subject ON memories (subject_key) WHERE scope = 'shared'",
    ):
        conn.execute(statement)  # our own fixed text


def m005_pending_scrubs(conn: Connection) -> None:
    """As SQLite's migration 9: a purge's pending clean-up (here ``VACUUM`` of the purged tables),
    recorded in the purge's transaction and cleared once it has run."""
    conn.execute(
        """CREATE TABLE pending_scrubs (
            id bigserial PRIMARY KEY,
            memory_id bigint NOT NULL,
            requested_at text COLLATE "C" NOT NULL
        )"""
    )


def m006_access_tokens(conn: Connection) -> None:
    """Scoped API tokens, stored as a salted hash only: SQLite's migration 10."""
    conn.execute(
        """CREATE TABLE access_tokens (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            label text NOT NULL UNIQUE,
            key_id text COLLATE "C" NOT NULL UNIQUE,
            salt text NOT NULL,
            secret_hash text NOT NULL,
            agent_ids text,
            read_only boolean NOT NULL DEFAULT false,
            created_at text COLLATE "C" NOT NULL,
            last_used_at text COLLATE "C"
        )"""
    )


def m007_room_for_retrieval_counts(conn: Connection) -> None:
    """Recall counts its hits (``mark_retrieved``: ~20 rows a recall). A memory row is ~2.3 kB,
    three to a full page, so the new version of an updated row rarely fit its page: the update
    was not HOT and entered every index again, HNSW included (24.8 ms a recall at 20k rows,
    bench/experiments/postgres_retrieval_update.py). Pages filled to 60 % keep room for one new
    version: 97 % of the updates HOT, 0.7 ms, for a table 25 % larger. Only pages written from
    now on keep the room; ``VACUUM FULL memories`` rewrites an older hive's rows."""
    conn.execute("ALTER TABLE memories SET (fillfactor = 60)")


def m008_pending_writes(conn: Connection) -> None:
    """Writes held for review: SQLite's migration 11."""
    conn.execute(
        """CREATE TABLE pending_writes (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            agent_id bigint NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            operation text NOT NULL CHECK (operation IN ('memorize', 'update')),
            memory_id bigint,
            fields text NOT NULL,
            source text NOT NULL,
            created_at text COLLATE "C" NOT NULL
        )"""
    )
    conn.execute("CREATE INDEX pending_writes_agent ON pending_writes(agent_id, id)")


def m009_conversation_trash(conn: Connection) -> None:
    """A trash for conversations: SQLite's migration 12."""
    conn.execute('ALTER TABLE conversations ADD COLUMN deleted_at text COLLATE "C"')


def m010_short_full_text_pending_list(conn: Connection) -> None:
    """GIN's fast update queues new rows' entries in a pending list that every full-text search
    reads from end to end until VACUUM, autoanalyze or the list's limit (4 MB) folds it into the
    index. After a bulk insert that is hundreds of pages: the full-text arm at 20k took 7.6 ms
    with 116 pending pages against 4.8 ms after ``gin_clean_pending_list``, 17 ms in a benchmark
    run straight after the build. At 128 kB the list is folded in as it fills (a 20k build
    went as fast, 209 against 205 rows/s) and a search reads at most 16 pending pages."""
    conn.execute("ALTER INDEX memories_fts SET (gin_pending_list_limit = 128)")


MIGRATIONS: list[Migration] = [
    (1, "initial: agents, memories (full text, vector), conversations, leases", m001_initial),
    (2, "shared memories outlive their author", m002_memories_outlive_authors),
    (3, "versions of memories and profiles, and a trash", m003_history_and_trash),
    (4, "merged writes kept in history; links to newer near-twins", m004_merges_and_links),
    (5, "purges whose clean-up is pending", m005_pending_scrubs),
    (6, "scoped API tokens, hashed", m006_access_tokens),
    (7, "memories pages keep room for a retrieval-count update", m007_room_for_retrieval_counts),
    (8, "writes held for review", m008_pending_writes),
    (9, "a trash for conversations", m009_conversation_trash),
    (10, "a short pending list for the full-text index", m010_short_full_text_pending_list),
]
LATEST = MIGRATIONS[-1][0]


def current_version(conn: Connection) -> int:
    """The schema version in the connection's current schema (never one further down the path)."""
    row = conn.execute(
        "SELECT current_schema(), "
        "to_regclass(quote_ident(current_schema()) || '.schema_migrations')"
    ).fetchone()
    if not row or row[0] is None or row[1] is None:
        return 0
    version = conn.execute(
        sql.SQL("SELECT max(version) FROM {}.schema_migrations").format(sql.Identifier(row[0]))
    ).fetchone()
    return int(version[0]) if version and version[0] is not None else 0


def pending(conn: Connection) -> list[Migration]:
    """Migrations not yet applied (read-only)."""
    version = current_version(conn)
    return [m for m in MIGRATIONS if m[0] > version]


def _ensure_vector_extension(conn: Connection) -> None:
    row = conn.execute(
        "SELECT n.nspname, n.nspname = ANY(current_schemas(false)) FROM pg_extension e "
        "JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'"
    ).fetchone()
    if row is None:
        try:
            with conn.transaction():
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except psycopg.errors.InsufficientPrivilege as exc:
            raise StoreError(
                "The PostgreSQL database has no pgvector extension and this user may not create "
                "it; ask an administrator to run `CREATE EXTENSION vector` in this database."
            ) from exc
        except psycopg.errors.FeatureNotSupported as exc:
            raise StoreError(f"pgvector is not installed on this PostgreSQL server: {exc}") from exc
        except psycopg.errors.UndefinedFile as exc:
            raise StoreError(f"pgvector is not installed on this PostgreSQL server: {exc}") from exc
    version = conn.execute(
        "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
    ).fetchone()
    found = tuple(int(part) for part in re.findall(r"\d+", str(version[0]))[:2]) if version else ()
    if found < MIN_PGVECTOR:
        raise StoreError(
            f"pgvector {version[0] if version else '?'} is too old: hivekeep needs "
            f"{'.'.join(map(str, MIN_PGVECTOR))} or newer (iterative HNSW scans keep filtered "
            "searches from coming back short). Run `ALTER EXTENSION vector UPDATE`."
        )
    if row is not None and not row[1]:
        raise StoreError(
            f"The pgvector extension lives in schema {row[0]!r}, which is not on this "
            "connection's search_path; add it (e.g. options=-csearch_path=myschema,public)."
        )


def _search_path(setting: str) -> list[str]:
    """The schema names of a ``search_path`` setting, unquoted."""
    names = []
    for part in re.findall(r'\s*("(?:[^"]|"")*"|[^,]+)\s*(?:,|$)', setting):
        part = part.strip()
        names.append(part[1:-1].replace('""', '"') if part.startswith('"') else part.lower())
    return [name for name in names if name]


def hive_schema(conn: Connection) -> str:
    """The schema the hive lives in: the first of the search_path, which must exist.

    PostgreSQL skips a schema of the search_path that does not exist, so a mistyped name would
    quietly put the hive in the next one (often ``public``); that is refused instead.
    """
    row = conn.execute(
        "SELECT current_schema(), current_setting('search_path'), current_user"
    ).fetchone()
    assert row is not None
    schema, setting, user = row
    wanted = [name for name in _search_path(str(setting)) if name != "$user"]
    if schema is None or (wanted and schema not in (wanted[0], user)):
        missing = wanted[0] if wanted else str(setting)
        raise StoreError(
            f"The schema {missing!r} named first in the connection's search_path does not exist. "
            f"Create it first (CREATE SCHEMA ...)."
        )
    return str(schema)


def migrate(conn: Connection, now: str) -> None:
    """Bring the schema up to date; refuse a schema written by a newer hivekeep.

    Runs in one transaction under an advisory lock, so two processes opening a new hive at once
    do not both create it.
    """
    with conn.transaction():
        schema = hive_schema(conn)
        conn.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(current_schema() || ':hivekeep', 0))"
        )
        version = current_version(conn)
        if version > LATEST:
            raise StoreError(
                f"This hive's PostgreSQL schema {schema!r} has version {version}, newer than this "
                f"hivekeep understands ({LATEST}). Upgrade hivekeep to open it."
            )
        if version == LATEST:
            return
        _ensure_vector_extension(conn)
        apply_pending(Session(conn, POSTGRES), MIGRATIONS, version, now)
