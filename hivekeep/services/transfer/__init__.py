"""Export a hive to JSONL and import one back: backups, and moves between hives and backends.

The format is described in docs/storage.md ("Export and import"). In short: one JSON object per
line with a ``type`` — a ``header`` first, then ``agent`` and ``profile`` lines, each conversation
(``conversation`` then its ``message`` and ``summary`` lines), then every ``memory`` with its
vector. With ``history`` (``export --history``, format version 2) profile and memory lines carry
their kept versions and the trash follows as ``trashed`` lines; an import puts both back as they
were (who, when, operation kept).

Records name each other by agent name or by export key, never by database id, because ids
differ between hives and backends. Everything goes through the ``Store`` protocol, so the same code
exports from and imports into any backend.

Export streams page by page (constant memory). Import reads the file three times: the first pass
checks every line and every reference and writes nothing if anything is wrong; the second embeds,
by this hive's model, the memories whose vectors are of another model (or absent), before any
transaction opens; the last pass writes in bounded transactions of one batch each (``IMPORT_BATCH``
memories, or about as many lines), so other writers wait for a batch, never for the whole file, and
a failure or a killed process part-way leaves whole batches only. Memories go through the archive's
one write path (``ArchiveService.memorize_many``: the same dedup as ``memorize``), and its
``memory:created`` events are held until their batch commits (``EventBus.deferred``), then reach
the UI and, on PostgreSQL, the other processes. Conversations already present are skipped and
agents are merged by name, so importing a file twice adds nothing the second time, and importing
it again finishes an import that stopped.

The package: ``format`` (the line models, keys and vectors), ``export``, ``reader`` (parsing and
checking a file) and ``importer``.
"""

from __future__ import annotations

from hivekeep.core.limits import MAX_CONTENT_CHARS, MAX_SUBJECT_CHARS
from hivekeep.services.transfer.export import ExportReport, export_jsonl
from hivekeep.services.transfer.format import (
    FORMAT,
    FORMAT_VERSION,
    HISTORY_VERSION,
    MAX_SOURCE_CONTEXT_CHARS,
    Progress,
)
from hivekeep.services.transfer.importer import Importer, ImportReport

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "HISTORY_VERSION",
    "MAX_CONTENT_CHARS",
    "MAX_SOURCE_CONTEXT_CHARS",
    "MAX_SUBJECT_CHARS",
    "ExportReport",
    "ImportReport",
    "Importer",
    "Progress",
    "export_jsonl",
]
