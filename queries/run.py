"""`run_query` and `run_queries`: plan on the caller's thread, then run on the chosen backend."""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Literal

from django.conf import settings

from inventory.store import StoreWindow
from queries.buckets import common_edges_only
from queries.local import run_local, store_needs
from queries.plan import Plan, plan_query, scoped_inventories
from queries.promql import run_prometheus
from queries.result import QueryResult, failed
from queries.spec import Scope, Spec, Window

Backend = Literal["local", "prometheus"]
# Enough to send a panel page's queries in one parallel round-trip, few enough to be polite.
MAX_PARALLEL_QUERIES = 8


def _execute(plan: Plan, backend: Backend, store: StoreWindow | None = None) -> QueryResult:
    if backend == "local":
        return common_edges_only(plan, run_local(plan, store))
    if not settings.PROMETHEUS_URL:
        return failed("no-prometheus", "PROMETHEUS_URL is not set", plan.resolved_name)
    result = run_prometheus(
        plan,
        base_url=settings.PROMETHEUS_URL,
        timeout_seconds=settings.PROMETHEUS_TIMEOUT_SECONDS,
    )
    return common_edges_only(plan, result)


def run_query(spec: Spec, *, scope: Scope, window: Window, backend: Backend) -> QueryResult:
    """Resolve `spec`'s keys on `scope`'s inventory and run it; never raises for missing
    data or a failing Prometheus (the result says what happened)."""
    plan = plan_query(spec, scope=scope, window=window)
    if isinstance(plan, QueryResult):
        return plan
    return _execute(plan, backend)


def run_queries(
    specs: Mapping[str, Spec],
    *,
    scope: Scope,
    window: Window,
    backend: Backend,
    windows: Mapping[str, Window] | None = None,
) -> dict[str, QueryResult]:
    """Several independent specs; against Prometheus they run concurrently. `windows`
    gives some specs their own window (a table's single point at the end of a chart's
    range, say) while still sharing the store read or the parallel round-trip.

    Planning reads the database, so it happens here, on the caller's thread; the
    worker threads only do HTTP. The local backend reads the database while it
    evaluates, so it stays on this thread (and inside the caller's transaction);
    it reads the store once for all plans (one window over the union of their
    endpoints, names and spans) and evaluates every plan from that.
    """
    inventories = scoped_inventories(scope)
    planned = {
        name: plan_query(
            spec, scope=scope, window=(windows or {}).get(name, window), inventories=inventories
        )
        for name, spec in specs.items()
    }
    results = {n: p for n, p in planned.items() if isinstance(p, QueryResult)}
    todo = {n: p for n, p in planned.items() if isinstance(p, Plan)}
    if backend == "local":
        store = StoreWindow.covering(need for plan in todo.values() for need in store_needs(plan))
        results.update({name: _execute(plan, backend, store) for name, plan in todo.items()})
    elif len(todo) <= 1:
        results.update({name: _execute(plan, backend) for name, plan in todo.items()})
    else:
        workers = min(MAX_PARALLEL_QUERIES, len(todo))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="promql") as pool:
            futures = {name: pool.submit(_execute, plan, backend) for name, plan in todo.items()}
            results.update({name: future.result() for name, future in futures.items()})
    return {name: results[name] for name in specs}
