"""FleetScope settings, read from the environment (see README, "Configuration").

With no variables set except SECRET_KEY this runs the embedded mode: SQLite
under var/, in-process scheduler, in-memory channel layer. DATABASE_URL,
REDIS_URL and PROMETHEUS_URL switch each part to its production backend.
"""

from __future__ import annotations

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from fleetscope.env import Env, writable_dir
from fleetscope.lib.channel_layers import redis_channel_layers
from fleetscope.lib.redis_settings import RedisTimeouts, celery_transport_options, redis_caches

env = Env()

# Where templates/ and static/ are: the checkout holding this package, or, where the
# package is installed from a wheel (the image), the directory named here.
BASE_DIR = Path(env.str("FLEETSCOPE_APP_DIR") or Path(__file__).resolve().parent.parent)
if not (BASE_DIR / "templates").is_dir():
    raise ImproperlyConfigured(
        f"FLEETSCOPE_APP_DIR: {str(BASE_DIR)!r} has no templates/ directory "
        "(set it to the directory that holds templates/ and static/)"
    )
VAR_DIR = Path(env.str("FLEETSCOPE_VAR_DIR") or BASE_DIR / "var")

DEBUG = env.bool("DEBUG", default=False)

SECRET_KEY = env.secret("SECRET_KEY")
if SECRET_KEY is None:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY: required when DEBUG is off (set SECRET_KEY or SECRET_KEY_FILE)"
        )
    SECRET_KEY = "debug-only-insecure-key"

ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
if "*" in ALLOWED_HOSTS and not DEBUG:
    raise ImproperlyConfigured(
        "ALLOWED_HOSTS: '*' is refused when DEBUG is off; list the host names users type"
    )
CSRF_TRUSTED_ORIGINS = env.origins("CSRF_TRUSTED_ORIGINS")

# --- Services --------------------------------------------------------------

_database_url = env.url("DATABASE_URL", frozenset({"postgres", "postgresql", "sqlite"}))
if _database_url is None:
    # The embedded database lives there: find out now, not on the first write.
    writable_dir("FLEETSCOPE_VAR_DIR", VAR_DIR)
    DATABASES: dict[str, dj_database_url.DBConfig] = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": str(VAR_DIR / "fleetscope.sqlite3"),
            # The scheduler thread writes while requests read: wait instead of failing.
            "OPTIONS": {"timeout": 20, "transaction_mode": "IMMEDIATE"},
        }
    }
else:
    try:
        # The URL as written: urlsplit's geturl() turns sqlite:////abs/path into a
        # relative path (sqlite://abs/path).
        _db = dj_database_url.parse(str(env.raw("DATABASE_URL")), conn_health_checks=True)
    except ValueError as exc:
        raise ImproperlyConfigured(f"DATABASE_URL: {exc}") from None
    if _db["ENGINE"].endswith("sqlite3"):
        _db["OPTIONS"] = {"timeout": 20, "transaction_mode": "IMMEDIATE"}
    else:
        _db.setdefault("OPTIONS", {})["connect_timeout"] = env.int(
            "DATABASE_CONNECT_TIMEOUT_SECONDS", 5, minimum=1
        )
        # 0: closed after each request. Under ASGI every request (and every database call of
        # a websocket consumer) runs in a thread of its own, so a connection kept for reuse
        # is never reused: it stays open until garbage-collected, and one web process held
        # ~60 under 50 viewers (benchmarks/load.py), past PostgreSQL's 100 with two. Django's
        # docs: "When using ASGI, persistent connections should be disabled."
        _db["CONN_MAX_AGE"] = env.int("DATABASE_CONN_MAX_AGE_SECONDS", 0, minimum=0)
    DATABASES = {"default": _db}

_redis_url = env.url("REDIS_URL", frozenset({"redis", "rediss", "unix"}))
REDIS_URL = _redis_url.geturl() if _redis_url else None
# Every Redis client (cache, channel layer, Celery broker) fails within these, down or silent.
REDIS_CONNECT_TIMEOUT_SECONDS = env.float("REDIS_CONNECT_TIMEOUT_SECONDS", 2.0, minimum=0.1)
REDIS_TIMEOUT_SECONDS = env.float("REDIS_TIMEOUT_SECONDS", 3.0, minimum=0.1)
_redis_timeouts = RedisTimeouts(REDIS_CONNECT_TIMEOUT_SECONDS, REDIS_TIMEOUT_SECONDS)

_prometheus_url = env.url("PROMETHEUS_URL", frozenset({"http", "https"}))
PROMETHEUS_URL = _prometheus_url.geturl().rstrip("/") if _prometheus_url else None
PROMETHEUS_TIMEOUT_SECONDS = env.float("PROMETHEUS_TIMEOUT_SECONDS", 10.0, minimum=0.1)
# One page (or live computation) waits this long for all its queries together, then shows
# what came back and says the rest missed the deadline (queries/deadline.py).
PROMETHEUS_BATCH_DEADLINE_SECONDS = env.float(
    "PROMETHEUS_BATCH_DEADLINE_SECONDS", 15.0, minimum=0.1
)

FLEETSCOPE_SCRAPE_INTERVAL_SECONDS = env.int("FLEETSCOPE_SCRAPE_INTERVAL_SECONDS", 15, minimum=1)
# Scrape limits per target (README, "Scraping"). Prometheus has the same knobs, off by default.
FLEETSCOPE_SCRAPE_TIMEOUT_SECONDS = env.float(
    "FLEETSCOPE_SCRAPE_TIMEOUT_SECONDS", 10.0, minimum=0.1
)
FLEETSCOPE_SCRAPE_BODY_LIMIT_BYTES = env.int(
    "FLEETSCOPE_SCRAPE_BODY_LIMIT_BYTES", 16 * 1024 * 1024, minimum=1024
)
FLEETSCOPE_SCRAPE_SAMPLE_LIMIT = env.int("FLEETSCOPE_SCRAPE_SAMPLE_LIMIT", 200_000, minimum=1)
FLEETSCOPE_SCRAPE_LABEL_LIMIT = env.int("FLEETSCOPE_SCRAPE_LABEL_LIMIT", 64, minimum=1)
FLEETSCOPE_SCRAPE_LABEL_NAME_LIMIT_BYTES = env.int(
    "FLEETSCOPE_SCRAPE_LABEL_NAME_LIMIT_BYTES", 256, minimum=1
)
FLEETSCOPE_SCRAPE_LABEL_VALUE_LIMIT_BYTES = env.int(
    "FLEETSCOPE_SCRAPE_LABEL_VALUE_LIMIT_BYTES", 4096, minimum=1
)
# Scrape worker processes (0: scrape inside the calling process) and requests in flight.
FLEETSCOPE_SCRAPE_PROCESSES = env.int(
    "FLEETSCOPE_SCRAPE_PROCESSES", min(os.cpu_count() or 1, 4), minimum=0
)
FLEETSCOPE_SCRAPE_CONCURRENCY = env.int("FLEETSCOPE_SCRAPE_CONCURRENCY", 64, minimum=1)
# Where scrapes may go. Link-local and cloud metadata addresses are always refused.
FLEETSCOPE_OUTBOUND_ALLOW = env.list("FLEETSCOPE_OUTBOUND_ALLOW", [])


def _check_outbound_allow(entries: list[str]) -> None:
    """The scrape pool and the registration form build this policy later; a bad entry
    would fail there on every cycle and form, so it fails start-up instead."""
    from inventory.scraping import OutboundPolicy

    try:
        OutboundPolicy(allow=entries)
    except ValueError as exc:
        raise ImproperlyConfigured(f"FLEETSCOPE_OUTBOUND_ALLOW: {exc}") from None


_check_outbound_allow(FLEETSCOPE_OUTBOUND_ALLOW)
FLEETSCOPE_OUTBOUND_ALLOW_LOOPBACK = env.bool("FLEETSCOPE_OUTBOUND_ALLOW_LOOPBACK", default=False)
# Embedded sample store: how long frames are kept and their minimum spacing per endpoint.
FLEETSCOPE_STORE_RETENTION_HOURS = env.float("FLEETSCOPE_STORE_RETENTION_HOURS", 24.0, minimum=0.1)
FLEETSCOPE_STORE_RESOLUTION_SECONDS = env.float(
    "FLEETSCOPE_STORE_RESOLUTION_SECONDS", 0.0, minimum=0.0
)
# Decompressed frame values kept per process for the next read (the live overview rereads
# the same hour every interval); a bound in MiB, 0 turns the cache off.
FLEETSCOPE_FRAME_CACHE_MB = env.float("FLEETSCOPE_FRAME_CACHE_MB", 256.0, minimum=0.0)

# Bearer token Alertmanager sends to POST /incidents/alertmanager/; unset: the webhook is off.
FLEETSCOPE_ALERTMANAGER_TOKEN = env.secret("FLEETSCOPE_ALERTMANAGER_TOKEN") or ""
if FLEETSCOPE_ALERTMANAGER_TOKEN and len(FLEETSCOPE_ALERTMANAGER_TOKEN) < 16:
    raise ImproperlyConfigured(
        "FLEETSCOPE_ALERTMANAGER_TOKEN: use at least 16 characters (e.g. openssl rand -hex 24)"
    )

# Embedded mode runs periodic jobs in the web process; production uses Celery beat.
FLEETSCOPE_INPROCESS_SCHEDULER = REDIS_URL is None

# --- Django ----------------------------------------------------------------

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "inventory",
    "dashboard",
    "triage",
    "slo",
    "capacity",
    "blindspots",
    "audit",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "fleetscope.middleware.ContentSecurityPolicyMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "fleetscope.middleware.ApiTokenMiddleware",
    "audit.middleware.AuditActorMiddleware",
    "fleetscope.middleware.LoginRequiredMiddleware",
    "fleetscope.middleware.RoleRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "fleetscope.sessions.IdleSessionMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "fleetscope.urls"
ASGI_APPLICATION = "fleetscope.asgi.application"
WSGI_APPLICATION = "fleetscope.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "fleetscope.context.navigation",
            ],
        },
    },
]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboard-fleet-list"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
    # plotly.min.js comes from the installed plotly package, never a CDN.
    "fleetscope.staticfinders.PlotlyFinder",
]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
# Without collectstatic (demo, tests) whitenoise serves straight from the finders.
WHITENOISE_USE_FINDERS = True

SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
# FLEETSCOPE_HTTPS: users reach FleetScope over HTTPS only (README, "Security").
_https = env.bool("FLEETSCOPE_HTTPS", default=False)
SESSION_COOKIE_SECURE = _https
CSRF_COOKIE_SECURE = _https
# Behind a TLS-terminating proxy the request arrives as plain HTTP: Django may believe the
# proxy's X-Forwarded-Proto only when the proxy always sets it (a client could send it too).
if env.bool("FLEETSCOPE_TRUST_X_FORWARDED_PROTO", default=_https):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = _https
# Probes and Alertmanager call the container directly, over plain HTTP inside its network:
# a redirect would fail them and protect nothing (the request has already been sent).
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^incidents/alertmanager/$"]
SECURE_HSTS_SECONDS = env.int("FLEETSCOPE_HSTS_SECONDS", 365 * 86400 if _https else 0, minimum=0)
# Names under FleetScope's own host only, never its parent domain's other hosts.
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
# check --deploy asks for HSTS preload (security.W021). Preloading is for the owner of a
# whole registrable domain to decide (browsers ship the list, and leaving it takes months);
# FleetScope is one host in someone's domain, so the choice is not its to make.
SILENCED_SYSTEM_CHECKS = ["security.W021"]
# Sessions end after this long without a request: fleetscope.sessions slides the expiry.
SESSION_COOKIE_AGE = 60 * env.int("FLEETSCOPE_SESSION_IDLE_MINUTES", 12 * 60, minimum=5)
# Failed logins per username and per client address, within the window, before further
# attempts are refused (fleetscope.login_limit; the counts live in the cache).
FLEETSCOPE_LOGIN_ATTEMPTS = env.int("FLEETSCOPE_LOGIN_ATTEMPTS", 5, minimum=1)
FLEETSCOPE_LOGIN_WINDOW_MINUTES = env.int("FLEETSCOPE_LOGIN_WINDOW_MINUTES", 15, minimum=1)

# --- Channels and Celery ---------------------------------------------------

if REDIS_URL:
    CHANNEL_LAYERS = redis_channel_layers(REDIS_URL, timeouts=_redis_timeouts)
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# Live overviews are computed once and read by every viewer: the cache must be shared
# between processes in production (Redis), and is in-process in the embedded mode.
if REDIS_URL:
    CACHES = redis_caches(REDIS_URL, _redis_timeouts)
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = 120
CELERY_TASK_TIME_LIMIT = 180
CELERY_TIMEZONE = "UTC"
CELERY_BROKER_CONNECTION_TIMEOUT = REDIS_CONNECT_TIMEOUT_SECONDS
# celery#6911: publishing to a dead broker can hang; bound every attempt.
# A task whose worker died mid-way (SIGKILL, OOM, a lost node) is delivered again this long
# after it was first delivered: above the hard time limit, so a task still running is never
# handed to a second worker; far below Redis' default of an hour, so an incident's walk
# whose worker died runs minutes later, not an hour later. A scrape, heartbeat or live
# overview has expired by then and is dropped: the next beat tick does its work
# (schedule.py), a scrape once the dead worker's lease has lapsed (3 scrape timeouts).
# Pruning and the monthly cost report may run again, which changes nothing.
# Drilled in tests/drills/test_worker_killed.py.
CELERY_BROKER_TRANSPORT_OPTIONS = celery_transport_options(
    _redis_timeouts, redeliver_after_seconds=CELERY_TASK_TIME_LIMIT + 120
)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env.log_level("LOG_LEVEL", "INFO")},
    # httpx logs every request at INFO: one line per endpoint per scrape cycle is noise.
    "loggers": {"httpx": {"level": "WARNING"}, "httpcore": {"level": "WARNING"}},
}
