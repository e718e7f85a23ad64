"""Knowledge updates at read time: an old memory shown with the newer near-twin that followed it.

A stored write that listed older memories as ``similar`` is linked to each of them (the store's
``memory_links``); a read that returns one of those older memories points at the newest linked
memory the reader can see, so an agent reading an outdated fact sees that it changed (SPEC 4.1).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from hivekeep.store.base import MemoryRecord, Store


def with_newer(
    store: Store, viewer_id: int, memories: Sequence[MemoryRecord]
) -> list[MemoryRecord]:
    """``memories`` with ``newer`` set where a later, live near-twin is visible to the viewer
    (one store query for all of them)."""
    found = store.newer_memories(viewer_id, [m.id for m in memories])
    return [dataclasses.replace(m, newer=found[m.id]) if m.id in found else m for m in memories]
