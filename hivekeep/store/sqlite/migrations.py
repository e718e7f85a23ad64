"""SQLite schema migrations: named, ordered functions, each applied with its record atomically.

The vector table is not created here: its dimension belongs to the embedding model, so it is made
by ``SQLiteStore.reset_embedding_space`` when the hive first meets (or changes) its embedder.
"""

from __future__ import annotations

from typing import Any

from hivekeep.errors import StoreError
from hivekeep.store.spoken_dates import month_cases
from hivekeep.store.sql.dialect import Session
from hivekeep.store.sql.migrate import Migration, apply_pending
from hivekeep.store.sqlite.dialect import SQLITE, begin_immediate

Connection = Any  # apsw.Connection (apsw ships no type stubs)


# The columns of a memory row after its id and owner, as m001 created them and m005 rebuilt them
# (one text, so that the rebuilt table is the same table but for its owner column).
_MEMORY_FIELDS = """author_name TEXT NOT NULL,
            content TEXT NOT NULL,
            text_key TEXT NOT NULL,
            category TEXT NOT NULL
                CHECK (category IN ('fact', 'preference', 'decision', 'knowledge')),
            subject TEXT,
            importance INTEGER CHECK (importance BETWEEN 1 AND 10),
            scope TEXT NOT NULL DEFAULT 'private' CHECK (scope IN ('private', 'shared')),
            source_context TEXT,
            source TEXT NOT NULL DEFAULT 'explicit' CHECK (source IN ('explicit', 'automatic')),
            source_message_id INTEGER,
            retrieval_count INTEGER NOT NULL DEFAULT 0,
            last_retrieved_at TEXT,
            embedding_state TEXT NOT NULL DEFAULT 'pending'
                CHECK (embedding_state IN ('ready', 'pending')),
            embedding_model TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL"""


def m001_initial(conn: Connection) -> None:
    conn.execute(
        f"""
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

        CREATE TABLE agents (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            name TEXT NOT NULL UNIQUE COLLATE NOCASE,
            role TEXT NOT NULL DEFAULT '',
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        );

        CREATE TABLE profiles (
            agent_id INTEGER PRIMARY KEY REFERENCES agents(id) ON DELETE CASCADE,
            text TEXT NOT NULL DEFAULT '',
            tokens INTEGER NOT NULL DEFAULT 0,
            revision INTEGER NOT NULL DEFAULT 0,
            last_rewrite_at TEXT,
            manually_edited_at TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        );

        -- id is an INTEGER PRIMARY KEY (a stable rowid alias, never renumbered by VACUUM);
        -- AUTOINCREMENT so a forgotten memory's id is never handed to a new memory.
        CREATE TABLE memories (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            agent_id INTEGER NOT NULL,
            {_MEMORY_FIELDS}
        );
        CREATE INDEX memories_agent_created ON memories(agent_id, created_at);
        CREATE INDEX memories_shared_created ON memories(scope, created_at);
        CREATE INDEX memories_text_key ON memories(text_key);
        CREATE INDEX memories_pending ON memories(embedding_state)
            WHERE embedding_state = 'pending';

        -- Full text over content and subject, keyed on memories.id, kept in sync by triggers so
        -- the index changes in the same transaction as the row, whichever code path writes it.
        CREATE VIRTUAL TABLE memory_fts USING fts5(
            content, subject, tokenize = 'porter unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
            INSERT INTO memory_fts(rowid, content, subject)
            VALUES (new.id, new.content, coalesce(new.subject, ''));
        END;
        CREATE TRIGGER memories_fts_update AFTER UPDATE OF content, subject ON memories BEGIN
            UPDATE memory_fts SET content = new.content, subject = coalesce(new.subject, '')
            WHERE rowid = new.id;
        END;
        CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
            DELETE FROM memory_fts WHERE rowid = old.id;
        END;
        """
    )


def _spoken_date(column: str) -> str:
    """SQL rendering a stored timestamp as words a query may use: '8 May 2023'."""
    months = month_cases()
    return (
        f"CAST(substr({column}, 9, 2) AS INTEGER) || ' ' || "
        f"CASE substr({column}, 6, 2) {months} END || ' ' || substr({column}, 1, 4)"
    )


def _context() -> str:
    """What the ``context`` column holds for the row ``new``: its source context and the date it
    was created in words (m002; the same text in every migration that rebuilds the triggers)."""
    return f"trim(coalesce(new.source_context, '') || ' ' || {_spoken_date('new.created_at')})"


def _fts_triggers(context: str, audience: str | None = None) -> str:
    """The triggers that keep ``memory_fts`` (content, subject, context) in step with
    ``memories``, as m002 created them and m005 recreated them with the rebuilt table; with
    ``audience`` (m007) they also write the audience column, and a change of owner or scope
    rewrites it."""
    columns, values, of = "", "", ""
    sets = f"content = new.content, subject = coalesce(new.subject, ''), context = {context}"
    if audience is not None:
        columns, values, of = ", audience", f", {audience}", ", agent_id, scope"
        sets += f", audience = {audience}"
    return f"""CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
            INSERT INTO memory_fts(rowid, content, subject, context{columns})
            VALUES (new.id, new.content, coalesce(new.subject, ''), {context}{values});
        END;
        CREATE TRIGGER memories_fts_update
        AFTER UPDATE OF content, subject, source_context, created_at{of} ON memories BEGIN
            UPDATE memory_fts
            SET {sets}
            WHERE rowid = new.id;
        END;
        CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
            DELETE FROM memory_fts WHERE rowid = old.id;
        END;"""


def m002_fts_context(conn: Connection) -> None:
    """Index what a memory's context says: its source context and the date it was created.

    Questions name months and years that appear only in when something happened (measured on
    LoCoMo: +2 points of full-text recall@10, see docs/benchmarks.md).
    """
    context = _context()
    conn.execute(
        f"""
        DROP TRIGGER memories_fts_insert;
        DROP TRIGGER memories_fts_update;
        DROP TRIGGER memories_fts_delete;
        DROP TABLE memory_fts;
        CREATE VIRTUAL TABLE memory_fts USING fts5(
            content, subject, context, tokenize = 'porter unicode61 remove_diacritics 2'
        );
        {_fts_triggers(context)}
        INSERT INTO memory_fts(rowid, content, subject, context)
        SELECT id, content, coalesce(subject, ''), {context.replace("new.", "")} FROM memories;
        """
    )


def m003_vector_log(conn: Connection) -> None:
    """A change log of the vector index, so each process's in-memory vector cache stays coherent.

    Every change to ``memory_vec`` appends the memory's id here in the same transaction (id 0: the
    whole embedding space was reset). A cache that remembers the last ``seq`` it applied re-reads
    only the rows named since then. See ``hivekeep/store/vector_cache.py``.
    """
    conn.execute(
        "CREATE TABLE vector_log (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
        "memory_id INTEGER NOT NULL)"
    )


def m004_conversations(conn: Connection) -> None:
    """Conversations, their messages and summaries, per-agent settings, and compaction leases.

    A message is raw until a fold sets its ``summary_id`` (in the same transaction as the summary's
    insert), so "what is still raw" is one indexed query and a fold can never half-happen. A
    summary's ``maintenance_status`` starts ``pending`` and only the maintenance call moves it, so a
    crash between the two leaves a visible backlog instead of a silently unmined batch. ``leases``
    hold one-at-a-time locks (a compaction per agent) across every process using the file.
    """
    conn.execute(
        """
        CREATE TABLE agent_settings (
            agent_id INTEGER PRIMARY KEY REFERENCES agents(id) ON DELETE CASCADE,
            settings TEXT NOT NULL DEFAULT '{}'
        );

        CREATE TABLE conversations (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            agent_id INTEGER NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            title TEXT NOT NULL DEFAULT '',
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        );
        CREATE INDEX conversations_agent ON conversations(agent_id, id);

        CREATE TABLE summaries (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
            agent_id INTEGER NOT NULL,
            text TEXT NOT NULL,
            first_message_id INTEGER,
            last_message_id INTEGER,
            first_at TEXT NOT NULL,
            last_at TEXT NOT NULL,
            message_count INTEGER NOT NULL,
            tokens INTEGER NOT NULL,
            depth INTEGER NOT NULL DEFAULT 0,
            source_ids TEXT NOT NULL DEFAULT '[]',
            in_context INTEGER NOT NULL DEFAULT 1,
            maintenance_status TEXT NOT NULL DEFAULT 'pending'
                CHECK (maintenance_status IN ('pending', 'done', 'failed')),
            maintenance_attempts INTEGER NOT NULL DEFAULT 0,
            maintenance_error TEXT,
            created_at TEXT NOT NULL
        );
        CREATE INDEX summaries_context ON summaries(conversation_id, in_context);
        CREATE INDEX summaries_maintenance ON summaries(agent_id, maintenance_status)
            WHERE maintenance_status != 'done';

        CREATE TABLE messages (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
            role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
            content TEXT NOT NULL DEFAULT '',
            tool_calls TEXT,
            tool_call_id TEXT,
            tool_name TEXT,
            speaker TEXT,
            tokens INTEGER NOT NULL DEFAULT 0,
            summary_id INTEGER REFERENCES summaries(id),
            is_compaction_record INTEGER NOT NULL DEFAULT 0,
            record TEXT,
            created_at TEXT NOT NULL
        );
        CREATE INDEX messages_raw ON messages(conversation_id, id) WHERE summary_id IS NULL;
        CREATE INDEX messages_summary ON messages(summary_id);

        CREATE TABLE leases (
            name TEXT PRIMARY KEY,
            holder TEXT NOT NULL,
            expires_at REAL NOT NULL
        );
        """
    )


def m005_memories_outlive_authors(conn: Connection) -> None:
    """Shared memories outlive their author: ``agent_id`` NULL means "author deleted".

    Deleting an agent deletes its private memories and sets ``agent_id`` NULL on its shared ones
    (``author_name`` keeps the name), so no agent, not even a new one with the same name, owns
    them. A memory with no owner must be shared (CHECK). SQLite cannot drop a NOT NULL in place, so
    the table is rebuilt (ids, and the AUTOINCREMENT counter, kept: a forgotten id stays unused);
    the full-text and vector rows are keyed on those ids and stay as they are.
    """
    context = _context()
    row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'memories'").fetchone()
    counter = int(row[0]) if row else 0
    conn.execute(
        f"""
        CREATE TABLE memories_new (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            agent_id INTEGER REFERENCES agents(id) ON DELETE SET NULL,
            {_MEMORY_FIELDS},
            CHECK (agent_id IS NOT NULL OR scope = 'shared')
        );
        INSERT INTO memories_new SELECT id, agent_id, author_name, content, text_key, category,
            subject, importance, scope, source_context, source, source_message_id,
            retrieval_count, last_retrieved_at, embedding_state, embedding_model, created_at,
            updated_at FROM memories;
        DROP TABLE memories;
        ALTER TABLE memories_new RENAME TO memories;
        CREATE INDEX memories_agent_created ON memories(agent_id, created_at);
        CREATE INDEX memories_shared_created ON memories(scope, created_at);
        CREATE INDEX memories_text_key ON memories(text_key);
        CREATE INDEX memories_pending ON memories(embedding_state)
            WHERE embedding_state = 'pending';
        {_fts_triggers(context)}
        """
    )
    conn.execute("UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = 'memories'", (counter,))
    if (
        counter
        and not conn.execute("SELECT 1 FROM sqlite_sequence WHERE name = 'memories'").fetchone()
    ):
        conn.execute("INSERT INTO sqlite_sequence(name, seq) VALUES ('memories', ?)", (counter,))


def m006_history_and_trash(conn: Connection) -> None:
    """Nothing is overwritten: versions of memories and profiles, and a trash for memories.

    ``memory_versions`` holds each state of a changed memory (version 1 as created, written when it
    first changes; a memory never changed has none). ``memory_trash`` holds forgotten memories
    whole, with their vector, out of the ``memories`` table and so out of every index and read
    until restored (same id) or purged. ``profile_versions`` holds each revision's text.
    Idempotent (IF NOT EXISTS), as the tests build older files with these tables already in.
    """
    conn.execute(
        """
        CREATE TABLE IF NOT EXISTS memory_versions (
            memory_id INTEGER NOT NULL,
            version INTEGER NOT NULL,
            content TEXT NOT NULL,
            category TEXT NOT NULL,
            subject TEXT,
            importance INTEGER,
            scope TEXT NOT NULL,
            changed_at TEXT NOT NULL,
            changed_by TEXT NOT NULL,
            operation TEXT NOT NULL,
            PRIMARY KEY (memory_id, version)
        ) WITHOUT ROWID;

        CREATE TABLE IF NOT EXISTS memory_trash (
            id INTEGER PRIMARY KEY,
            agent_id INTEGER,
            author_name TEXT NOT NULL,
            content TEXT NOT NULL,
            text_key TEXT NOT NULL,
            category TEXT NOT NULL,
            subject TEXT,
            importance INTEGER,
            scope TEXT NOT NULL,
            source_context TEXT,
            source TEXT NOT NULL,
            source_message_id INTEGER,
            retrieval_count INTEGER NOT NULL,
            last_retrieved_at TEXT,
            embedding_state TEXT NOT NULL,
            embedding_model TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            embedding BLOB,
            deleted_at TEXT NOT NULL,
            deleted_by TEXT NOT NULL
        );
        CREATE INDEX IF NOT EXISTS memory_trash_agent ON memory_trash(agent_id, deleted_at);
        CREATE INDEX IF NOT EXISTS memory_trash_deleted ON memory_trash(deleted_at);

        CREATE TABLE IF NOT EXISTS profile_versions (
            agent_id INTEGER NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            version INTEGER NOT NULL,
            text TEXT NOT NULL,
            tokens INTEGER NOT NULL,
            changed_at TEXT NOT NULL,
            changed_by TEXT NOT NULL,
            operation TEXT NOT NULL,
            PRIMARY KEY (agent_id, version)
        ) WITHOUT ROWID;
        """
    )


# Who may see a memory, as one full-text token: ``a<owner id>`` for a private memory, ``shared``
# for a shared one (its owner may be gone). See ``m007_fts_audience``.
_AUDIENCE = "CASE WHEN new.scope = 'shared' THEN 'shared' ELSE 'a' || new.agent_id END"


def m007_fts_audience(conn: Connection) -> None:
    """An ``audience`` column in ``memory_fts``, so a search ranks only what the viewer may see.

    With ten agents sharing a file, FTS5 ranked every agent's matches before visibility was
    checked row by row: ``AND audience : ("a7" OR "shared")`` inside the MATCH leaves the others
    out of the ranking (docs/benchmarks.md, "Issue 17, SQLite"). Its bm25 weight is 0 (its one
    token a row only lengthens every row alike). FTS5 cannot add a column, so the table is
    rebuilt from ``memories`` (same rowids) and the triggers recreated.
    """
    context = _context()
    conn.execute(
        f"""
        DROP TRIGGER memories_fts_insert;
        DROP TRIGGER memories_fts_update;
        DROP TRIGGER memories_fts_delete;
        DROP TABLE memory_fts;
        CREATE VIRTUAL TABLE memory_fts USING fts5(
            content, subject, context, audience,
            tokenize = 'porter unicode61 remove_diacritics 2'
        );
        INSERT INTO memory_fts(memory_fts, rank) VALUES ('rank', 'bm25(1.0, 1.0, 1.0, 0.0)');
        {_fts_triggers(context, _AUDIENCE)}
        INSERT INTO memory_fts(rowid, content, subject, context, audience)
        SELECT id, content, coalesce(subject, ''), {context.replace("new.", "")},
            {_AUDIENCE.replace("new.", "")} FROM memories;
        """
    )


def m008_merges_and_links(conn: Connection) -> None:
    """Dedup that keeps what it merges, and points old facts at newer ones (issue 24).

    ``memory_versions.agent_id``: the agent whose write made a version (NULL for a person's, or
    when no agent is left); the versions already kept get their memory's owner unless a person
    wrote them. ``memory_links``: a stored write that listed older memories as ``similar``
    links to each (newer id -> older id); no foreign keys, as a trashed memory keeps its links
    (a purge removes them). Idempotent, as m006, for the tests that build older files with it in.
    """
    columns = {row[1] for row in conn.execute("PRAGMA table_info(memory_versions)")}
    if "agent_id" not in columns:
        conn.execute("ALTER TABLE memory_versions ADD COLUMN agent_id INTEGER")
    conn.execute(
        """
        UPDATE memory_versions SET agent_id = coalesce(
            (SELECT agent_id FROM memories WHERE id = memory_id),
            (SELECT agent_id FROM memory_trash WHERE id = memory_id))
        WHERE changed_by <> 'person' AND agent_id IS NULL;
        CREATE TABLE IF NOT EXISTS memory_links (
            newer_id INTEGER NOT NULL,
            older_id INTEGER NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (newer_id, older_id)
        ) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS memory_links_older ON memory_links(older_id, newer_id);
        """
    )


def m009_pending_scrubs(conn: Connection) -> None:
    """``pending_scrubs``: a purge whose clean-up has not completed (docs/memory.md, "Purge").

    A purge records one row per erased memory in the transaction that erases it, and deletes the
    row only once the file is scrubbed (full-text merge, ``VACUUM``, WAL truncated): a purge
    killed in between is finished when the hive is next opened. No text, only the id.
    """
    conn.execute(
        """CREATE TABLE IF NOT EXISTS pending_scrubs (
            id INTEGER PRIMARY KEY,
            memory_id INTEGER NOT NULL,
            requested_at TEXT NOT NULL
        )"""
    )


def m010_access_tokens(conn: Connection) -> None:
    """Scoped API tokens, stored as a salted hash only (docs/server.md, "Scoped tokens").

    ``key_id`` is the token's public lookup part, ``secret_hash`` HMAC-SHA256 of its secret under
    the row's own ``salt``; ``agent_ids`` a JSON list of agent ids (NULL: every agent). Agent ids
    are never reused (AUTOINCREMENT), so a deleted agent's id in a scope grants nothing.
    """
    conn.execute(
        """
        CREATE TABLE access_tokens (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            label TEXT NOT NULL UNIQUE,
            key_id TEXT NOT NULL UNIQUE,
            salt TEXT NOT NULL,
            secret_hash TEXT NOT NULL,
            agent_ids TEXT,
            read_only INTEGER NOT NULL DEFAULT 0 CHECK (read_only IN (0, 1)),
            created_at TEXT NOT NULL,
            last_used_at TEXT
        );
        """
    )


def m011_pending_writes(conn: Connection) -> None:
    """Writes held for review (``agent.configure(review=...)``): apart from the memories, so
    nothing held is recalled, listed or exported; gone with their agent."""
    conn.execute(
        """
        CREATE TABLE pending_writes (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            agent_id INTEGER NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            operation TEXT NOT NULL CHECK (operation IN ('memorize', 'update')),
            memory_id INTEGER,
            fields TEXT NOT NULL,
            source TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE INDEX pending_writes_agent ON pending_writes(agent_id, id);
        """
    )


def m012_conversation_trash(conn: Connection) -> None:
    """``conversations.deleted_at``: a deleted conversation waits in the trash, restorable, until
    the retention period ends (docs/conversations.md, "Conversations as objects"). Idempotent,
    like the migrations older test files replay."""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(conversations)")}
    if "deleted_at" not in columns:
        conn.execute("ALTER TABLE conversations ADD COLUMN deleted_at TEXT")


MIGRATIONS: list[Migration] = [
    (1, "initial", m001_initial),
    (2, "full text over source context and date", m002_fts_context),
    (3, "change log of the vector index", m003_vector_log),
    (4, "conversations, summaries, agent settings, leases", m004_conversations),
    (5, "shared memories outlive their author", m005_memories_outlive_authors),
    (6, "versions of memories and profiles, and a trash", m006_history_and_trash),
    (7, "full-text audience column", m007_fts_audience),
    (8, "merged writes kept in history; links to newer near-twins", m008_merges_and_links),
    (9, "purges whose clean-up is pending", m009_pending_scrubs),
    (10, "scoped API tokens, hashed", m010_access_tokens),
    (11, "writes held for review", m011_pending_writes),
    (12, "a trash for conversations", m012_conversation_trash),
]
LATEST = MIGRATIONS[-1][0]


def current_version(conn: Connection) -> int:
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
    ).fetchone()
    if not exists:
        return 0
    row = conn.execute("SELECT max(version) FROM schema_migrations").fetchone()
    return int(row[0] or 0)


def pending(conn: Connection) -> list[Migration]:
    """Migrations not yet applied (read-only)."""
    version = current_version(conn)
    return [m for m in MIGRATIONS if m[0] > version]


def migrate(conn: Connection, now: str) -> None:
    """Bring the file up to date; refuse a file written by a newer hivekeep. A file already up
    to date is opened without the write lock (read first), so opening a hive does not wait
    for another process's long write."""
    if current_version(conn) == LATEST:
        return
    begin_immediate(conn)
    try:
        version = current_version(conn)
        if version > LATEST:
            raise StoreError(
                f"This hive file has schema version {version}, newer than this hivekeep "
                f"understands ({LATEST}). Upgrade hivekeep to open it."
            )
        apply_pending(Session(conn, SQLITE), MIGRATIONS, version, now)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
