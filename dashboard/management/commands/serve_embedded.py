from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from fleetscope.embedded import demo_login_ensure, port_is_free, serve_embedded


class Command(BaseCommand):
    help = "Serve FleetScope with the in-process scheduler (the embedded mode); Ctrl-C stops all."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument(
            "--demo",
            action="store_true",
            help="create the demo login, start a simulated fleet (fleetsim) and register it",
        )

    def handle(self, *args: Any, host: str, port: int, demo: bool, **options: Any) -> None:
        if not port_is_free(host, port):
            raise CommandError(f"port {port} on {host} is in use; pick another with --port")
        if demo:
            login = demo_login_ensure(var_dir=settings.VAR_DIR)
            self.stdout.write(f"login: {login.username} / {login.password}")
        shown_host = f"[{host}]" if ":" in host else host

        def announce(fleet_summary: str | None) -> None:
            if fleet_summary:
                self.stdout.write(fleet_summary)
            self.stdout.write(
                f"FleetScope is running at http://{shown_host}:{port}  (Ctrl-C stops it)"
            )
            self.stdout.flush()

        def say(line: str) -> None:
            self.stdout.write(line)
            self.stdout.flush()

        serve_embedded(host=host, port=port, demo_fleet=demo, on_starting=announce, say=say)
