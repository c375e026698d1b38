"""The public entry points: one replica's exposition, and a whole fleet served in-process."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any

from prometheus_client.exposition import generate_latest
from prometheus_client.registry import CollectorRegistry

from fleetsim.config import check_options
from fleetsim.families import FamiliesCollector, Family, render_go_style
from fleetsim.fleet import FleetModel
from fleetsim.replica import Replica
from fleetsim.scenarios import install
from fleetsim.server import Listener, MetricsServer, PortInUseError, text_render
from fleetsim.targets import (
    Slot,
    Target,
    complete_manifest,
    hidden_run,
    make_target,
    port_plan,
)

if TYPE_CHECKING:
    from fleetsim.history import History

__all__ = [
    "Fleet", "PortInUseError", "Target", "continue_fleet", "sample_exposition", "start_fleet",
]  # fmt: skip

SAMPLE_EPOCH = 1_767_225_600.0  # 2026-01-01T00:00:00Z: fixed so samples are reproducible
TICK_S = 0.5


def exposition(families: list[Family]) -> bytes:
    """Classic text format 0.0.4 exactly as prometheus_client writes it."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(FamiliesCollector(lambda: families))
    return generate_latest(registry)


def sample_exposition(
    *,
    dialect: str = "current",
    dp: int = 1,
    seed: int = 0,
    warm_seconds: float = 300.0,
    max_model_len: int | None = None,
) -> str:
    """One replica's /metrics body after `warm_seconds` of steady simulated traffic."""
    check_options(replicas=1, dialect=dialect, dp=dp)
    model = FleetModel(
        replicas=1,
        dialect=dialect,
        dp=dp,
        seed=seed,
        epoch=SAMPLE_EPOCH,
        max_model_len=max_model_len,
    )
    model.advance_to(warm_seconds)
    return exposition(model.vllm_families(0)).decode("utf-8")


class Fleet:
    """A fleet served on loopback ports by background threads of this process.

    The model's clock follows the wall clock: simulated second t is served at
    `model.unix(t)`, so a model that was simulated up to some past time (a History)
    catches up to now when it starts serving, its counters going on from there.
    """

    def __init__(
        self,
        model: FleetModel,
        servers: list[tuple[Slot, MetricsServer]],
        truth: dict[str, Any],
        run: dict[str, Any],
    ) -> None:
        self.model = model
        self._lock = threading.Lock()
        self._t0 = time.monotonic()
        self._sim0 = (time.time() - model.epoch) * model.speed  # the model's now, on the wall
        self._servers: dict[tuple[str, int | None], MetricsServer] = {}
        self._ports: dict[tuple[str, int | None], int] = {}
        self._reopen: set[int] = set()
        self.targets: list[Target] = []
        for slot, server in servers:
            self._servers[(slot.kind, slot.replica)] = server
            self._ports[(slot.kind, slot.replica)] = server.port
            self.targets.append(make_target(model, slot, server.port))
        self.manifest = complete_manifest(model, truth, self.targets, **run)
        self._listener = Listener()
        self._stop = threading.Event()
        self._ticker = threading.Thread(target=self._tick, name="fleetsim-tick", daemon=True)
        self._serving = False

    def serve(self) -> None:
        """Catch the model up to now and answer scrapes; `continue_fleet` leaves this to the
        caller, once its history is written."""
        with self._lock:
            if self._serving or self._stop.is_set():
                return
            self.model.advance_to(self.sim_now())
            for replica in self.model.replicas:  # down or up as the history left them
                key = ("vllm", replica.index)
                if not replica.up and key in self._servers:
                    self._servers.pop(key).server_close()
            self.model.listeners.append(self._replica_changed)
            for server in self._servers.values():
                self._listener.add(server)
            self._serving = True
        self._listener.start()
        self._ticker.start()

    def stop(self) -> None:
        if self._stop.is_set():
            return
        self._stop.set()
        if self._serving:
            self._ticker.join(timeout=5)
        with self._lock:
            servers = list(self._servers.values())
            self._servers.clear()
        for server in servers:
            if self._serving:
                self._listener.remove(server)
            else:
                server.server_close()
        self._listener.stop()

    def __enter__(self) -> Fleet:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def sim_now(self) -> float:
        return self._sim0 + (time.monotonic() - self._t0) * self.model.speed

    def catch_up(self) -> None:
        with self._lock:
            self.model.advance_to(self.sim_now())
            for index in sorted(self._reopen):
                self._open_vllm(index)

    def _tick(self) -> None:
        while not self._stop.wait(TICK_S):
            self.catch_up()

    def _snapshot(self, build: Callable[[], list[Family]]) -> list[Family]:
        with self._lock:
            self.model.advance_to(self.sim_now())
            return build()

    def _replica_changed(self, replica: Replica) -> None:
        """Called under the lock while the model advances: open or close the vLLM port."""
        key = ("vllm", replica.index)
        if replica.up:
            self._reopen.add(replica.index)
            self._open_vllm(replica.index)
        elif key in self._servers:
            self._listener.remove(self._servers.pop(key))

    def _open_vllm(self, index: int) -> None:
        key = ("vllm", index)
        if key in self._servers or self._stop.is_set():
            self._reopen.discard(index)
            return
        try:
            server = MetricsServer(self._ports[key], self._vllm_render(index))
        except PortInUseError:
            return  # someone took the port meanwhile; the tick retries
        self._servers[key] = server
        self._reopen.discard(index)
        self._listener.add(server)

    def _vllm_render(self, index: int) -> Callable[[], tuple[bytes, str]]:
        return text_render(
            lambda: exposition(self._snapshot(lambda: self.model.vllm_families(index)))
        )


def start_fleet(
    *,
    replicas: int,
    scenario: str = "steady",
    at: float = 60.0,
    dialect: str = "current",
    dp: int = 1,
    seed: int = 0,
    base_port: int = 0,
    speed: float = 1.0,
    duration: float | None = None,
    targets: list[int] | None = None,
    dialect_of: Mapping[int, str] | None = None,
    hide: Mapping[int, Iterable[str]] | None = None,
) -> Fleet:
    """Serve a simulated fleet from background threads; see fleetsim.targets for ports.

    `dialect_of` gives some replicas another dialect than `dialect` ({1: "v0"}); `hide`
    builds some without families ({0: ("vllm:num_preemptions_total",)}).
    Raises ValueError (bad options, unknown scenario) or PortInUseError before
    anything is listening, so a failed start leaves nothing behind.
    """
    check_options(replicas=replicas, dialect=dialect, dp=dp, speed=speed, dialect_of=dialect_of)
    plan = port_plan(replicas, base_port)
    model = FleetModel(
        replicas=replicas,
        dialect=dialect,
        dialect_of=dialect_of,
        dp=dp,
        seed=seed,
        epoch=time.time(),
        speed=speed,
        hide=hide,
    )
    truth = install(model, scenario, at=at, duration=duration, targets=targets)
    run = {"replicas": replicas, "scenario": scenario, "at": at, "dialect": dialect,
           "dialect_of": {str(i): d for i, d in sorted((dialect_of or {}).items())}, "dp": dp,
           "seed": seed, "speed": speed, "hide": hidden_run(model)}  # fmt: skip
    fleet = _bind(model, plan, truth, run)
    fleet.serve()
    return fleet


def continue_fleet(history: History, *, base_port: int = 0) -> Fleet:
    """The fleet `history` simulates, bound to its ports but not yet serving: the history
    takes the fleet's targets (so its scrapes and the live ones are the same series), is
    written by the caller, then `Fleet.serve()` goes on from where it ended, with every
    counter carrying on. Raises PortInUseError before anything is listening."""
    model = history.model
    if model.speed != 1.0:
        raise ValueError("a history runs at speed 1")
    fleet = _bind(model, port_plan(len(model.replicas), base_port), history.truth, history.run)
    history.retarget(fleet.targets)
    fleet.manifest = history.manifest
    return fleet


def _bind(model: FleetModel, plan: list[Slot], truth: dict[str, Any], run: dict[str, Any]) -> Fleet:
    servers: list[tuple[Slot, MetricsServer]] = []
    fleet_ref: list[Fleet] = []
    try:
        for slot in plan:
            render = _render_for(slot, fleet_ref)
            servers.append((slot, MetricsServer(slot.port, render)))
    except PortInUseError:
        for _, server in servers:
            server.server_close()
        raise
    fleet = Fleet(model, servers, truth, run)
    fleet_ref.append(fleet)
    return fleet


def _render_for(slot: Slot, ref: list[Fleet]) -> Callable[[], tuple[bytes, str]]:
    """Renderers look the fleet up lazily: servers are bound before the fleet handle exists."""
    if slot.kind == "vllm":
        return lambda: ref[0]._vllm_render(slot.replica or 0)()
    if slot.kind == "dcgm":

        def dcgm() -> bytes:
            fams = ref[0]._snapshot(lambda: ref[0].model.dcgm_families(slot.replica or 0))
            return render_go_style(fams).encode("utf-8")

        return text_render(dcgm)
    if slot.kind == "gateway":
        return text_render(lambda: exposition(ref[0]._snapshot(ref[0].model.gateway_families)))
    return text_render(lambda: exposition(ref[0]._snapshot(ref[0].model.prober_families)))
