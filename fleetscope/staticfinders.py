"""Serve plotly.js as vendor/plotly.min.js: the cartesian bundle installed from npm when
it is there, else the full bundle that ships with the plotly Python package. No CDN and
nothing vendored in the repository.

FleetScope draws scatter, bar and heatmap traces only, all in the cartesian bundle
(1.5 MB against 4.8 MB): the overview's first chart came 1.9x sooner with it, both
bundles handed over fresh, on two cores (benchmarks/browser_overview.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, overload

import plotly
from django.conf import settings
from django.contrib.staticfiles.finders import BaseFinder
from django.core.files.storage import FileSystemStorage

PLOTLY_STATIC_PATH = "vendor/plotly.min.js"
FULL_BUNDLE = Path(plotly.__file__).resolve().parent / "package_data" / "plotly.min.js"
CARTESIAN_RELATIVE = Path("node_modules/plotly.js-cartesian-dist-min/plotly-cartesian.min.js")


def plotly_bundle() -> Path:
    """The file served as vendor/plotly.min.js (scripts/ensure-js.sh installs the first)."""
    cartesian = Path(settings.BASE_DIR) / CARTESIAN_RELATIVE
    return cartesian if cartesian.is_file() else FULL_BUNDLE


class _BundleStorage(FileSystemStorage):
    """One file, known as plotly.min.js whatever its name on disk."""

    # collectstatic and the static views read `prefix`: the file is served under vendor/.
    prefix = "vendor"

    def __init__(self, bundle: Path) -> None:
        super().__init__(location=str(bundle.parent))
        self.bundle = bundle

    def path(self, name: str) -> str:
        return str(self.bundle) if name == "plotly.min.js" else super().path(name)


class PlotlyFinder(BaseFinder):
    """Expose exactly one file: vendor/plotly.min.js, from `plotly_bundle()`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.bundle = plotly_bundle()
        self.storage = _BundleStorage(self.bundle)

    def check(self, **kwargs: Any) -> list[Any]:
        return []

    @overload
    def find(self, path: str, find_all: Literal[False] = False, **kwargs: Any) -> str | None: ...
    @overload
    def find(self, path: str, find_all: Literal[True], **kwargs: Any) -> list[str]: ...
    def find(self, path: str, find_all: bool = False, **kwargs: Any) -> str | list[str] | None:
        if path != PLOTLY_STATIC_PATH:
            return [] if find_all else None
        found = str(self.bundle)
        return [found] if find_all else found

    def list(self, ignore_patterns: Any) -> Any:
        yield "plotly.min.js", self.storage
