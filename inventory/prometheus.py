"""The one module that talks to Prometheus. Read-only API paths, mandatory timeouts.

A thin httpx client rather than prometheus-api-client's `PrometheusConnect`,
measured against 0.7.2: its query methods return only `data.result` (the
`warnings` that mark a partial answer are dropped), put the whole response
body in their exception text, round range bounds to whole seconds, default
to no timeout and mount urllib3 retries on 5xx (which would double the
Celery retry layer). httpx through `inventory.scraping.outbound.sync_client` gets the
read-only guard and its observers on every request for free. The library stays
the reference: tests/inventory/test_prometheus_reference.py asks a real
Prometheus through both and requires the same answers.

No retries here: a page answers with one attempt, and background tasks retry
the exceptions whose `retryable` is true. Bad queries are never retried.
"""

from __future__ import annotations

import math
import os
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import httpx
import orjson
import requests
from prometheus_api_client import PrometheusApiClientException, PrometheusConnect
from urllib3.util.retry import Retry

from fleetscope.lib.utc import unix_millis
from inventory.scraping import AnswerTooLarge, requests_session, sync_client

# The only paths FleetScope asks a Prometheus for.
READ_ONLY_PATHS = frozenset(
    {
        "/api/v1/query",
        "/api/v1/query_range",
        "/api/v1/rules",
        "/api/v1/label/__name__/values",
        "/api/v1/status/buildinfo",
        "/api/v1/targets",
    }
)
# A dashboard never needs more; a bigger answer is a runaway query, not data.
MAX_RESPONSE_BYTES = 32 * 1024 * 1024
EXCERPT_CHARS = 160
# What each query API may answer (Prometheus' documented `resultType`s).
RANGE_RESULT_TYPES = frozenset({"matrix"})
INSTANT_RESULT_TYPES = frozenset({"vector", "matrix"})


class PrometheusError(Exception):
    """Prometheus could not answer; the message names the reason, never the response body."""

    retryable = False
    reason = "server-error"


class PrometheusUnavailable(PrometheusError):
    """Nothing answered: connection refused, DNS failure, reset."""

    retryable = True
    reason = "prometheus-unavailable"


class PrometheusTimeout(PrometheusError):
    """Our deadline passed, or Prometheus' own query timeout fired (503 `timeout`)."""

    retryable = True
    reason = "timeout"


class PrometheusBadQuery(PrometheusError):
    """400 `bad_data` or 422 `execution`: the query is wrong and asking again will not help."""

    retryable = False
    reason = "bad-query"


class PrometheusServerError(PrometheusError):
    """5xx, a proxy's HTML page, or an answer that is not Prometheus JSON."""

    retryable = True
    reason = "server-error"


class PrometheusBadAnswer(PrometheusError):
    """A 200 `success` whose JSON is not in the shape Prometheus' API documents (no `data`,
    a `result` that is not a list, rows that are not series, value pairs that are not
    `[time, "value"]`): a broken proxy, or something else on Prometheus' port. Asking
    again gets the same answer. The message says what was wrong, never what was sent."""

    retryable = False
    reason = "bad-answer"

    def __init__(self, what: str) -> None:
        super().__init__(f"prometheus answered success in the wrong shape: {what}")


@dataclass(frozen=True)
class PrometheusAnswer:
    """A successful query: `result_type` (matrix, vector, ...), the raw `result`, and any
    `warnings` Prometheus attached (a partial answer)."""

    result_type: str
    result: list[dict[str, Any]]
    warnings: tuple[str, ...]


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """A short, printable, escaped piece of untrusted text for an error message."""
    flat = " ".join(text.split())
    # Control characters (terminal escapes) and non-ASCII (RTL overrides) shown as \x.. / \u....
    shown = "".join(
        c if c.isascii() and c.isprintable() else c.encode("unicode_escape").decode("ascii")
        for c in flat[:limit]
    )
    return shown + ("..." if len(flat) > limit else "")


def _url(base_url: str, path: str) -> str:
    if path not in READ_ONLY_PATHS:
        raise ValueError(f"{path} is not a read-only Prometheus API path FleetScope uses")
    return base_url.rstrip("/") + path


def _read_capped(response: httpx.Response) -> bytes:
    chunks, size = [], 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > MAX_RESPONSE_BYTES:
            raise PrometheusServerError(
                f"prometheus answer exceeds {MAX_RESPONSE_BYTES // (1024 * 1024)} MiB"
            )
        chunks.append(chunk)
    return b"".join(chunks)


# Each request passes its own timeout; this only applies to a request that does not.
DEFAULT_TIMEOUT_SECONDS = 10.0
_client: httpx.Client | None = None
_client_pid = 0
_client_lock = threading.Lock()


def _shared_client() -> httpx.Client:
    """One client per process, shared by the threads of a page's parallel queries: its
    connections stay open between queries and its TLS context is built once (a new
    client per query cost about 14 ms each, most of an overview's overhead over plain
    PromQL). Per process, because a forked worker must not reuse its parent's sockets."""
    global _client, _client_pid
    with _client_lock:
        if _client is None or _client_pid != os.getpid():
            _client = sync_client(timeout_seconds=DEFAULT_TIMEOUT_SECONDS)
            _client_pid = os.getpid()
        return _client


def _fetch(
    url: str, *, timeout_seconds: float, params: Mapping[str, str] | None = None
) -> tuple[int, str, bytes]:
    timeout = httpx.Timeout(timeout_seconds)
    try:
        with _shared_client().stream("GET", url, params=params, timeout=timeout) as response:
            return (
                response.status_code,
                response.headers.get("content-type", ""),
                _read_capped(response),
            )
    except httpx.TimeoutException:
        raise PrometheusTimeout(f"prometheus timed out after {timeout_seconds:g}s") from None
    except httpx.HTTPError as exc:
        raise PrometheusUnavailable(f"prometheus unreachable: {type(exc).__name__}") from None


def _decode(status: int, content_type: str, body: bytes) -> dict[str, Any] | None:
    if "json" not in content_type:
        return None
    try:
        # orjson: a busy overview parses megabytes of answers per interval, several times
        # faster than json; its errors are ValueErrors too.
        decoded = orjson.loads(body)
    except ValueError:
        return None
    return decoded if isinstance(decoded, dict) else None


def _raise_for(status: int, content_type: str, payload: dict[str, Any] | None) -> None:
    if payload is None:
        kind = "an HTML page" if "html" in content_type else "something that is not JSON"
        raise PrometheusServerError(f"prometheus answered HTTP {status} with {kind}")
    error_type = str(payload.get("errorType", ""))
    detail = excerpt(str(payload.get("error", "")))
    if status in (400, 422) or error_type in ("bad_data", "execution"):
        raise PrometheusBadQuery(
            f"prometheus rejected the query ({error_type or status}): {detail}"
        )
    if error_type == "timeout":
        raise PrometheusTimeout(f"prometheus query timed out on the server: {detail}")
    raise PrometheusServerError(f"prometheus answered HTTP {status} ({error_type or 'error'})")


def _api_get(
    base_url: str, path: str, *, timeout_seconds: float, params: Mapping[str, str] | None = None
) -> dict[str, Any]:
    status, content_type, body = _fetch(
        _url(base_url, path), timeout_seconds=timeout_seconds, params=params
    )
    payload = _decode(status, content_type, body)
    if status != 200 or payload is None or payload.get("status") != "success":
        _raise_for(status, content_type, payload)
        raise PrometheusServerError("prometheus answered a status other than success")
    return payload


def is_sample_pair(value: object) -> bool:
    """`[time, "value"]`, as Prometheus writes one sample."""
    return (
        isinstance(value, list)
        and len(value) == 2
        and isinstance(value[0], int | float)
        and not isinstance(value[0], bool)
        and isinstance(value[1], str)
    )


def _answer(payload: dict[str, Any], result_types: frozenset[str]) -> PrometheusAnswer:
    """The answer, once its shape is what the API documents for `result_types`: every row
    an object with string labels, a matrix row's `values` a list (its pairs are checked
    where they are read, in numpy), a vector row's `value` one sample pair."""
    data = payload.get("data")
    if not isinstance(data, dict):
        raise PrometheusBadAnswer("no data object")
    result_type, result = data.get("resultType"), data.get("result")
    if not isinstance(result, list):
        raise PrometheusBadAnswer("result is not a list")
    if result_type not in result_types:
        wanted = " or ".join(sorted(result_types))
        shown = excerpt(str(result_type), 20)
        raise PrometheusBadAnswer(f"result type {shown!r} where a {wanted} was expected")
    for row in result:
        if not isinstance(row, dict):
            raise PrometheusBadAnswer("a series is not an object")
        metric = row.get("metric")
        if not isinstance(metric, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in metric.items()
        ):
            raise PrometheusBadAnswer("a series' labels are not an object of strings")
        if result_type == "matrix" and not isinstance(row.get("values", []), list):
            raise PrometheusBadAnswer("a series' values are not a list")
        if result_type == "vector" and not is_sample_pair(row.get("value")):
            raise PrometheusBadAnswer('a sample\'s value pair is not [time, "value"]')
    warnings = payload.get("warnings") or []
    if not isinstance(warnings, list):
        raise PrometheusBadAnswer("warnings are not a list")
    return PrometheusAnswer(str(result_type), result, tuple(excerpt(str(w)) for w in warnings))


def _millis(seconds: float) -> str:
    """Seconds as Prometheus reads them, rounded as the window's grid is (`unix_millis`)."""
    return f"{unix_millis(seconds) / 1000:.3f}"


def _seconds(at: datetime) -> str:
    if at.tzinfo is None:
        raise ValueError("Prometheus times must be timezone-aware (UTC)")
    return _millis(at.timestamp())


def prometheus_query_range(
    base_url: str,
    *,
    query: str,
    start: datetime,
    end: datetime,
    step_seconds: float,
    timeout_seconds: float,
) -> PrometheusAnswer:
    """GET /api/v1/query_range; Prometheus also gets the deadline, so it stops evaluating."""
    if not (math.isfinite(timeout_seconds) and timeout_seconds > 0):
        raise ValueError("a Prometheus query needs a positive timeout")
    params = {
        "query": query,
        "start": _seconds(start),
        "end": _seconds(end),
        "step": _millis(step_seconds),
        "timeout": f"{timeout_seconds:g}s",
    }
    payload = _api_get(
        base_url, "/api/v1/query_range", timeout_seconds=timeout_seconds, params=params
    )
    return _answer(payload, RANGE_RESULT_TYPES)


def prometheus_query(
    base_url: str, *, query: str, at: datetime, timeout_seconds: float
) -> PrometheusAnswer:
    """GET /api/v1/query at one instant: a vector, or a matrix for a range selector
    (scalar and string answers are refused; FleetScope asks for neither)."""
    if not (math.isfinite(timeout_seconds) and timeout_seconds > 0):
        raise ValueError("a Prometheus query needs a positive timeout")
    params = {"query": query, "time": _seconds(at), "timeout": f"{timeout_seconds:g}s"}
    payload = _api_get(base_url, "/api/v1/query", timeout_seconds=timeout_seconds, params=params)
    return _answer(payload, INSTANT_RESULT_TYPES)


def prometheus_ping(base_url: str, *, timeout_seconds: float) -> None:
    """Succeed when Prometheus answers its build-info API; raise PrometheusError otherwise."""
    _api_get(base_url, "/api/v1/status/buildinfo", timeout_seconds=timeout_seconds)


def prometheus_active_targets(base_url: str, *, timeout_seconds: float) -> dict[str, Any]:
    """The JSON of /api/v1/targets?state=active (read-only)."""
    return _api_get(
        base_url, "/api/v1/targets", timeout_seconds=timeout_seconds, params={"state": "active"}
    )


def prometheus_rules(base_url: str, *, timeout_seconds: float) -> dict[str, Any]:
    """The JSON of /api/v1/rules: every rule group Prometheus evaluates (read-only)."""
    return _api_get(base_url, "/api/v1/rules", timeout_seconds=timeout_seconds)


# Where prometheus-api-client reads every metric name (the __name__ label's values).
METRIC_NAMES_PATH = "/api/v1/label/__name__/values"


def prometheus_metric_names(
    base_url: str, *, start: datetime, end: datetime, timeout_seconds: float
) -> frozenset[str]:
    """Every metric name Prometheus holds a sample of between `start` and `end`, stale or
    not: prometheus-api-client's `all_metrics`, on a GET-only session without retries."""
    client = PrometheusConnect(
        url=base_url.rstrip("/"),
        session=requests_session(max_body_bytes=MAX_RESPONSE_BYTES),
        timeout=timeout_seconds,
        retry=Retry(total=0),
    )
    params = {"start": _seconds(start), "end": _seconds(end)}
    try:
        names = client.all_metrics(params=params)
    except AnswerTooLarge as exc:
        raise PrometheusServerError(f"prometheus {exc}") from exc
    except requests.Timeout as exc:
        raise PrometheusTimeout(f"prometheus did not answer within {timeout_seconds:g} s") from exc
    except requests.ConnectionError as exc:
        raise PrometheusUnavailable(f"prometheus unreachable: {type(exc).__name__}") from exc
    except PrometheusApiClientException as exc:
        # Its message is "HTTP Status Code N (body)": the status only, never the body.
        status = re.search(r"HTTP Status Code (\d+)", str(exc))
        shown = f"HTTP {status.group(1)}" if status else "an error"
        raise PrometheusServerError(f"prometheus answered {shown}") from exc
    except (ValueError, KeyError, TypeError) as exc:  # not JSON, or JSON without `data`
        raise PrometheusBadAnswer(f"{METRIC_NAMES_PATH} gave no list of names") from exc
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise PrometheusBadAnswer(f"{METRIC_NAMES_PATH} gave no list of names")
    return frozenset(names)
