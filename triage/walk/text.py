"""A walk as text for a terminal: the breach, then the tree with a mark per verdict and
the numbers each node used, then what changed and the workload shifts."""

from __future__ import annotations

from typing import Any

MARKS = {"supported": "[+]", "ruled_out": "[-]", "insufficient": "[?]"}


def _number(value: Any, unit: str) -> str:
    if value is None:
        return "n/a"
    if unit == "ratio":
        return f"{value:.3g}"
    return f"{value:.4g} {unit}".strip()


def _figure(f: dict[str, Any]) -> str:
    parts = [f"{f['name']} = {_number(f['value'], f['unit'])}"]
    if f.get("bound"):
        parts.append(f"({f['bound']})")
    if f.get("baseline") is not None:
        parts.append(f"baseline {_number(f['baseline'], f['unit'])}")
    if f.get("day_before") is not None:
        parts.append(f"a day earlier {_number(f['day_before'], f['unit'])}")
    if f.get("peers") is not None:
        parts.append(f"peers {_number(f['peers'], f['unit'])}")
    if f.get("threshold"):
        parts.append(f"threshold {f['threshold']}")
    if f.get("replicas"):
        parts.append(f"on {', '.join(f['replicas'])}")
    return " ".join(parts)


def walk_text(walk: dict[str, Any], *, figures: bool = True) -> str:
    """`walk` is `Walk.to_dict()` (also what an incident froze)."""
    lines = [
        f"fleet {walk['fleet']}"
        + (f", model {walk['model_name']}" if walk["model_name"] else "")
        + f" ({walk['backend']})",
        f"window   {walk['window']['start']} .. {walk['window']['end']} (UTC)",
        f"baseline {walk['baseline']['start']} .. {walk['baseline']['end']} (UTC)",
    ]
    day = walk.get("day_before")
    if day:
        lines.append(f"day before {day['start']} .. {day['end']} (UTC)")
    breach = walk["breach"]
    lines.append(
        f"breach: {breach['side']}"
        + (f" since {breach['since']}" if breach["since"] else "")
        + f" - {breach['description']}"
    )
    depth = {n["id"]: n["id"].count(".") for n in walk["nodes"]}
    for node in walk["nodes"]:
        pad = "  " * (depth[node["id"]] + 1)
        mark = MARKS[node["verdict"]]
        extra = f" [{', '.join(node['replicas'])}]" if node["replicas"] else ""
        lines.append(f"{pad}{mark} {node['id']}: {node['reason']}{extra}")
        for missing in node["missing"]:
            lines.append(f"{pad}    needs: {missing}")
        if figures and node["verdict"] == "supported":
            lines.extend(f"{pad}    {_figure(f)}" for f in node["figures"][:6])
        if node["leaf"] and node["verdict"] == "supported" and node["runbook"]:
            lines.append(f"{pad}    runbook: /incidents/runbooks/{node['runbook']}/")
    lines.append("supported: " + (", ".join(walk["supported"]) or "none"))
    if walk["changes"]:
        lines.append("what changed:")
        lines.extend(
            f"  {c['at'] or '?'} {c['kind']} {c['instance']}: {c['description']}"
            for c in walk["changes"]
        )
    if walk["workload"]:
        lines.append("workload shifts:")
        lines.extend(f"  {_figure(f)}" for f in walk["workload"])
    canary = walk.get("canary")
    if canary:
        lines.append("canary plan (never applied by FleetScope):")
        lines.extend(f"  {line}" for line in str(canary.get("text", "")).splitlines())
    lines.extend(f"note: {n}" for n in walk["notes"])
    return "\n".join(lines)
