"""The evidence pack of an incident (for the postmortem) and the views of a stored walk.

`evidence_pack` reads the incident once into plain dicts; everything else is a pure
function over those dicts and over stored walks (`Walk.to_dict()`), so a walk frozen a year
ago renders exactly as the pages show it today."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from fleetscope.lib.utc import utc_iso, utc_text_of_iso
from triage.models import Incident

# verdict -> (words, badge class): the one place the walk's verdicts get their look.
VERDICTS: dict[str, tuple[str, str]] = {
    "supported": ("supported: cause found", "verdict-supported"),
    "ruled_out": ("ruled out", "verdict-ruled-out"),
    "insufficient": ("insufficient evidence", "verdict-insufficient"),
}
FIGURE_COLUMNS = (
    "value", "baseline", "day_before", "peers", "threshold", "source", "requests", "replicas",
    "bound",
)  # fmt: skip
NOTHING_APPLIED = "Nothing is applied by FleetScope: this plan is for a person to run."
MISSING = "—"


def number_text(value: Any, unit: str = "") -> str:
    """`0.4213 s`; the dash for a value the walk did not have (missing is not zero)."""
    if value is None:
        return MISSING
    if isinstance(value, int | float) and not isinstance(value, bool):
        text = f"{value:.4g}"
        return f"{text} {unit}".strip() if unit and unit not in ("count", "ratio") else text
    return str(value)


def figure_row(figure: Mapping[str, Any]) -> dict[str, str]:
    """A figure's cells as text, one per FIGURE_COLUMNS entry, plus its name and unit."""
    unit = str(figure.get("unit", ""))
    return {
        "name": str(figure.get("name", "")),
        "unit": unit,
        "value": number_text(figure.get("value"), unit),
        "baseline": number_text(figure.get("baseline"), unit),
        "day_before": number_text(figure.get("day_before"), unit),
        "peers": number_text(figure.get("peers"), unit),
        "threshold": str(figure.get("threshold") or MISSING),
        "source": str(figure.get("source") or MISSING),
        "requests": number_text(figure.get("requests")),
        "replicas": ", ".join(figure.get("replicas") or ()) or MISSING,
        "bound": str(figure.get("bound") or ""),
    }


@dataclass
class TreeNode:
    node: Mapping[str, Any]
    children: list[TreeNode] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        return VERDICTS.get(str(self.node.get("verdict")), (str(self.node.get("verdict")), ""))[0]

    @property
    def verdict_class(self) -> str:
        return VERDICTS.get(str(self.node.get("verdict")), ("", "verdict-unknown"))[1]

    @property
    def figures(self) -> list[dict[str, str]]:
        return [figure_row(f) for f in self.node.get("figures") or ()]


def walk_tree(walk: Mapping[str, Any]) -> list[TreeNode]:
    """The walk's nodes nested by `parent`, in walk order; a node whose parent is not in the
    walk is a root, so nothing the walk recorded is dropped."""
    nodes = [TreeNode(node) for node in walk.get("nodes") or ()]
    by_id = {str(n.node.get("id")): n for n in nodes}
    roots = []
    for tree_node in nodes:
        parent = by_id.get(str(tree_node.node.get("parent") or ""))
        if parent is None or parent is tree_node:
            roots.append(tree_node)
        else:
            parent.children.append(tree_node)
    return roots


def _md(text: Any) -> str:
    """Free text made inert in Markdown (a pasted pack must not carry HTML) and safe in a
    table cell."""
    return (
        str(text)
        .replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace("|", "\\|")
        .replace("\n", " ")
    )


def _figures_markdown(figures: Iterable[Mapping[str, Any]], indent: str) -> list[str]:
    rows = [figure_row(f) for f in figures]
    if not rows:
        return []
    # A walk that did not read the day before has no column of dashes for it.
    columns = [c for c in FIGURE_COLUMNS if c != "day_before" or any(r[c] != MISSING for r in rows)]
    head = ["figure", *columns]
    lines = ["", indent + "| " + " | ".join(head) + " |", indent + "|" + "---|" * len(head)]
    for row in rows:
        cells = [row["name"], *(row[c] for c in columns)]
        lines.append(indent + "| " + " | ".join(_md(c) for c in cells) + " |")
    return [*lines, ""]


def _tree_markdown(nodes: list[TreeNode], depth: int = 0) -> list[str]:
    lines = []
    for tree_node in nodes:
        node, indent = tree_node.node, "  " * depth
        lines.append(
            f"{indent}- **{_md(node.get('id'))}** ({tree_node.verdict}): "
            f"{_md(node.get('question', ''))} {_md(node.get('reason', ''))}".rstrip()
        )
        if node.get("missing"):
            lines.append(f"{indent}  - missing: {_md('; '.join(node['missing']))}")
        lines.extend(_figures_markdown(node.get("figures") or (), indent + "  "))
        lines.extend(_tree_markdown(tree_node.children, depth + 1))
    return lines


def canary_markdown(canary: Mapping[str, Any] | None) -> list[str]:
    """The plan as its own text and YAML, each in a fence: verbatim (thresholds such as
    `<= 0.025 s` stay as written) and never read as Markdown."""
    if not canary:
        return ["No canary suggested."]
    lines = [NOTHING_APPLIED]
    for label, key in (("text", "text"), ("yaml", "yaml")):
        body = str(canary.get(key) or "").rstrip()
        if body:
            # A fence longer than any backtick run inside keeps the body verbatim.
            fence = "`" * max(3, _longest_backtick_run(body) + 1)
            lines.extend(["", fence + label, body, fence])
    return lines


def _longest_backtick_run(text: str) -> int:
    longest = current = 0
    for char in text:
        current = current + 1 if char == "`" else 0
        longest = max(longest, current)
    return longest


def walk_markdown(walk: Mapping[str, Any]) -> str:
    """One stored walk as Markdown: breach, window, the tree with its figures, changes and
    the canary plan."""
    breach = walk.get("breach") or {}
    breach_text = _md(breach.get("description", "").rstrip("."))  # a reason may end in "."
    window = walk.get("window") or {}
    baseline = walk.get("baseline") or {}
    lines = [
        f"Fleet {_md(walk.get('fleet'))}, model {_md(walk.get('model_name') or 'all')}, "
        f"backend {_md(walk.get('backend'))}, {walk.get('queries', 0)} queries.",
        f"Window {utc_text_of_iso(window.get('start'))} to {utc_text_of_iso(window.get('end'))}; "
        f"baseline {utc_text_of_iso(baseline.get('start'))} to "
        f"{utc_text_of_iso(baseline.get('end'))}"
        + (
            f"; the same window a day earlier {utc_text_of_iso(day['start'])} to "
            f"{utc_text_of_iso(day['end'])}."
            if (day := walk.get("day_before"))
            else "."
        ),
        "",
        f"Breach ({_md(breach.get('side', 'none'))}): {breach_text}"
        + (f", since {utc_text_of_iso(breach['since'])}." if breach.get("since") else "."),
        *_figures_markdown(breach.get("figures") or (), ""),
        "",
        "Supported: " + (", ".join(_md(s) for s in walk.get("supported") or ()) or "none"),
        "",
        *_tree_markdown(walk_tree(walk)),
        "",
        "Changes:",
        *(
            [
                f"- {utc_text_of_iso(c.get('at')) or 'time unknown'} {_md(c.get('kind'))} "
                f"{_md(c.get('instance'))}: {_md(c.get('description'))}"
                for c in walk.get("changes") or ()
            ]
            or ["- none seen"]
        ),  # fmt: skip
        "",
        "Canary:",
        "",
        *canary_markdown(walk.get("canary")),
    ]
    if walk.get("notes"):
        lines.extend(["", "Notes:", *(f"- {_md(n)}" for n in walk["notes"])])
    charts = [str(c.get("name")) for c in walk.get("charts") or ()]
    if charts:
        lines.extend(
            ["", f"Charts frozen with this walk (their series are in evidence.json): "
             f"{_md(', '.join(charts))}."]
        )  # fmt: skip
    return "\n".join(lines)


def evidence_pack(incident: Incident) -> dict[str, Any]:
    """The incident, its timeline and every stored walk, as plain data (UTC ISO times)."""

    def iso(moment: Any) -> str | None:
        return utc_iso(moment) if moment is not None else None

    return {
        "incident": {
            "id": incident.pk,
            "title": incident.title,
            "fleet": incident.fleet.slug,
            "slo": incident.slo.slug if incident.slo else None,
            "status": incident.status,
            "severity": incident.severity,
            "owner": incident.owner,
            "runbook": incident.runbook.slug if incident.runbook else None,
            "source": incident.source,
            "opened_at": iso(incident.opened_at),
            "started_at": iso(incident.started_at),
            "resolved_at": iso(incident.resolved_at),
            "alert_fingerprint": incident.alert_fingerprint,
            "alert_labels": incident.alert_labels,
            "alert_annotations": incident.alert_annotations,
        },
        "timeline": [
            {"at": iso(e.at), "kind": e.kind, "author": e.author, "text": e.text}
            for e in incident.events.all()
        ],
        "walks": [
            {"id": w.pk, "created_at": iso(w.created_at), "walk": w.walk}
            for w in incident.walks.all()
        ],
    }


def evidence_markdown(pack: Mapping[str, Any]) -> str:
    incident = pack["incident"]

    def when(iso: str | None) -> str:
        return utc_text_of_iso(iso) or MISSING

    lines = [
        f"# Incident #{incident['id']}: {_md(incident['title'])}",
        "",
        "All times UTC.",
        "",
        f"- fleet: {_md(incident['fleet'])}",
        f"- SLO: {_md(incident['slo'] or MISSING)}",
        f"- status: {incident['status']}; severity: {incident['severity']}",
        f"- owner: {_md(incident['owner'] or MISSING)}",
        f"- runbook: {_md(incident['runbook'] or MISSING)}",
        f"- source: {incident['source']}",
        f"- breach started: {when(incident['started_at'])}",
        f"- opened: {when(incident['opened_at'])}; resolved: {when(incident['resolved_at'])}",
    ]
    if incident["alert_labels"]:
        labels = ", ".join(f"{k}={v}" for k, v in sorted(incident["alert_labels"].items()))
        lines.append(f"- alert labels: {_md(labels)}")
    lines.extend(["", "## Timeline", ""])
    for event in pack["timeline"]:
        by = f" ({_md(event['author'])})" if event["author"] else ""
        lines.append(f"- {when(event['at'])} {event['kind']}{by}: {_md(event['text'])}")
    for stored in pack["walks"]:
        lines.extend(["", f"## Walk {stored['id']}, {when(stored['created_at'])}", ""])
        lines.append(walk_markdown(stored["walk"]))
    if not pack["walks"]:
        lines.extend(["", "No walk stored."])
    return "\n".join(lines) + "\n"
