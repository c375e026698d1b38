"""What every check shares: the context it reads and the outcome it returns.

One function per node of `triage.walk.tree`: evidence in, verdict out.

A check looks only at its own evidence, over the replicas its parent found, against its
thresholds (`triage.walk.thresholds`); when that evidence is missing it says
"insufficient" with what is missing and never falls back on another node's numbers.
Where two leaves would claim the same replicas, the leaf that names the cause wins and
the other is ruled out as "explained by" it (a KV-bound queue also preempts; a restart
into another version is a version change, not a cold cache).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from triage.walk.evidence import Evidence, Stat
from triage.walk.specs import GPU_SPECS, POINT_SPECS, SERIES_SPECS
from triage.walk.thresholds import THRESHOLDS
from triage.walk.types import Change, Figure, Verdict

UNITS = {
    **{k: v[0] for k, v in POINT_SPECS.items()},
    **{k: v[0] for k, v in SERIES_SPECS.items()},
    **{k: v[0] for k, v in GPU_SPECS.items()},
    "nvlink": "bytes_per_second",
    "lora_waiting": "ratio",
}
TEXTS = {
    **{k: v[1] for k, v in POINT_SPECS.items()},
    **{k: v[1] for k, v in SERIES_SPECS.items()},
    **{k: v[1] for k, v in GPU_SPECS.items()},
    "nvlink": "NVLink bytes per second",
    "lora_waiting": "share of scrapes where vllm:lora_requests_info lists waiting adapters",
}


@dataclass(frozen=True)
class Outcome:
    verdict: Verdict
    reason: str
    figures: tuple[Figure, ...] = ()
    replicas: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    confidence: float = 0.0


@dataclass
class Context:
    ev: Evidence
    changes: tuple[Change, ...]
    window_text: str
    found: dict[str, Outcome] = field(default_factory=dict)

    def figure(
        self, name: str, instance: str, threshold: str = "", *, peers: bool = True
    ) -> Figure:
        stat = self.ev.stat(name, instance)
        metric = self.ev.sources.get(name, "")
        source = f"{TEXTS.get(name, name)}" + (f" ({metric})" if metric else "")
        return Figure(
            name=name,
            unit=UNITS.get(name, ""),
            value=stat.value,
            baseline=stat.baseline,
            peers=self.ev.peers(name, instance) if peers else None,
            threshold=THRESHOLDS[threshold].text() if threshold in THRESHOLDS else threshold,
            source=f"{source}, {self.window_text}, {self.ev.backend}",
            requests=self.ev.stat("requests", instance).value,
            replicas=(instance,),
            bound=stat.bound,
            day_before=stat.day_before,
        )

    def holds(self, node_id: str) -> bool:
        """The node is supported (fleet-level nodes name no replicas, so test this)."""
        found = self.found.get(node_id)
        return found is not None and found.verdict == "supported"

    def supported(self, node_id: str) -> tuple[str, ...]:
        found = self.found.get(node_id)
        return found.replicas if found is not None and found.verdict == "supported" else ()

    def needs(self, names: Iterable[str], instances: Iterable[str]) -> tuple[str, ...]:
        """What is missing among `names` for these replicas, each with its reason."""
        missing: list[str] = []
        for name in names:
            why = self.ev.missing.get(name)
            if why:
                missing.append(why)
                continue
            for instance in instances:
                if self.ev.stat(name, instance).value is None:
                    missing.append(f"{name}: no samples from {instance} in the window")
        return tuple(dict.fromkeys(missing))


def rise(stat: Stat) -> float | None:
    if stat.value is None or stat.baseline is None:
        return None
    return stat.value - stat.baseline


def daily_pattern(ctx: Context, name: str, key: str, replicas: Iterable[str]) -> str:
    """A note on the replicas whose rise does not hold against the same window a day
    earlier (a daily peak looks like a rise over the hour before), "" when none; the side
    stays supported against its baseline, with the note and less confidence."""
    threshold, ev = THRESHOLDS[key], ctx.ev
    same = [
        i
        for i in replicas
        if (day := ev.stat(name, i).day_before) is not None
        and not threshold.holds(ev.stat(name, i).value, day)
    ]
    if not same:
        return ""
    return (
        f"; on {', '.join(same)} {name} was about as high over the same window a day earlier "
        "(a daily pattern?)"
    )


def confidence_past(value: float | None, reference: float | None, ratio: float) -> float:
    """0.5 at the threshold, towards 1 as the evidence sits further past it."""
    if value is None or reference is None or ratio <= 0:
        return 0.5
    past = value / max(reference * ratio, 1e-12)
    return max(0.5, min(0.99, 0.5 + 0.25 * (past - 1)))


def pick(ctx: Context, instances: Iterable[str], test: Callable[[str], bool]) -> list[str]:
    return sorted(i for i in instances if test(i))


# Causes that slow every phase on the replicas they touch, and the leaf that names each.
SYSTEMIC = ("tpot.collective", "tpot.straggler.gpu_throttle")


def explained_elsewhere(ctx: Context, replicas: Iterable[str]) -> str:
    """The leaf that already explains a TTFT rise on every one of these replicas: a failing
    link or a throttled GPU on the replica itself, or a peer serving the same model down
    (its traffic moved to them). "" when none does."""
    wanted = set(replicas)
    if not wanted:
        return ""
    for leaf in SYSTEMIC:
        if wanted <= set(ctx.supported(leaf)):
            return leaf
    down = set(ctx.supported("availability.replica_down"))
    down_models = {ctx.ev.models.get(i) for i in down}
    if down and all(ctx.ev.models.get(i) in down_models for i in wanted - down):
        return "availability.replica_down"
    return ""
