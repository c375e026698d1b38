"""`run_query` and `run_queries`: plan on the caller's thread, then run on the chosen backend."""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import replace
from typing import Literal

from django.conf import settings

from inventory.prometheus import PrometheusBadAnswer
from inventory.store import StoreWindow
from queries.buckets import common_edges_only
from queries.deadline import batch_deadline
from queries.local import LOOKBACK_SECONDS, run_local, store_needs
from queries.plan import Plan, plan_query, scoped_inventories, with_gpu_replicas
from queries.promql import Fetched, compile_plan, failed_scrapes, fetch, result_from
from queries.result import QueryResult, failed
from queries.spec import Gauge, Scope, Spec, Window, spec_leaves

Backend = Literal["local", "prometheus"]
# Enough to send a panel page's queries in one parallel round-trip, few enough to be polite.
MAX_PARALLEL_QUERIES = 8


def _finished(plan: Plan, result: QueryResult) -> QueryResult:
    """What both backends do last: keep shared bucket edges, keep the scope's GPUs and name
    the replica on each (`with_gpu_replicas`), and say `partial` when some endpoints of the
    scope expose none of a key's names (the plan's warnings name them)."""
    result = with_gpu_replicas(plan, common_edges_only(plan, result))
    if result.status == "ok" and any(key.missing for key in plan.keys.values()):
        return replace(result, status="partial")
    return result


def _execute(plan: Plan, backend: Backend, store: StoreWindow | None = None) -> QueryResult:
    if backend == "local":
        return _finished(plan, run_local(plan, store))
    return _run_on_prometheus({"": plan})[""]


def _reach(plan: Plan) -> float:
    """How far before the window the plan's specs look (ranges; the gauge lookback)."""
    return max(
        LOOKBACK_SECONDS if isinstance(spec, Gauge) else spec.window_seconds
        for spec in spec_leaves(plan.spec)
    )


def _run_on_prometheus(plans: Mapping[str, Plan]) -> dict[str, QueryResult]:
    """Compile every plan, send each distinct PromQL once (p50, p90 and p99 of a histogram
    share their bucket rates), read `up` once for the page's instances, and build each
    plan's result from the shared answers.

    Returns by the page's deadline (`queries.deadline`) whatever Prometheus does: a plan
    whose answer is not in by then fails with reason `deadline`, the others keep theirs."""
    if not settings.PROMETHEUS_URL:
        return {
            name: failed("no-prometheus", "PROMETHEUS_URL is not set", plan.resolved_name)
            for name, plan in plans.items()
        }
    deadline = batch_deadline()
    if deadline.remaining() <= 0:
        # An earlier batch of the page used it all up: asking now could only add to the wait.
        return {n: failed("deadline", deadline.message, p.resolved_name) for n, p in plans.items()}
    base_url = settings.PROMETHEUS_URL
    timeout = settings.PROMETHEUS_TIMEOUT_SECONDS
    compiled = {name: compile_plan(plan) for name, plan in plans.items()}
    distinct = list(dict.fromkeys((c.promql, plans[n].window) for n, c in compiled.items()))
    instances = sorted(
        {i for plan in plans.values() for k in plan.keys.values() for i in k.instances}
    )
    widest = max(plans.values(), key=lambda plan: plan.window.end - plan.window.start)
    reach = max(_reach(plan) for plan in plans.values())

    def up() -> tuple[dict[str, int], str]:
        """Failed scrapes per instance, and why they are unknown ("" when they are not)."""
        try:
            found = failed_scrapes(
                instances,
                widest.window,
                reach,
                base_url=base_url,
                timeout_seconds=deadline.request_timeout(timeout),
            )
        except PrometheusBadAnswer as exc:
            return {}, str(exc)
        return found, ""

    def one(key: tuple[str, Window]) -> Fetched:
        # Timed when a worker takes it: a query queued behind slow ones gets what is left.
        return fetch(
            key[0], key[1], base_url=base_url, timeout_seconds=deadline.request_timeout(timeout)
        )

    waiting: dict[tuple[str, Window], list[str]] = {}
    for name, plan in plans.items():
        waiting.setdefault((compiled[name].promql, plan.window), []).append(name)
    workers = max(1, min(MAX_PARALLEL_QUERIES, len(distinct) + 1))
    drafts: dict[str, QueryResult] = {}
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="promql")
    try:
        failures = pool.submit(up)
        futures = {pool.submit(one, key): key for key in distinct}
        try:
            # Each answer is turned into its plans' results as it arrives, while the slower
            # queries are still out: the conversion overlaps the wait instead of adding to it.
            for future in as_completed(futures, timeout=deadline.remaining()):
                for name in waiting[futures[future]]:
                    drafts[name] = result_from(plans[name], compiled[name], future.result())
        except TimeoutError:
            pass  # the rest fail with the deadline's message below
        failed_by_instance, unknown = _up_by(failures, deadline.remaining(), deadline.message)
    finally:
        # Never wait for stuck requests (a `with` block would): each ends at its own
        # timeout, capped just past the deadline; queued ones are dropped unsent.
        pool.shutdown(wait=False, cancel_futures=True)
    for name, plan in plans.items():
        drafts.setdefault(name, failed("deadline", deadline.message, plan.resolved_name))
    return {
        name: _finished(plan, _with_failed_scrapes(plan, drafts[name], failed_by_instance, unknown))
        for name, plan in plans.items()
    }


def _up_by(
    failures: Future[tuple[dict[str, int], str]], seconds: float, late: str
) -> tuple[dict[str, int], str]:
    """The `up` answer if it is in within `seconds`; else unknown, saying why."""
    try:
        return failures.result(timeout=seconds)
    except TimeoutError:
        return {}, late


def _with_failed_scrapes(
    plan: Plan, result: QueryResult, failed: Mapping[str, int], unknown: str = ""
) -> QueryResult:
    """The local backend's `partial` for failed scrapes, from Prometheus' `up`; `partial`
    too when `up` came back malformed (`unknown` says how), as no one can tell then."""
    if not result.has_data:
        return result
    if unknown:
        note = f"failed scrapes unknown: {unknown}"
        return replace(result, status="partial", warnings=(*result.warnings, note))
    read = {i for key in plan.keys.values() for i in key.instances}
    found = sorted((i, n) for i, n in failed.items() if i in read)
    if not found:
        return result
    notes = tuple(f"{i}: {n} failed scrape(s) in the window, shown as gaps" for i, n in found)
    return replace(result, status="partial", warnings=(*result.warnings, *notes))


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
    elif todo:
        results.update(_run_on_prometheus(todo))
    return {name: results[name] for name in specs}


def promql_of(
    specs: Mapping[str, Spec], *, scope: Scope, window: Window,
    windows: Mapping[str, Window] | None = None,
) -> dict[str, str | None]:  # fmt: skip
    """The PromQL the Prometheus backend sends for each spec on `scope` (None where the
    scope cannot answer it), for provenance: a figure says which query it came from. The
    scope's inventories are read once for all of them, as `run_queries` does."""
    inventories = scoped_inventories(scope)
    found: dict[str, str | None] = {}
    for name, spec in specs.items():
        plan = plan_query(
            spec, scope=scope, window=(windows or {}).get(name, window), inventories=inventories
        )
        found[name] = None if isinstance(plan, QueryResult) else compile_plan(plan).promql
    return found
