"""Real components a fault drill starts, stops and starts again on the same port and data
directory: Redis, PostgreSQL, and FleetScope's own processes (the embedded server, a Celery
worker, Celery beat). Loopback ports, temporary directories, never the machine's shared
services. Every process runs in a session of its own and is ended with its whole group, so
a failing drill leaves nothing behind.

To stop a task where a drill wants it: a table lock holds a transaction open at its next
write, and `HeldReplica` holds a scrape mid-fetch.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import psycopg
import redis

from devtools.ports import free_port
from devtools.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable


def process_group_end(process: subprocess.Popen[bytes], *, timeout: float = 10.0) -> None:
    """SIGTERM to the process's whole group (it was started in a session of its own), then
    SIGKILL to what is left after `timeout`."""
    if process.poll() is None:
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        with suppress(subprocess.TimeoutExpired):
            process.wait(timeout=timeout)
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)  # children that outlived their parent
    process.wait()


def log_tail(path: Path, chars: int = 3000) -> str:
    return path.read_text(errors="replace")[-chars:] if path.exists() else "(no log)"


# --- Redis -------------------------------------------------------------------------------


@dataclass
class RedisServer:
    """A redis-server of the drill's own: no persistence (what a restart loses is lost)."""

    workdir: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def start(self) -> None:
        assert self.process is None or self.process.poll() is not None, "already running"
        log = (self.workdir / f"redis-{self.port}.log").open("ab")
        self.process = subprocess.Popen(
            [shutil.which("redis-server") or "/usr/bin/redis-server",
             "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(self.workdir)],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        log.close()
        client = redis.Redis(port=self.port, socket_timeout=1, socket_connect_timeout=1)

        def answers() -> bool | None:
            assert self.process is not None
            if self.process.poll() is not None:
                raise AssertionError(f"redis-server exited: {log_tail(Path(log.name))}")
            try:
                return bool(client.ping()) or None
            except redis.RedisError:
                return None

        try:
            wait_until(answers, timeout=15, what=f"redis-server on port {self.port}")
        finally:
            client.close()

    def stop(self) -> None:
        if self.process is not None:
            process_group_end(self.process)

    def client(self, db: int = 0) -> redis.Redis:
        return redis.Redis(port=self.port, db=db, socket_timeout=2, socket_connect_timeout=2)


@contextmanager
def redis_server(workdir: Path) -> Iterator[RedisServer]:
    server = RedisServer(workdir)
    server.start()
    try:
        yield server
    finally:
        server.stop()


# --- PostgreSQL --------------------------------------------------------------------------


def postgres_bin(name: str) -> str:
    found = sorted(
        glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), key=lambda p: int(p.split("/")[4])
    )
    if not found:
        raise RuntimeError(f"{name} is not installed (apt-get install postgresql)")
    return found[-1]


def _as_postgres_user(args: list[str]) -> list[str]:
    """initdb and postgres refuse to run as root: as root, run them as the `postgres` user."""
    if os.geteuid() != 0:
        return args
    return ["runuser", "-u", "postgres", "--", *args]


@dataclass
class PostgresServer:
    """A PostgreSQL cluster of the drill's own in a temporary directory, trust auth on
    127.0.0.1 only, fsync off (a drill's data need not survive a power cut)."""

    root: Path
    port: int = field(default_factory=free_port)

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def log(self) -> Path:
        return self.root / "postgres.log"

    def url(self, dbname: str = "postgres") -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{dbname}"

    def _run(self, *args: str, timeout: float = 60.0) -> None:
        done = subprocess.run(
            _as_postgres_user(list(args)), capture_output=True, text=True, timeout=timeout
        )
        if done.returncode != 0:
            raise AssertionError(
                f"{' '.join(args[:2])} failed: {done.stdout[-1500:]}{done.stderr[-1500:]}\n"
                f"{log_tail(self.log)}"
            )

    def init(self) -> None:
        self._run(
            postgres_bin("initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres",
            "-E", "UTF8", "--no-sync",
        )  # fmt: skip

    def start(self) -> None:
        options = (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c full_page_writes=off"
        )
        self._run(
            postgres_bin("pg_ctl"), "-D", str(self.data), "-o", options, "-l", str(self.log),
            "-w", "-t", "30", "start",
        )  # fmt: skip

    def stop(self, mode: str = "fast") -> None:
        """`fast`: ends every session (as a restart by an operator does); `immediate`: as
        a crash (recovery on the next start)."""
        self._run(postgres_bin("pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")

    def running(self) -> bool:
        done = subprocess.run(
            _as_postgres_user([postgres_bin("pg_ctl"), "-D", str(self.data), "status"]),
            capture_output=True,
        )
        return done.returncode == 0

    def connect(self, dbname: str = "postgres") -> psycopg.Connection:
        return psycopg.connect(self.url(dbname), autocommit=True, connect_timeout=5)


@contextmanager
def postgres_server() -> Iterator[PostgresServer]:
    """A fresh cluster, started; stopped and deleted afterwards whatever happened."""
    # Not under pytest's tmp_path: the postgres user must be able to reach the directory.
    root = Path(tempfile.mkdtemp(prefix="fleetscope-drill-pg-"))
    if os.geteuid() == 0:
        owner = pwd.getpwnam("postgres")
        os.chown(root, owner.pw_uid, owner.pw_gid)
    server = PostgresServer(root)
    try:
        server.init()
        server.start()
        yield server
    finally:
        try:
            if server.running():
                server.stop("immediate")
        finally:
            shutil.rmtree(root, ignore_errors=True)


# --- FleetScope's own processes ----------------------------------------------------------


def production_env(**values: str) -> dict[str, str]:
    """The environment of a FleetScope process started by a drill: the production settings
    module with `values` (DATABASE_URL, REDIS_URL, ...) and nothing of the test run's."""
    keep = {"PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR", "VIRTUAL_ENV"}
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "fleetscope.settings",
            "SECRET_KEY": "fault-drill-only-not-a-secret-0123456789",
            "FLEETSCOPE_OUTBOUND_ALLOW_LOOPBACK": "true",
            "PYTHONUNBUFFERED": "1",
            **values,
        }
    )
    return env


def manage(*args: str, env: Mapping[str, str], timeout: float = 120.0) -> str:
    """Run `manage.py args` to the end; its output, or an AssertionError that shows it."""
    done = subprocess.run(
        [PYTHON, "manage.py", *args], cwd=ROOT, env=dict(env), capture_output=True,
        text=True, timeout=timeout,
    )  # fmt: skip
    if done.returncode != 0:
        raise AssertionError(f"manage.py {' '.join(args)}: {done.stderr[-3000:]}")
    return done.stdout


@contextmanager
def fleetscope_process(args: list[str], *, env: Mapping[str, str], log: Path) -> Iterator[Process]:
    """A FleetScope process (`args` after the interpreter) in a session of its own; ended
    with its whole group (scrape workers, Celery's pool) when the block exits."""
    with log.open("ab") as out:
        popen = subprocess.Popen(
            [PYTHON, *args], cwd=ROOT, env=dict(env), stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    process = Process(popen, log)
    try:
        yield process
    finally:
        process_group_end(popen, timeout=15)


@dataclass
class Process:
    popen: subprocess.Popen[bytes]
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def alive(self) -> None:
        """Fail the drill, with the process's log, if the process has exited."""
        if self.popen.poll() is not None:
            raise AssertionError(f"exited with {self.popen.returncode}: {log_tail(self.log)}")

    def wait_for_output(self, text: str, *, timeout: float = 30.0, after: int = 0) -> int:
        """Wait until `text` appears in the log past offset `after`; returns its offset."""

        def found() -> int | None:
            self.alive()
            at = self.output().find(text, after)
            return at if at >= 0 else None

        return wait_until(found, timeout=timeout, what=f"{text!r} in {self.log.name}")


def this_test_database_url() -> str:
    """The URL of the database the test runs on (pytest-django's test database), for the
    FleetScope processes a drill starts beside the test."""
    from django.db import connection

    db = connection.settings_dict
    assert db["ENGINE"].endswith("postgresql"), "drills run on PostgreSQL (DATABASE_URL)"
    user = db["USER"] or "postgres"
    auth = f"{user}:{db['PASSWORD']}" if db["PASSWORD"] else user
    return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def celery_worker_args(hostname: str, *, pool: str = "prefork") -> list[str]:
    """A Celery worker as `bin/worker` starts it (prefork), with one pool process, so a
    drill knows which process runs its task."""
    return [
        "-m", "celery", "-A", "fleetscope", "worker", "--pool", pool, "--concurrency", "1",
        "--loglevel", "INFO", "--without-mingle", "--without-gossip",
        "--hostname", f"{hostname}@%h",
    ]  # fmt: skip


def celery_beat_args(schedule: Path) -> list[str]:
    return [
        "-m", "celery", "-A", "fleetscope", "beat", "--loglevel", "INFO", "--max-interval", "1",
        "--schedule", str(schedule),
    ]  # fmt: skip


def kill_now(process: Process) -> None:
    """SIGKILL to the process's whole group at once, as the OOM killer or a lost node ends a
    container: no shutdown handler runs, nothing is acknowledged or given back."""
    with suppress(ProcessLookupError):
        os.killpg(process.popen.pid, signal.SIGKILL)
    process.popen.wait(timeout=10)


def children_of(pid: int) -> list[int]:
    """The process's children (a Celery worker's pool processes), from /proc."""
    children = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(child) for child in children.read_text().split()] if children.exists() else []


# --- PostgreSQL locks --------------------------------------------------------------------


@contextmanager
def table_locked(database_url: str, table: str) -> Iterator[None]:
    """Hold an EXCLUSIVE lock on `table` (reads go on, writes wait) until the block exits:
    a transaction that writes to it stops there, open, for as long as the drill likes."""
    with psycopg.connect(database_url, connect_timeout=5) as conn:
        conn.execute(f'LOCK TABLE "{table}" IN EXCLUSIVE MODE')  # begins the transaction
        try:
            yield
        finally:
            conn.rollback()


def backend_waiting_on_lock(database_url: str, statement_start: str) -> int | None:
    """The PostgreSQL backend whose statement (starting with `statement_start`) waits on a
    lock in this database: its pid, or None while there is none."""
    with psycopg.connect(database_url, autocommit=True, connect_timeout=5) as conn:
        found = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock' AND starts_with(query, %s)",
            (statement_start,),
        ).fetchone()
    return int(found[0]) if found else None


def backend_has_written(database_url: str, pid: int) -> bool:
    """Whether backend `pid`'s open transaction has written anything yet (PostgreSQL gives
    a transaction its id on its first write)."""
    with psycopg.connect(database_url, autocommit=True, connect_timeout=5) as conn:
        found = conn.execute(
            "SELECT backend_xid IS NOT NULL FROM pg_stat_activity WHERE pid = %s", (pid,)
        ).fetchone()
    return bool(found and found[0])


def backend_gone(database_url: str, pid: int) -> bool | None:
    """True once backend `pid` has ended (None while it is still there)."""
    with psycopg.connect(database_url, autocommit=True, connect_timeout=5) as conn:
        found = conn.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()
    return True if found is None else None


# --- A replica that answers when the drill says -----------------------------------------


class HeldReplica:
    """A stand-in for one replica's /metrics: forwards each GET to the real (simulated)
    replica, but while held, a request waits before it is forwarded. A real vLLM cannot be
    made slow on demand; this makes a scrape last as long as a drill needs. Loopback only,
    on a port of its own; `close()` ends it."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.released = threading.Event()
        self.released.set()
        self.waiting = threading.Event()  # a request is being held
        drill = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if not drill.released.is_set():
                    drill.waiting.set()
                    drill.released.wait(timeout=60)
                answer = httpx.get(drill.upstream, timeout=10)
                with suppress(OSError):  # the scraper may have died meanwhile
                    self.send_response(answer.status_code)
                    self.send_header("Content-Type", answer.headers["content-type"])
                    self.send_header("Content-Length", str(len(answer.content)))
                    self.end_headers()
                    self.wfile.write(answer.content)

            def log_message(self, format: str, *args: object) -> None:
                pass  # a request per scrape: nothing a drill reads

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/metrics"

    def hold(self) -> None:
        self.waiting.clear()
        self.released.clear()

    def release(self) -> None:
        self.released.set()

    def close(self) -> None:
        self.release()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)
