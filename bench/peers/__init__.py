"""Peer memory systems that the benchmarks run beside hivekeep, on the same data and embedder.

Each peer is optional and benchmark-only: it is never a dependency of hivekeep. A peer module
exposes ``available() -> str | None`` (None when the peer can run here, else the reason why not)
and a small class with ``add_many``, ``search`` and ``close``. See README.md in this folder.
"""
