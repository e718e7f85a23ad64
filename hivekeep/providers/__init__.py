"""Providers behind small protocols: embedding models now, LLMs later."""
