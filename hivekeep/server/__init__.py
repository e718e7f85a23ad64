"""``hivekeep serve``: the REST API (FastAPI) over one Hive, with live events over SSE.

``create_app(hive, token=...)`` builds the application; ``hivekeep.cli.serve`` runs it with uvicorn.
"""

from hivekeep.server.app import create_app

__all__ = ["create_app"]
