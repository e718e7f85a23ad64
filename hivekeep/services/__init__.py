"""Orchestration: services combine the pure core, the store and the providers, and own the flow."""
