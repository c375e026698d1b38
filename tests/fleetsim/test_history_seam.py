"""A history, then the same model served live: every counter goes on from the history's
last sample, with no reset at the seam (what `make demo` relies on)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from fleetsim.api import continue_fleet
from fleetsim.history import History

SCRAPE_LABELS = {"instance", "job", "node", "namespace", "pod"}
COUNTER_SUFFIXES = ("_total", "_bucket", "_count", "_sum")  # and DCGM's bare counter names

# instance, sample name (without _total: the text parser adds it to DCGM's), own labels
Key = tuple[str, str, tuple[tuple[str, str], ...]]
LINE = re.compile(r"([^{\s]+)\{(.*)\} (\S+) (\S+)$")
LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')


def counters_of_history(path: Path) -> dict[Key, tuple[float, float]]:
    """The last (time, value) of every counter series of the history, per instance."""
    types: dict[str, str] = {}
    last: dict[Key, tuple[float, float]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# TYPE "):
            _, _, name, type_ = line.split(" ")
            types[name] = type_
            continue
        match = LINE.match(line)
        if match is None:
            continue
        name, labels_text, value, ts = match.groups()
        family = next((name[: -len(s)] for s in COUNTER_SUFFIXES if name.endswith(s)), name)
        if types.get(family, types.get(name)) not in ("counter", "histogram"):
            continue
        labels = dict(LABEL.findall(labels_text))
        own = tuple(sorted((k, v) for k, v in labels.items() if k not in SCRAPE_LABELS))
        key = (labels["instance"], name.removesuffix("_total"), own)
        if key not in last or float(ts) >= last[key][0]:
            last[key] = (float(ts), float(value))
    return last


def counters_served(url: str, instance: str) -> dict[Key, float]:
    text = httpx.get(url, timeout=10).text
    out: dict[Key, float] = {}
    for fam in text_string_to_metric_families(text):
        if fam.type not in ("counter", "histogram"):
            continue
        for s in fam.samples:
            if not s.name.endswith("_created"):
                own = tuple(sorted((k, v) for k, v in s.labels.items() if k not in SCRAPE_LABELS))
                out[(instance, s.name.removesuffix("_total"), own)] = s.value
    return out


def test_live_serving_continues_every_counter_of_the_history(tmp_path: Path) -> None:
    history = History(replicas=2, scenario="kv-pressure", hours=0.05, step=15.0, at=60.0, seed=3)
    fleet = continue_fleet(history)
    with fleet:
        out = tmp_path / "history.om"
        history.write_openmetrics(out, steps=5)
        history.write_openmetrics(out)  # the rest, as the demo writes it: in parts
        assert history.done
        before = counters_of_history(out)
        assert {key[0] for key in before} == {t.instance for t in fleet.targets}
        time.sleep(1.0)  # some wall-clock time passes between the history's end and serving
        fleet.serve()
        assert fleet.model.now >= history.steps * history.step
        live: dict[Key, float] = {}
        for target in fleet.targets:
            live |= counters_served(target.url, target.instance)
    missing = sorted(set(before) - set(live))
    assert not missing, missing[:5]
    decreased = {k: (before[k][1], live[k]) for k in before if live[k] < before[k][1]}
    assert not decreased, list(decreased.items())[:5]
    requests = [k for k in before if k[1] == "vllm:request_success"]
    assert requests and sum(live[k] for k in requests) > sum(before[k][1] for k in requests)
