"""The web UI: a static page and plain ES modules, shipped in the package (no build step).

The shell is served without a token (it holds no data); its API calls carry the bearer token the
user types in, which the page keeps in ``localStorage``.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

UI_DIR = Path(__file__).parent
NO_CACHE = {"Cache-Control": "no-cache"}  # revalidate, so an upgraded package shows at once


def mount_ui(app: FastAPI) -> None:
    """``/`` serves the page, ``/favicon.ico`` its icon and ``/static/`` its modules and styles."""

    @app.get("/", include_in_schema=False)
    def index() -> FileResponse:
        return FileResponse(UI_DIR / "index.html", headers=NO_CACHE)

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon() -> FileResponse:
        return FileResponse(UI_DIR / "favicon.ico", media_type="image/x-icon", headers=NO_CACHE)

    app.mount("/static", StaticFiles(directory=UI_DIR / "static"), name="ui")
