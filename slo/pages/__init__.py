"""What the SLO pages show: request parsing, selectors and the wording of every figure.

Every figure keeps its precision in words: an exact value reads "99.31%", an interval
"99.10–99.40%" (with the reason as its title), and a missing one says "unavailable" or
"no data", never 0. Views and templates only place what this package returns.

    params      the query string: ?backend=, ?at=
    selectors   the SLOs and statuses a page reads
    formatting  Shown, and the text of percentages, numbers, targets, spans
    rows        the list page's rows
    detail      one SLO's page: objectives, burn rules, replicas, goodput, charts
"""

from __future__ import annotations

from slo.evaluation import duration_text
from slo.pages.detail import (
    ReplicaShown,
    burn_rows_shown,
    detail_objectives,
    exhaustion_text,
    goodput_view,
    replicas_shown,
    worst_objective_label,
)
from slo.pages.formatting import (
    attainment_shown,
    budget_shown,
    burn_shown,
    goodput_rate_shown,
    objective_title,
    percent,
    selector_text,
    state_shown,
    utc_text,
)
from slo.pages.params import ParameterError, at_parse, backend_parse, params_parse
from slo.pages.rows import slo_rows, window_shown, worst_alert
from slo.pages.selectors import (
    LATENCY_CHART_SPAN,
    fleets_visible,
    slo_get,
    slo_status_get,
    slo_status_list,
)

__all__ = [
    "LATENCY_CHART_SPAN",
    "ParameterError",
    "ReplicaShown",
    "at_parse",
    "attainment_shown",
    "backend_parse",
    "budget_shown",
    "burn_rows_shown",
    "burn_shown",
    "detail_objectives",
    "duration_text",
    "exhaustion_text",
    "fleets_visible",
    "goodput_rate_shown",
    "goodput_view",
    "objective_title",
    "params_parse",
    "percent",
    "replicas_shown",
    "selector_text",
    "slo_get",
    "slo_rows",
    "slo_status_get",
    "slo_status_list",
    "state_shown",
    "utc_text",
    "window_shown",
    "worst_alert",
    "worst_objective_label",
]
