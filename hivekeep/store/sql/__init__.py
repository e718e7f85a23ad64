"""The store's SQL, written once for both engines over a small ``Dialect`` each (see dialect.py)."""
