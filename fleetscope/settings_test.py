"""Settings for the test suite.

The only thing fixtures cannot do: settings refuse to load without SECRET_KEY
when DEBUG is off, and pytest-django imports them before any fixture runs.
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    # What the type checker (django-stubs reads `settings.X` from this module) sees;
    # at run time the names are copied below, once the environment is set.
    from fleetscope.settings import *  # noqa: F403

os.environ.setdefault("SECRET_KEY", "test-suite-only-not-secret")
# The simulated fleets the tests scrape listen on loopback.
os.environ.setdefault("FLEETSCOPE_OUTBOUND_ALLOW_LOOPBACK", "true")
# Scrape in the test process; tests/inventory/test_scrape_pool.py covers the worker processes.
os.environ.setdefault("FLEETSCOPE_SCRAPE_PROCESSES", "0")

_base = importlib.import_module("fleetscope.settings")
globals().update({name: value for name, value in vars(_base).items() if name.isupper()})

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# Connections opened in worker threads (Channels' database_sync_to_async) must not
# outlive their use, or PostgreSQL cannot drop the test database at the end.
_base.DATABASES["default"]["CONN_MAX_AGE"] = 0
# The ASGI app is imported while tests are collected, before any fixture could make this.
_base.STATIC_ROOT.mkdir(parents=True, exist_ok=True)
