"""The protocols a provider implements. Users pass their own objects that satisfy them.

An embedder has one required method, ``embed``; batching, normalisation and validation of what it
returns are done once, by hivekeep, around it (see ``services/embedding.py``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, Self, TypeAlias

from hivekeep.errors import ValidationError
from hivekeep.redact import shown_url

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
    time_weight: float | None = None  # weight of the time list in fusion (0: off)


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


class Remote(ABC):
    """What a provider reached over HTTP shares: its repr, and ``with`` closing its connections."""

    model: str
    base_url: str

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={shown_url(self.base_url)!r})"

    @abstractmethod
    def close(self) -> None:
        """Release the provider's connections."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def check_client_limits(timeout: float, max_retries: int, **optional: int | None) -> None:
    """A remote client's ``timeout`` and ``max_retries``, and counts where ``None`` is the default.

    Raises ``ValidationError`` naming the bad value and what to pass instead.
    """
    if not timeout > 0:
        raise ValidationError(f"timeout={timeout} is not a positive number of seconds.")
    if max_retries < 0:
        raise ValidationError(f"max_retries={max_retries} is negative; pass 0 to never retry.")
    for name, value in optional.items():
        if value is not None and value < 1:
            raise ValidationError(f"{name}={value} is not positive; pass None for the default.")
