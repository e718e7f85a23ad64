"""Versioned schema migrations, one module per backend."""
