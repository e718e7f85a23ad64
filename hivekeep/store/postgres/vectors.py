"""The PostgreSQL vector arm's values: pgvector's text form of a vector, checked against the hive's
embedding space. (The arm itself, an HNSW cosine scan, is ``PostgresStore.vector_search``.)"""

from __future__ import annotations

import functools
import struct

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg.adapt import Dumper
from psycopg.pq import Format
from psycopg.rows import TupleRow

from hivekeep.errors import StoreError
from hivekeep.store.base import EmbeddingSpace, Vector

# The HNSW index over the vectors, as ``reset_embedding_space`` creates it and a bulk load that
# dropped it builds it again (one definition, never read back from the database).
HNSW_INDEX = "CREATE INDEX memories_embedding ON memories USING hnsw (embedding vector_cosine_ops)"


@functools.lru_cache(maxsize=8)
def _template(dimension: int) -> str:
    """``[%.9g,...]``: nine significant digits give every float32 back exactly, and one ``%``
    formats a whole vector (a quarter of the time of printing each value by itself)."""
    return "[" + ",".join(["%.9g"] * dimension) + "]"


def _checked(vector: Vector) -> npt.NDArray[np.float32]:
    values = np.asarray(vector, dtype=np.float32)
    if values.ndim != 1:
        raise StoreError(f"A vector must be one-dimensional, got shape {values.shape}.")
    if not np.all(np.isfinite(values)):
        raise StoreError("A vector holds a NaN or infinite value.")
    return values


def vector_literal(vector: Vector) -> str:
    """pgvector's text form, ``[x,y,...]``, exact for float32."""
    values = _checked(vector)
    return _template(values.size) % tuple(values.tolist())


class QueryVector(bytes):
    """A vector in pgvector's binary form (``vector_recv``: the dimension, a reserved word, then
    big-endian float32s), sent as a ``%b`` parameter: no text to print here nor to parse there
    (about 0.5 ms of a search at 384 dimensions). Connections learn to send it from
    ``send_vectors_binary``."""

    @classmethod
    def of(cls, vector: Vector) -> QueryVector:
        values = _checked(vector)
        return cls(struct.pack(">HH", values.size, 0) + values.astype(">f4").tobytes())

    @classmethod
    def filled(cls, value: float, like: QueryVector) -> QueryVector:
        """A vector of ``like``'s dimension, every element ``value`` (pgvector multiplies two
        vectors element by element, not a vector by a number)."""
        dimension = struct.unpack(">H", like[:2])[0]
        return cls.of(np.full(dimension, value, dtype=np.float32))


@functools.lru_cache(maxsize=8)
def _dumper(oid: int) -> type[Dumper]:
    """A binary dumper of ``QueryVector`` for the ``vector`` type of this oid (pgvector's type
    is created by the extension, so its oid differs from one database to another)."""

    class VectorDumper(Dumper):
        format = Format.BINARY

        def dump(self, obj: QueryVector) -> bytes:
            return bytes(obj)

    VectorDumper.oid = oid
    return VectorDumper


def send_vectors_binary(conn: psycopg.Connection[TupleRow]) -> None:
    """Let ``conn`` send ``QueryVector`` parameters as pgvector's binary ``vector``."""
    row = conn.execute("SELECT to_regtype('vector')::oid").fetchone()
    if row is not None and row[0] is not None:
        conn.adapters.register_dumper(QueryVector, _dumper(int(row[0])))


def unpacked(sent: bytes) -> npt.NDArray[np.float32]:
    """A vector from pgvector's binary form (``vector_send``: two 16-bit words, the dimension and
    a reserved one, then big-endian float32s). Reading a thousand vectors this way takes a tenth
    of the time of parsing ``embedding::real[]`` (measured: 29 ms against 394 ms at 384
    dimensions)."""
    return np.frombuffer(sent, dtype=">f4", offset=4).astype(np.float32)


def checked_vector(vector: Vector, space: EmbeddingSpace) -> str:
    shape = np.shape(vector)
    if shape != (space.dimension,):
        raise StoreError(
            f"The vector index refused a vector of shape {shape}: this hive's vectors have "
            f"{space.dimension} dimensions."
        )
    return vector_literal(vector)
