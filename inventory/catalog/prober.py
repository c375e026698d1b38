"""Catalog data: FleetScope's golden-set prober (fleetsim/README.md, "FleetScope's gateway
convention", prober table). The prober sends one known prompt per model through the
gateway every period; its failed checks are the quality signal that latency and error
rates cannot show (a bad model artifact answers wrongly at full speed).
"""

from __future__ import annotations

from inventory.catalog.model import CatalogEntry, entry

# fmt: off
ENTRIES: tuple[CatalogEntry, ...] = (
    entry("prober_checks", "fleetscope_prober_checks_total", source_kind="prober",
          type="counter", unit="events", category="quality", labels=("model_name", "result"),
          meaning="golden-set checks by model and result (pass, fail): answer quality as served"),
)
# fmt: on
