"""Providers behind small protocols: embedding models and LLMs, each with a registry."""
