"""The demo fleet's blind-spot audit, so its page shows what an audit finds: FleetScope's
own SLO rules (`slo_rules`), and an example Grafana dashboard of the kind teams keep after
an upgrade, still reading a name vLLM renamed in 0.9.2 and one V1 removed. Audited at every
start against what the freshly simulated fleet exposes."""

from __future__ import annotations

import json

from blindspots import audit_fleet, sources_upload
from blindspots.models import AuditSource
from inventory.models import EndpointInventory, Fleet
from slo.rules import slo_rules_yaml

DEMO_DASHBOARD_NAME = "example-vllm-dashboard.json"
DEMO_RULES_NAME = "fleetscope-slo-rules.yml"
# The address the SLO rules' dashboard links carry when no setting names FleetScope's own.
DEMO_DASHBOARD_URL = "http://localhost:8000"

_PANELS = (
    ("KV cache usage", "max by (instance) (vllm:kv_cache_usage_perc)"),
    ("KV cache usage (before the 0.9.2 rename)", "max by (instance) (vllm:gpu_cache_usage_perc)"),
    (
        "TTFT p99",
        "histogram_quantile(0.99, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket[5m])))",
    ),
    ("Swapped requests (V0 only)", "sum(vllm:num_requests_swapped)"),
)


def demo_dashboard_json() -> bytes:
    """A small Grafana dashboard: one panel per query above, on a Prometheus datasource."""
    panels = [
        {
            "id": number,
            "type": "timeseries",
            "title": title,
            "datasource": {"type": "prometheus", "uid": "prometheus"},
            "targets": [{"refId": "A", "expr": expr}],
        }
        for number, (title, expr) in enumerate(_PANELS, 1)
    ]
    dashboard = {"title": "vLLM serving (example, demo)", "uid": "demo-vllm", "panels": panels}
    return json.dumps(dashboard, indent=2).encode()


def demo_audit_seed(fleet: Fleet) -> None:
    """Store the two sources once and audit them; at a later start, audit them again. The
    audit reads the fleet's inventory, so without one (no history yet) it waits."""
    if not EndpointInventory.objects.filter(endpoint__fleet=fleet).exists():
        return
    if AuditSource.objects.filter(fleet=fleet).exists():
        audit_fleet(fleet)
        return
    files = [(DEMO_DASHBOARD_NAME, demo_dashboard_json())]
    if fleet.slos.exists():
        rules = slo_rules_yaml(fleet, dashboard_base_url=DEMO_DASHBOARD_URL)
        files.append((DEMO_RULES_NAME, rules.encode()))
    sources_upload(fleet, files)
