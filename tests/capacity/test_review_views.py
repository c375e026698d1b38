"""The capacity review pages on a fleet fleetsim recorded: one section per served model
with its answer first, every input with its origin, the ledgers, and JSON with units in
its keys."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from capacity.measured import fleet_measurements
from capacity.models import CapacityPlan, ModelProfile
from inventory.models import Fleet

pytestmark = pytest.mark.django_db

SMALL, LARGE = "llama-3.1-8b-instruct", "llama-3.1-70b-instruct"


def page(client: Client, path: str) -> str:
    response = client.get(path)
    assert response.status_code == 200, response.content[:2000]
    return response.content.decode()


def section(html: str, model: str) -> str:
    """The HTML of one model's section."""
    start = html.index(f'data-model="{model}"')
    end = html.find('<section class="panel model-review"', start)
    return html[start : end if end > 0 else len(html)]


def replica_figures(review: dict[str, Any]) -> dict[str, float]:
    """The replica ledger's figures by key, from the page's JSON."""
    ledger = next(x for x in review["ledgers"] if x["name"] == "replicas")
    return {
        key: line[key]
        for line in ledger["lines"]
        for key in line
        if key.endswith(("_per_second", "_fraction", "_replicas"))
    }


def test_the_fleet_page_shows_each_models_replicas_and_n_plus_one_verdicts(
    owner_client: Client, sim_fleet: Fleet
) -> None:
    # The simulated traffic follows the time of day, so the measured peak (and R_total)
    # is read from the JSON and checked against the formula, not hard-coded.
    html = page(owner_client, "/capacity/sim/")
    data = owner_client.get("/capacity/sim.json").json()
    r_totals = {}
    for model in data["models"]:
        review = model["review"]
        figures = replica_figures(review)
        lam = figures["lambda_peak_requests_per_second"]
        mu, rho = figures["mu_good_requests_per_second"], figures["rho_target_fraction"]
        r_total = review["r_total_replicas"]
        assert r_total == math.ceil(lam / (mu * rho) - 1e-9) + 1  # one replica of reserve
        r_totals[model["model_name"]] = r_total
        one = section(html, model["model_name"])
        assert "Replicas required (R_total)" in one
        assert f'class="r-total-value">{r_total}<' in one
        assert "N+1 on the requirement: PASS" in one
        assert f"With one replica lost at peak the other {r_total - 1} run" in one
        assert "target: PASS, margin" in one
        assert "N+1 on the current" in one
        for ledger in ("weights", "kv", "cache config", "replicas"):
            assert f'data-ledger="{ledger}"' in one
        assert "Sensitivity" in one and "What would flip the design" in one
        assert "Sanity checks" in one and "Thresholds" in one
    assert set(r_totals) == {SMALL, LARGE}
    small = section(html, SMALL)
    assert "With one replica lost at peak the other 1 runs at" in small  # 2 serving now
    short = r_totals[SMALL] - 2
    if short > 0:
        assert f"The fleet runs 2 replicas now: {short} short of the requirement." in small


def test_the_fleet_page_shows_the_kv_tokens_vllm_reports_in_its_cache_config(
    owner_client: Client, sim_fleet: Fleet
) -> None:
    html = page(owner_client, "/capacity/sim/")
    for model in (SMALL, LARGE):
        config = fleet_measurements(sim_fleet, model_name=model, backend="local").cache_config
        assert config is not None
        one = section(html, model)
        assert f"{config.kv_tokens:,}" in one
        assert "vllm:cache_config_info on " in one
        assert "KV tokens the fleet has" in one and "KV tokens the ledger expects" in one


def test_example_gpu_profiles_and_prices_are_labelled_example(
    owner_client: Client, sim_fleet: Fleet
) -> None:
    html = page(owner_client, "/capacity/sim/")
    one = section(html, SMALL)
    assert "example GPU profile" in one
    assert '<span class="origin origin-example">example</span>' in one
    assert "example price, replace with your own" in one
    assert "(an example: replace it)" in one


def test_a_plan_without_mu_good_shows_needs_measurement_with_the_reason_never_zero(
    owner_client: Client, sim_fleet: Fleet
) -> None:
    CapacityPlan.objects.filter(model_name=SMALL).update(mu_good_requests_per_second=None)
    html = page(owner_client, "/capacity/sim/")
    one = section(html, SMALL)
    start = one.index('data-key="mu_good_requests_per_second"')
    row = one[start : one.index("</tr>", start)]
    assert "needs measurement" in row
    assert "SLO chat:" in row  # the reason the SLO app gives
    assert ">0<" not in row and "0 requests/s" not in row
    assert "R_total" in one and 'r-total-value missing">needs measurement<' in one
    assert "N+1: needs measurement" in one
    # The other model keeps its answer.
    assert "N+1 on the requirement: PASS" in section(html, LARGE)


def test_a_served_model_without_a_plan_shows_its_measured_inputs_and_what_is_missing(
    owner_client: Client, sim_fleet: Fleet
) -> None:
    CapacityPlan.objects.filter(model_name=LARGE).delete()
    html = page(owner_client, "/capacity/sim/")
    one = section(html, LARGE)
    assert "No capacity plan: pick a model profile and a GPU profile in the admin." in one
    assert "/admin/capacity/capacityplan/add/" in one
    assert "/capacity/profiles/new/" in one
    assert "Measured inputs" in one
    assert 'data-key="lambda_peak_requests_per_second"' in one
    assert 'data-key="kv_cache_tokens_per_replica"' in one
    assert "R_total)" not in one


def test_a_plan_the_formulas_refuse_is_a_notice_naming_the_field(
    owner_client: Client, sim_fleet: Fleet
) -> None:
    profile = ModelProfile.objects.get(name="Llama-3.1-70B-Instruct")
    profile.config = {**profile.config, "kv_lora_rank": 512}
    profile.save()
    html = page(owner_client, "/capacity/sim/")
    one = section(html, LARGE)
    assert "The formulas refuse this plan." in one
    assert "kv_lora_rank: multi-head latent attention" in one
    assert "N+1 on the requirement: PASS" in section(html, SMALL)


def test_model_picks_one_section(owner_client: Client, sim_fleet: Fleet) -> None:
    html = page(owner_client, f"/capacity/sim/?model={LARGE}")
    assert f'data-model="{LARGE}"' in html and f'data-model="{SMALL}"' not in html


def units_in_keys(found: dict[str, Any]) -> None:
    """A quantity dict names its unit: a key beyond unit/origin/source/note is the figure."""
    figure_keys = [k for k in found if k not in ("unit", "origin", "source", "note")]
    assert figure_keys, found
    assert found["unit"], found


def test_the_json_has_units_in_its_keys_and_round_trips(
    owner_client: Client, sim_fleet: Fleet
) -> None:
    response = owner_client.get("/capacity/sim.json")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    text = response.content.decode()
    assert "NaN" not in text and "Infinity" not in text
    data = json.loads(text)
    assert json.loads(json.dumps(data, allow_nan=False)) == data
    assert data["fleet"] == "sim" and data["backend"] == "local"
    assert "embedded store" in data["window"]
    models = {m["model_name"]: m for m in data["models"]}
    assert set(models) == {SMALL, LARGE}
    small = models[SMALL]
    assert small["plan"]["rho_target_fraction"] == 0.7
    assert small["plan"]["gpu_profile_example"] is True
    assert small["plan"]["gpu_price_origin"] == "example"
    assert small["problem"] == ""
    measured = small["measured"]
    for found in measured.values():
        units_in_keys(found)
    assert measured["lambda_peak_requests_per_second"]["origin"] == "measured"
    assert measured["kv_cache_tokens_per_replica"]["kv_cache_tokens_per_replica"] > 0
    review = small["review"]
    figures = replica_figures(review)
    assert review["r_total_replicas"] == math.ceil(
        figures["lambda_peak_requests_per_second"]
        / (figures["mu_good_requests_per_second"] * figures["rho_target_fraction"])
        - 1e-9
    ) + int(figures["failure_reserve_replicas"])
    ledgers = {ledger["name"]: ledger for ledger in review["ledgers"]}
    weights = {ln.get("label"): ln for ln in ledgers["weights"]["lines"]}
    whole = weights["weights, whole model"]
    assert whole["unit"] == "bytes" and "weights_gib" in whole
    assert len(review["sensitivity"]) == 3
    assert {t["unit"] for t in review["thresholds"]} == {"fraction"}


def test_the_json_of_a_model_without_a_plan_says_so(owner_client: Client, sim_fleet: Fleet) -> None:
    CapacityPlan.objects.filter(model_name=LARGE).delete()
    data = json.loads(owner_client.get(f"/capacity/sim.json?model={LARGE}").content)
    (model,) = data["models"]
    assert model["plan"] is None and model["review"] is None
    assert model["problem"] == "no capacity plan for this model yet"
    assert model["measured"]["current_replicas"]["current_replicas"] == 1.0


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("?backend=bogus", "backend must be one of local, prometheus, not &#x27;bogus&#x27;"),
        ("?model=gpt-9", "model &#x27;gpt-9&#x27; is not served by fleet sim"),
    ],
)
def test_a_bad_parameter_is_a_400_with_one_message(
    owner_client: Client, sim_fleet: Fleet, query: str, message: str
) -> None:
    response = owner_client.get(f"/capacity/sim/{query}")
    assert response.status_code == 400
    html = response.content.decode()
    assert message in html and html.count('id="error-message"') == 1
    assert "model-review" not in html
    response = owner_client.get(f"/capacity/sim.json{query}")
    assert response.status_code == 400
    assert set(response.json()) == {"error"}


def test_a_fleet_the_viewer_may_not_see_is_refused_like_on_other_pages(
    client: Client, owner_client: Client, sim_fleet: Fleet
) -> None:
    for path in ("/capacity/", "/capacity/sim/", "/capacity/sim.json", "/capacity/profiles/new/"):
        response = client.get(path)
        assert response.status_code == 302 and "/login/" in response["Location"], path
    inactive = User.objects.create_user("gone", password="gone-password-1", is_active=False)
    client.force_login(inactive)
    assert client.get("/capacity/sim/").status_code == 302
    for path in ("/capacity/nope/", "/capacity/nope.json"):
        assert owner_client.get(path).status_code == 404, path


def test_the_index_lists_fleets_plans_and_profiles_with_examples_labelled(
    owner_client: Client, sim_fleet: Fleet
) -> None:
    html = page(owner_client, "/capacity/")
    assert 'href="/capacity/sim/"' in html
    assert f"/capacity/sim/?model={SMALL}" in html
    assert "Llama-3.1-8B-Instruct on H100-80GB" in html
    assert '<span class="origin origin-example">example</span>' in html
    assert 'aria-current="page">Capacity<' in html


def test_label_values_and_profile_names_are_escaped(owner_client: Client, sim_fleet: Fleet) -> None:
    evil = '<script>alert("x")</script>'
    ModelProfile.objects.filter(name="Llama-3.1-8B-Instruct").update(name=evil)
    planned = CapacityPlan.objects.first()
    assert planned is not None  # the fixture made plans
    CapacityPlan.objects.create(
        fleet=sim_fleet, model_name=evil, model_profile=ModelProfile.objects.get(name=evil),
        gpu_profile=planned.gpu_profile, rho_target=0.7,
    )  # fmt: skip
    for path in ("/capacity/", "/capacity/sim/"):
        html = page(owner_client, path)
        assert evil not in html, path
        assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html, path
    data = owner_client.get("/capacity/sim.json").json()
    assert evil in {m["model_name"] for m in data["models"]}


def test_a_fleet_serving_nothing_yet_says_so(owner_client: Client) -> None:
    Fleet.objects.create(slug="empty", name="Empty")
    html = page(owner_client, "/capacity/empty/")
    assert "Empty serves no model yet." in html
    data = owner_client.get("/capacity/empty.json").json()
    assert data == {"fleet": "empty", "backend": "local", "window": None, "models": []}
