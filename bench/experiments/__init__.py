"""Exploratory measurements behind the retrieval defaults (kept so every figure can be re-made)."""
