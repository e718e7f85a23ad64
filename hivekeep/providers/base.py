"""The protocols a provider implements. Users pass their own objects that satisfy them.

An embedder has one required method, ``embed``; batching, normalisation and validation of what it
returns are done once, by hivekeep, around it (see ``services/embedding.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

if TYPE_CHECKING:  # numpy loads with the store, not with the settings and protocols
    import numpy as np
    import numpy.typing as npt

Vectors: TypeAlias = (
    "Sequence[Sequence[float]] | Sequence[npt.NDArray[np.floating[Any]]] | npt.NDArray[Any]"
)


@dataclass(frozen=True)
class RecallDefaults:
    """Search settings calibrated for one embedding model (similarity scales differ by model).

    An embedder may expose these as ``recall_defaults``; an explicit environment variable or
    argument always wins over them, and they win over the seed's defaults.
    """

    similarity_floor: float | None = None
    rrf_k: int | None = None
    fts_weight: float | None = None
    feedback_weight: float | None = None  # lexical feedback into the vector query (0: off)
    subject_weight: float | None = None  # weight of the subject list in fusion (0: off)


class Embedder(Protocol):
    """Turns texts into vectors of a fixed dimension.

    ``model_id`` names the model (stored in the hive, so vectors of two models never mix);
    ``dimension`` is the length of every vector ``embed`` returns. ``embed`` returns one vector per
    input text, in order; hivekeep L2-normalises them, so raw model outputs are fine. It raises
    ``hivekeep.errors.ProviderError`` when the model cannot answer.
    """

    @property
    def model_id(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Vectors: ...
