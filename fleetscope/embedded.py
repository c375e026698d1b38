"""The embedded mode in one process: web server, in-process scheduler, optional demo fleet.

Channels' in-memory layer only reaches consumers in the same process, so the
scheduler that publishes live updates must live beside the web server.
"""

from __future__ import annotations

import logging
import secrets
import signal
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

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


class Terminated(BaseException):
    """SIGTERM arrived: unwinds like Ctrl-C's KeyboardInterrupt, so the same cleanup runs."""


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise Terminated


def serve_embedded(
    *,
    host: str,
    port: int,
    demo_fleet: bool = False,
    on_starting: Callable[[str | None], None] | None = None,
    say: Callable[[str], None] | None = None,
) -> None:
    """Run until Ctrl-C or SIGTERM; stop everything this started before returning.

    SIGTERM (kill, systemd, docker stop) stops it as Ctrl-C does, and this then returns
    normally (the command exits 0); Ctrl-C still ends in KeyboardInterrupt. Uvicorn takes
    both signals while it serves, shuts down gracefully, and raises the signal again with
    the handler found at its start: ours, so the cleanup below runs instead of the
    default SIGTERM action ending the process on the spot and orphaning the scrape workers.

    `on_starting` gets the demo fleet's summary (or None) just before the web server binds;
    `say` gets the demo's start-up progress (filling its history), a line at a time.
    """
    on_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _raise_terminated) if on_main_thread else None
    try:
        _serve(host=host, port=port, demo_fleet=demo_fleet, on_starting=on_starting, say=say)
    except Terminated:
        log.info("SIGTERM: stopped")
    finally:
        if on_main_thread:
            signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def _serve(
    *,
    host: str,
    port: int,
    demo_fleet: bool,
    on_starting: Callable[[str | None], None] | None,
    say: Callable[[str], None] | None,
) -> None:
    fleet = None
    scheduler = None
    try:
        if demo_fleet:
            from fleetscope.demo_fleet import demo_fleet_start

            fleet = demo_fleet_start(say=say)
        if settings.FLEETSCOPE_INPROCESS_SCHEDULER:
            scheduler = InProcessScheduler(periodic_jobs())
        config = uvicorn.Config(
            "fleetscope.asgi:application",
            host=host,
            port=port,
            lifespan="off",
            # As deploy/bin/web: pushes are gzip already (dashboard.live).
            ws_per_message_deflate=False,
            log_level="warning",
            timeout_graceful_shutdown=5,
        )
        if scheduler is not None:
            scheduler.start()
        if on_starting is not None:
            on_starting(fleet.summary if fleet is not None else None)
        uvicorn.Server(config).run()
    finally:
        # A second SIGTERM must not cut the cleanup short (and orphan the workers after all);
        # each step is bounded, and SIGKILL remains for the impatient.
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if scheduler is not None:
            scheduler.stop()
        scrape_pool_close()
        if fleet is not None:
            fleet.sim.stop()
