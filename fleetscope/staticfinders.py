"""Serve plotly.min.js from the installed plotly package (no CDN, nothing vendored)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, overload

import plotly
from django.contrib.staticfiles.finders import BaseFinder
from django.core.files.storage import FileSystemStorage

PLOTLY_STATIC_PATH = "vendor/plotly.min.js"
_PLOTLY_DIR = Path(plotly.__file__).resolve().parent / "package_data"


class _VendorStorage(FileSystemStorage):
    # collectstatic and the static views read `prefix`: the file is served under vendor/.
    prefix = "vendor"


class PlotlyFinder(BaseFinder):
    """Expose exactly one file: the plotly.js bundle that ships with the Python package."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.storage = _VendorStorage(location=str(_PLOTLY_DIR))

    def check(self, **kwargs: Any) -> list[Any]:
        return []

    @overload
    def find(self, path: str, find_all: Literal[False] = False, **kwargs: Any) -> str | None: ...
    @overload
    def find(self, path: str, find_all: Literal[True], **kwargs: Any) -> list[str]: ...
    def find(self, path: str, find_all: bool = False, **kwargs: Any) -> str | list[str] | None:
        if path != PLOTLY_STATIC_PATH:
            return [] if find_all else None
        found = str(_PLOTLY_DIR / "plotly.min.js")
        return [found] if find_all else found

    def list(self, ignore_patterns: Any) -> Any:
        yield "plotly.min.js", self.storage
