"""The services of one hive, wired once over its store: what ``Hive`` and ``Agent`` call.

The façade holds one ``Services`` and hands it to every ``Agent`` it makes, so an agent reaches
the services without reaching back up to the ``Hive`` (no import circle), and none of them is a
public attribute of the façade. What the services need from above, the memory tools' schemas, is
handed in here (``tools``) rather than imported.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hivekeep.config import Settings
from hivekeep.events import EventBus
from hivekeep.providers.base import RecallDefaults
from hivekeep.providers.llm.base import LLM
from hivekeep.services.archive import ArchiveService
from hivekeep.services.chat import ChatService
from hivekeep.services.compaction import CompactionService
from hivekeep.services.compile import ProfileCompiler
from hivekeep.services.conversation import ConversationService
from hivekeep.services.credentials import CredentialGuard
from hivekeep.services.embedding import EmbeddingService
from hivekeep.services.history import HistoryService
from hivekeep.services.llms import LLMResolver
from hivekeep.services.maintenance import MaintenanceService
from hivekeep.services.profile import ProfileService
from hivekeep.services.recall import RecallService
from hivekeep.services.remember import RememberService
from hivekeep.services.threads import ThreadService
from hivekeep.services.transfer.chat_exports import ChatImporter
from hivekeep.store.base import Store


@dataclass(frozen=True)
class Services:
    settings: Settings
    store: Store
    events: EventBus
    embeddings: EmbeddingService
    archive: ArchiveService
    history: HistoryService
    recall: RecallService
    profiles: ProfileService
    llms: LLMResolver
    conversations: ConversationService
    maintenance: MaintenanceService
    compaction: CompactionService
    chats: ChatService
    compiler: ProfileCompiler
    remember: RememberService
    chat_imports: ChatImporter


def wire(
    store: Store,
    settings: Settings,
    embeddings: EmbeddingService,
    recall_defaults: RecallDefaults,
    llm: LLM | str | None,
    tools: list[dict[str, Any]],
) -> Services:
    """Every service over ``store``; ``tools``: the schemas a chat turn offers the model."""
    events = EventBus()
    guard = CredentialGuard(store, settings.secrets)
    archive = ArchiveService(store, embeddings, settings.dedup_threshold, events, guard)
    profiles = ProfileService(store, settings.profile_max_tokens, events, guard)
    llms = LLMResolver(store, settings, llm)
    conversations = ConversationService(store, settings.compaction(), tools)
    maintenance = MaintenanceService(store, archive, profiles)
    compaction = CompactionService(store, events, conversations, profiles, maintenance, llms)
    remember = RememberService(
        store, archive, profiles, conversations, maintenance, llms, ThreadService(store)
    )
    return Services(
        settings=settings,
        store=store,
        events=events,
        embeddings=embeddings,
        archive=archive,
        history=HistoryService(store, archive, settings.trash_days),
        recall=RecallService(store, embeddings, recall_defaults),
        profiles=profiles,
        llms=llms,
        conversations=conversations,
        maintenance=maintenance,
        compaction=compaction,
        chats=ChatService(store, conversations, profiles, compaction, llms),
        compiler=ProfileCompiler(store, profiles, llms),
        remember=remember,
        chat_imports=ChatImporter(remember),
    )
