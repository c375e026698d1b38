"""Strict readers for the environment variables that configure FleetScope.

Every reader raises ImproperlyConfigured with a message that starts with the
variable's name, so a bad deployment fails at start-up with one clear line
instead of misbehaving later.
"""

from __future__ import annotations

import builtins
import logging
import os
import sys
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO
from urllib.parse import SplitResult, urlsplit

from django.core.exceptions import ImproperlyConfigured

TRUE_WORDS = frozenset({"true", "on"})
FALSE_WORDS = frozenset({"false", "off"})
HOSTLESS_SCHEMES = frozenset({"unix", "sqlite"})
LOG_LEVELS = tuple(
    logging.getLevelName(level)
    for level in (logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR, logging.CRITICAL)
)


class Env:
    """Typed access to a mapping of environment variables (os.environ by default)."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self.environ = os.environ if environ is None else environ

    def raw(self, name: str) -> str | None:
        value = self.environ.get(name)
        if value is None or value.strip() == "":
            return None
        return value.strip()

    def str(self, name: str, default: str | None = None) -> str | None:
        value = self.raw(name)
        return default if value is None else value

    def bool(self, name: builtins.str, default: bool) -> bool:
        value = self.raw(name)
        if value is None:
            return default
        word = value.lower()
        # "1"/"yes" are rejected on purpose: a typo should not silently pick a side.
        if word in TRUE_WORDS:
            return True
        if word in FALSE_WORDS:
            return False
        raise ImproperlyConfigured(f"{name}: expected true/false or on/off, got {value!r}")

    def int(self, name: builtins.str, default: int, *, minimum: int | None = None) -> int:
        value = self.raw(name)
        if value is None:
            return default
        try:
            number = int(value, 10)
        except ValueError:
            raise ImproperlyConfigured(f"{name}: expected an integer, got {value!r}") from None
        if minimum is not None and number < minimum:
            raise ImproperlyConfigured(f"{name}: must be at least {minimum}, got {number}")
        return number

    def float(self, name: builtins.str, default: float, *, minimum: float | None = None) -> float:
        value = self.raw(name)
        if value is None:
            return default
        try:
            number = float(value)
        except ValueError:
            raise ImproperlyConfigured(f"{name}: expected a number, got {value!r}") from None
        if number != number or number in (float("inf"), float("-inf")):
            raise ImproperlyConfigured(f"{name}: expected a finite number, got {value!r}")
        if minimum is not None and number < minimum:
            raise ImproperlyConfigured(f"{name}: must be at least {minimum}, got {number}")
        return number

    def list(self, name: builtins.str, default: list[builtins.str]) -> list[builtins.str]:
        value = self.raw(name)
        if value is None:
            return list(default)
        return [item.strip() for item in value.split(",") if item.strip()]

    def log_level(self, name: builtins.str, default: builtins.str) -> builtins.str:
        """A logging level name, any case, as logging spells it (`INFO`)."""
        value = self.raw(name)
        if value is None:
            return default
        if value.upper() not in LOG_LEVELS:
            raise ImproperlyConfigured(
                f"{name}: expected one of {', '.join(LOG_LEVELS)}, got {value[:40]!r}"
            )
        return value.upper()

    def origins(self, name: builtins.str) -> builtins.list[builtins.str]:
        """Comma-separated origins, each `http(s)://host[:port]` (`*.` before the host
        for its subdomains, as Django takes them); nothing else."""
        origins = self.list(name, [])
        for origin in origins:
            check_origin(name, origin)
        return origins

    def secret(self, name: builtins.str) -> builtins.str | None:
        """NAME, or the contents of the file named by NAME_FILE (not both)."""
        direct = self.raw(name)
        file_name = self.raw(f"{name}_FILE")
        if direct is not None and file_name is not None:
            raise ImproperlyConfigured(f"{name}: set either {name} or {name}_FILE, not both")
        if file_name is None:
            return direct
        try:
            content = Path(file_name).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ImproperlyConfigured(
                f"{name}_FILE: cannot read {file_name!r}: {exc.strerror}"
            ) from None
        if not content:
            raise ImproperlyConfigured(f"{name}_FILE: {file_name!r} is empty")
        return content

    def url(self, name: builtins.str, schemes: frozenset[builtins.str]) -> SplitResult | None:
        """A URL with one of `schemes`, a host, a valid port and no credentials leak."""
        value = self.raw(name)
        if value is None:
            return None
        return parse_service_url(name, value, schemes)


def parse_service_url(name: str, value: str, schemes: frozenset[str]) -> SplitResult:
    if any(ch.isspace() for ch in value) or "\\" in value:
        raise ImproperlyConfigured(f"{name}: URL contains whitespace or backslashes")
    parts = urlsplit(value)
    if parts.scheme not in schemes:
        wanted = ", ".join(sorted(schemes))
        raise ImproperlyConfigured(
            f"{name}: scheme must be one of {wanted}, got {parts.scheme or 'none'!r}"
        )
    try:
        port = parts.port
    except ValueError:
        raise ImproperlyConfigured(f"{name}: port is not a number between 0 and 65535") from None
    if parts.scheme not in HOSTLESS_SCHEMES and not parts.hostname:
        raise ImproperlyConfigured(f"{name}: URL has no host")
    if port == 0:
        raise ImproperlyConfigured(f"{name}: port 0 is not a real port")
    if parts.fragment:
        raise ImproperlyConfigured(f"{name}: URL must not have a #fragment")
    return parts


def check_origin(name: str, value: str) -> None:
    """`value` is an origin as Django's CSRF check and the websocket check compare them."""
    shown = value[:80]
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or "://" not in value:
        raise ImproperlyConfigured(
            f"{name}: {shown!r} needs a scheme: http:// or https:// before the host"
        )
    try:
        parts.port  # noqa: B018  # raises on a port that is not 0-65535
    except ValueError:
        raise ImproperlyConfigured(f"{name}: {shown!r} has a bad port") from None
    host = (parts.hostname or "").removeprefix("*.")
    if not host or any(ch.isspace() for ch in value) or "\\" in value:
        raise ImproperlyConfigured(f"{name}: {shown!r} has no host")
    if "@" in parts.netloc:
        raise ImproperlyConfigured(f"{name}: {shown!r} must not hold a user or password")
    # Django compares origins as exact strings: even a trailing slash never matches.
    if parts.path or parts.query or parts.fragment or value.endswith(("?", "#")):
        raise ImproperlyConfigured(
            f"{name}: {shown!r} is an origin, scheme://host[:port], without a path or slash"
        )


def writable_dir(name: str, path: Path) -> Path:
    """`path`, created if missing, after proving a file can be written in it."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except FileExistsError:
        raise ImproperlyConfigured(f"{name}: {str(path)!r} exists and is not a directory") from None
    except OSError as exc:
        if path.is_dir():
            raise ImproperlyConfigured(
                f"{name}: {str(path)!r} is not writable: {exc.strerror}"
            ) from None
        raise ImproperlyConfigured(f"{name}: cannot create {str(path)!r}: {exc.strerror}") from None
    return path


@contextmanager
def exit_on_config_error(stream: TextIO | None = None) -> Iterator[None]:
    """Turn a configuration error into one line on stderr and exit code 2."""
    try:
        yield
    except ImproperlyConfigured as exc:
        out = stream if stream is not None else sys.stderr
        print(f"fleetscope: configuration error: {exc}", file=out)
        raise SystemExit(2) from None
