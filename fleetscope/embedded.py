"""The embedded mode in one process: web server, in-process scheduler, optional demo fleet.

Channels' in-memory layer only reaches consumers in the same process, so the
scheduler that publishes live updates must live beside the web server.
"""

from __future__ import annotations

import logging
import secrets
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import uvicorn
from django.conf import settings
from django.contrib.auth import get_user_model

from fleetscope.inprocess import InProcessScheduler
from fleetscope.schedule import periodic_jobs
from inventory.services import scrape_pool_close

log = logging.getLogger(__name__)

DEMO_USERNAME = "demo"


@dataclass(frozen=True)
class DemoLogin:
    username: str
    password: str


def demo_login_ensure(*, var_dir: Path) -> DemoLogin:
    """Create the demo user once, with a random password kept in var/ (mode 0600)."""
    password_file = var_dir / "demo-password"
    if password_file.exists():
        password = password_file.read_text(encoding="utf-8").strip()
    else:
        var_dir.mkdir(parents=True, exist_ok=True)
        password = secrets.token_urlsafe(12)
        password_file.touch(mode=0o600)
        password_file.write_text(password + "\n", encoding="utf-8")
    user_model = get_user_model()
    user, _ = user_model.objects.get_or_create(username=DEMO_USERNAME)
    if not user.check_password(password):
        user.set_password(password)
    user.is_staff = True
    user.is_superuser = True
    user.save()
    return DemoLogin(DEMO_USERNAME, password)


def port_is_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def serve_embedded(
    *,
    host: str,
    port: int,
    demo_fleet: bool = False,
    on_starting: Callable[[str | None], None] | None = None,
    say: Callable[[str], None] | None = None,
) -> None:
    """Run until Ctrl-C; stop everything this started before returning.

    `on_starting` gets the demo fleet's summary (or None) just before the web server binds;
    `say` gets the demo's start-up progress (filling its history), a line at a time.
    """
    fleet = None
    if demo_fleet:
        from fleetscope.demo_fleet import demo_fleet_start

        fleet = demo_fleet_start(say=say)
    scheduler = (
        InProcessScheduler(periodic_jobs()) if settings.FLEETSCOPE_INPROCESS_SCHEDULER else None
    )
    config = uvicorn.Config(
        "fleetscope.asgi:application",
        host=host,
        port=port,
        lifespan="off",
        log_level="warning",
        timeout_graceful_shutdown=5,
    )
    try:
        if scheduler is not None:
            scheduler.start()
        if on_starting is not None:
            on_starting(fleet.summary if fleet is not None else None)
        uvicorn.Server(config).run()
    finally:
        if scheduler is not None:
            scheduler.stop()
        scrape_pool_close()
        if fleet is not None:
            fleet.sim.stop()
